//! Test support shared by the CLI's tests: a `vouch serve` child process.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

pub const VOUCH: &str = env!("CARGO_BIN_EXE_vouch");

/// A `vouch serve` child process, killed on drop.
pub struct Server {
    child: Child,
    pub url: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `vouch serve` over `data` for client alice (token `secret-token`) on a free loopback port,
/// with `extra` flags; returns once it printed the URL it listens on.
pub fn serve(data: &Path, extra: &[&str]) -> Server {
    let mut child = Command::new(VOUCH)
        .args(["serve", "--listen", "127.0.0.1:0", "--client", "alice=secret-token"])
        .arg("--data")
        .arg(data)
        .args(extra)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let url = loop {
        let line = lines.next().expect("serve printed its address").unwrap();
        if let Some(rest) = line.split("listening on ").nth(1) {
            break rest.split_whitespace().next().unwrap().to_string();
        }
    };
    // Keep draining stderr so the server never blocks on a full pipe.
    std::thread::spawn(move || lines.for_each(drop));
    Server { child, url }
}

/// Bytes of seven bits each, different from seed to seed.
pub fn sample(len: usize, seed: u64) -> Vec<u8> {
    (0..len as u64).map(|i| (i.wrapping_add(seed).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 57) as u8).collect()
}
