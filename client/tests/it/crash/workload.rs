//! The crash tests' workload: a stream of changes (put, edit, sync, prune, rm) over a few
//! names, a model of what the provider must hold after them, and a journal that says which
//! changes returned Ok (acknowledged) and which one was in flight when a process died.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use vouch_client::{ByteEdit, Client, ClientError};

const NAMES: [&str; 3] = ["a.bin", "b.bin", "c.bin"];

/// One stored name as the model has it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct File {
    pub content: Vec<u8>,
    pub versions: Vec<u64>,
    pub next: u64,
}

/// What the provider holds, and the number of the next change.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Model {
    pub files: BTreeMap<String, File>,
    pub next_op: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    Put(String, u64),
    Edit(String, u64),
    Sync(String, u64),
    Prune(String, u64),
    Rm(String),
}

fn bytes(len: usize, seed: u64) -> Vec<u8> {
    crate::common::sample(len, seed)
}

/// A small xorshift step, for choosing.
fn mix(k: u64) -> u64 {
    let mut x = k.wrapping_add(0x2545_f491_4f6c_dd1d);
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^ (x >> 33)
}

impl Model {
    /// The change number `next_op` makes, given the model.
    pub fn choose(&self) -> Op {
        let k = self.next_op;
        let r = mix(k);
        let name = NAMES[(r % NAMES.len() as u64) as usize].to_string();
        let Some(file) = self.files.get(&name) else { return Op::Put(name, k) };
        match (r >> 8) % 10 {
            0..=2 => Op::Sync(name, k),
            3..=4 => Op::Edit(name, k),
            5 if file.versions.len() >= 2 => Op::Prune(name, file.versions[0]),
            6 => Op::Rm(name),
            _ => Op::Put(name, k),
        }
    }

    /// The content a put or sync stores, and an edit's change.
    fn put_content(seed: u64) -> Vec<u8> {
        bytes(1 + (mix(seed) % 200_000) as usize, seed)
    }

    fn sync_content(old: &[u8], seed: u64) -> Vec<u8> {
        let mut new = old.to_vec();
        let at = (mix(seed) % (old.len() as u64 + 1)) as usize;
        let end = (at + 300).min(new.len());
        new[at..end].iter_mut().for_each(|b| *b ^= 0x5a);
        new.extend_from_slice(&bytes(100, seed));
        new
    }

    fn edit(old: &[u8], seed: u64) -> ByteEdit {
        ByteEdit::Insert { at: mix(seed) % (old.len() as u64 + 1), data: bytes(1 + (seed % 5000) as usize, seed) }
    }

    /// The model after `op` (which returned Ok, or may have been applied).
    pub fn after(&self, op: &Op) -> Model {
        let mut m = self.clone();
        m.next_op += 1;
        let new_version = |m: &mut Model, name: &str, content: Vec<u8>| {
            let f =
                m.files.entry(name.to_string()).or_insert(File { content: Vec::new(), versions: Vec::new(), next: 1 });
            f.content = content;
            f.versions.push(f.next);
            f.next += 1;
        };
        match op {
            Op::Put(name, seed) => new_version(&mut m, name, Self::put_content(*seed)),
            Op::Sync(name, seed) => {
                let content = Self::sync_content(&m.files[name].content, *seed);
                new_version(&mut m, name, content);
            }
            Op::Edit(name, seed) => {
                let mut content = m.files[name].content.clone();
                let ByteEdit::Insert { at, data } = Self::edit(&content, *seed) else { unreachable!() };
                content.splice(at as usize..at as usize, data);
                new_version(&mut m, name, content);
            }
            Op::Prune(name, v) => m.files.get_mut(name).expect("pruned name").versions.retain(|x| x != v),
            Op::Rm(name) => {
                m.files.remove(name);
            }
        }
        m
    }

    /// Runs `op` through the client.
    pub async fn run(&self, client: &Client, op: &Op, scratch: &Path) -> Result<(), ClientError> {
        match op {
            Op::Put(name, seed) => {
                let data = std::io::Cursor::new(Self::put_content(*seed));
                client.put(name, data, None, |_| {}).await.map(drop)
            }
            Op::Sync(name, seed) => {
                let local = scratch.join("local.bin");
                std::fs::write(&local, Self::sync_content(&self.files[name].content, *seed)).unwrap();
                client.sync(name, &local).await.map(drop)
            }
            Op::Edit(name, seed) => {
                client.edit(name, &Self::edit(&self.files[name].content, *seed), None).await.map(drop)
            }
            Op::Prune(name, v) => client.prune(name, &[*v]).await,
            Op::Rm(name) => client.remove(name).await,
        }
    }

    /// What the provider holds, read (verified) through `client`.
    pub async fn read(client: &Client, next_op: u64) -> Result<Model, ClientError> {
        let mut files = BTreeMap::new();
        for entry in client.list().await? {
            let mut content = Vec::new();
            client.get(&entry.name, None, None, &mut content).await?;
            let versions = client.log(&entry.name).await?.iter().map(|v| v.number).collect();
            files.insert(entry.name, File { content, versions, next: entry.next_version });
        }
        Ok(Model { files, next_op })
    }

    pub fn save(&self, dir: &Path) {
        std::fs::write(dir.join("model"), vouch_proto::encode(self)).unwrap();
        std::fs::write(dir.join("journal"), b"").unwrap();
    }

    pub fn load(dir: &Path) -> Model {
        vouch_proto::decode(&std::fs::read(dir.join("model")).unwrap()).unwrap()
    }
}

impl std::fmt::Display for Op {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Op::Put(n, s) => write!(f, "put {n} {s}"),
            Op::Edit(n, s) => write!(f, "edit {n} {s}"),
            Op::Sync(n, s) => write!(f, "sync {n} {s}"),
            Op::Prune(n, v) => write!(f, "prune {n} {v}"),
            Op::Rm(n) => write!(f, "rm {n}"),
        }
    }
}

/// The journal a client child appends to (each line flushed to disk before it goes on).
pub struct Journal(std::fs::File);

impl Journal {
    pub fn open(dir: &Path) -> Journal {
        Journal(std::fs::OpenOptions::new().append(true).open(dir.join("journal")).unwrap())
    }

    pub fn line(&mut self, text: &str) {
        writeln!(self.0, "{text}").unwrap();
        self.0.sync_data().unwrap();
    }
}

/// What the journal says after a crash: the model after every acknowledged change, the model
/// after the change in flight too (it may or may not have been applied), and how the last
/// change failed, if it returned an error.
pub struct Replayed {
    pub acked: Model,
    pub in_flight: Option<Model>,
    pub failure: Option<String>,
}

pub fn replay(dir: &Path) -> Replayed {
    let mut acked = Model::load(dir);
    let journal = std::fs::read_to_string(dir.join("journal")).unwrap();
    let (mut in_flight, mut failure) = (None, None);
    for line in journal.lines() {
        let mut words = line.splitn(3, ' ');
        match (words.next(), words.next(), words.next()) {
            (Some("begin"), Some(_), Some(_)) => in_flight = Some(acked.after(&acked.choose())),
            (Some("done"), Some(_), None) => acked = in_flight.take().expect("done after begin"),
            (Some("failed"), Some(_), Some(why)) => failure = Some(why.to_string()),
            // A line cut by the kill: its change did not start.
            _ => {}
        }
    }
    Replayed { acked, in_flight, failure }
}
