//! The real processes: a restartable `vouch serve` or `vouch gateway` on a fixed loopback port
//! ([`Daemon`]), and one `vouch` command run to its end, with a `kill -9` at a given instant
//! of it ([`run`]).

use std::ffi::OsString;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use super::Violated;

/// How long a command may take before the loop calls it hung (a killed provider must make a
/// client fail fast, not wait out its 300 s deadline).
const COMMAND_DEADLINE: Duration = Duration::from_secs(120);
/// How long a daemon may take to say where it listens.
const START_DEADLINE: Duration = Duration::from_secs(30);

/// A free loopback port, to start a daemon on and start it again on after a kill (the clients
/// keep its URL).
pub fn free_port() -> Result<u16, Violated> {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| Violated::Harness(format!("no free loopback port: {e}")))
}

/// A path as a command-line argument.
pub fn arg(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

/// A `vouch serve` or `vouch gateway` child, killed on drop.
pub struct Daemon {
    bin: PathBuf,
    args: Vec<OsString>,
    child: Option<Child>,
    /// What it printed as its address (`http://127.0.0.1:PORT`).
    pub url: String,
}

impl Daemon {
    /// Starts `vouch ARGS` and waits until it prints the URL it serves on.
    pub fn start(bin: &Path, args: Vec<OsString>) -> Result<Daemon, Violated> {
        let mut daemon = Daemon { bin: bin.to_path_buf(), args, child: None, url: String::new() };
        daemon.spawn()?;
        Ok(daemon)
    }

    /// Starts it again (on the same port: a port just closed by a kill may take a moment).
    pub fn restart(&mut self) -> Result<(), Violated> {
        self.kill();
        self.spawn()
    }

    /// `kill -9`, and waits for it to be gone; whether it was running.
    pub fn kill(&mut self) -> bool {
        match self.child.take() {
            Some(mut child) => {
                let running = matches!(child.try_wait(), Ok(None));
                let _ = child.kill();
                let _ = child.wait();
                running
            }
            None => false,
        }
    }

    fn spawn(&mut self) -> Result<(), Violated> {
        let mut last = String::new();
        for _ in 0..50 {
            match self.try_spawn() {
                Ok(()) => return Ok(()),
                Err(why) => last = why,
            }
            thread::sleep(Duration::from_millis(100));
        }
        Err(Violated::NotConverged { command: self.describe(), code: None, stderr: last })
    }

    /// One start: Ok once it printed its URL; Err with what it printed when it exited first.
    fn try_spawn(&mut self) -> Result<(), String> {
        let mut child = Command::new(&self.bin)
            .args(&self.args)
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", self.bin.display()))?;
        let (tx, rx) = mpsc::channel::<String>();
        if let Some(out) = child.stdout.take() {
            drain(out, tx.clone());
        }
        if let Some(err) = child.stderr.take() {
            drain(err, tx);
        }
        let deadline = Instant::now() + START_DEADLINE;
        let mut said = String::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(line) => {
                    if let Some(url) = line.split_whitespace().find(|w| w.starts_with("http://")) {
                        self.url = url.trim_end_matches([',', '.', ')']).to_string();
                        self.child = Some(child);
                        return Ok(());
                    }
                    said.push_str(&line);
                    said.push('\n');
                }
                Err(_) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(format!("it printed no address: {said}"));
                }
            }
        }
    }

    fn describe(&self) -> String {
        let args: Vec<_> = self.args.iter().map(|a| a.to_string_lossy().into_owned()).collect();
        format!("vouch {}", args.join(" "))
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Forwards each line of `from` to `to` until it ends (so the daemon never blocks on a full
/// pipe, and the loop sees its address).
fn drain(from: impl Read + Send + 'static, to: mpsc::Sender<String>) {
    // With VOUCH_CRASH_VERBOSE, what the daemon logs goes to stderr too (why it answered what).
    let echo = std::env::var_os("VOUCH_CRASH_VERBOSE").is_some();
    thread::spawn(move || {
        for line in BufReader::new(from).lines() {
            let Ok(line) = line else { break };
            if echo {
                eprintln!("  | {line}");
            }
            // Nobody listens any more once the address was found: keep reading all the same.
            let _ = to.send(line);
        }
    });
}

/// What a finished command did.
#[derive(Debug)]
pub struct Ran {
    /// Its exit code; None when a signal (our kill) ended it.
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub command: String,
    pub took: Duration,
}

impl Ran {
    pub fn ok(&self) -> bool {
        self.code == Some(0)
    }

    /// Exit 3 is a failure of the loop wherever it shows: the crash was honest.
    pub fn no_violation(&self) -> Result<(), Violated> {
        if self.code == Some(super::EXIT_MISBEHAVED) {
            Err(Violated::Misbehaved { command: self.command.clone(), stderr: self.stderr.clone() })
        } else {
            Ok(())
        }
    }

    /// This command had to succeed: after a restart, or with nothing killed.
    pub fn must_succeed(&self) -> Result<&Ran, Violated> {
        self.no_violation()?;
        if self.ok() {
            Ok(self)
        } else {
            Err(self.not_converged())
        }
    }

    pub fn not_converged(&self) -> Violated {
        Violated::NotConverged { command: self.command.clone(), code: self.code, stderr: self.stderr.clone() }
    }
}

/// Whom a run kills, and when.
pub enum Kill<'a> {
    Nobody,
    /// The command itself, this long after it started (if it is still running).
    Itself(Duration),
    /// The daemon the command talks to, this long after the command started (running or not).
    Daemon(Duration, &'a mut Daemon),
}

/// Whether a run's kill happened, and whether the command was still running at that instant.
#[derive(Clone, Copy, Debug, Default)]
pub struct Killed {
    pub killed: bool,
    pub mid_operation: bool,
}

/// Runs `command` to its end (its output through files in `scratch`), killing as `kill` says.
pub fn run(mut command: Command, scratch: &Path, kill: Kill<'_>) -> Result<(Ran, Killed), Violated> {
    let describe = describe(&command);
    let harness = |e: std::io::Error| Violated::Harness(format!("{describe}: {e}"));
    let (out, err) = (scratch.join("stdout"), scratch.join("stderr"));
    command
        .stdin(Stdio::null())
        .stdout(File::create(&out).map_err(harness)?)
        .stderr(File::create(&err).map_err(harness)?);
    let started = Instant::now();
    let mut child = command.spawn().map_err(harness)?;
    let mut killed = Killed::default();
    let (mut at, mut daemon) = match kill {
        Kill::Nobody => (None, None),
        Kill::Itself(at) => (Some(at), None),
        Kill::Daemon(at, daemon) => (Some(at), Some(daemon)),
    };
    loop {
        let status = child.try_wait().map_err(harness)?;
        if let Some(instant) = at {
            if status.is_none() && started.elapsed() >= instant {
                // The instant came while the command runs: the kill lands mid-operation.
                match daemon.as_deref_mut() {
                    Some(d) => killed.killed = d.kill(),
                    None => killed.killed = child.kill().is_ok(),
                }
                killed.mid_operation = killed.killed;
                at = None;
            } else if status.is_some() {
                // The command ended first: a daemon is killed at the instant all the same
                // (a crash while idle must lose nothing either); a command cannot be.
                if let Some(d) = daemon.as_deref_mut() {
                    thread::sleep(instant.saturating_sub(started.elapsed()));
                    killed.killed = d.kill();
                }
                at = None;
            }
        }
        if let Some(status) = status {
            let took = started.elapsed();
            let read = |p: &Path| std::fs::read(p).map(|b| String::from_utf8_lossy(&b).into_owned()).map_err(harness);
            let ran = Ran { code: status.code(), stdout: read(&out)?, stderr: read(&err)?, command: describe, took };
            return Ok((ran, killed));
        }
        if started.elapsed() > COMMAND_DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            return Err(Violated::Hung { command: describe });
        }
        thread::sleep(Duration::from_millis(2));
    }
}

/// A command as text, for messages.
pub fn describe(command: &Command) -> String {
    let args: Vec<_> = command.get_args().map(|a| a.to_string_lossy().into_owned()).collect();
    format!("vouch {}", args.join(" "))
}

/// One client's `vouch --state DIR ...` commands.
pub struct Vouch {
    bin: PathBuf,
    pub state: PathBuf,
    /// Where command output and the files commands read and write go.
    pub scratch: PathBuf,
}

impl Vouch {
    pub fn new(bin: &Path, state: PathBuf, scratch: PathBuf) -> Result<Vouch, Violated> {
        std::fs::create_dir_all(&scratch).map_err(|e| Violated::Harness(format!("{}: {e}", scratch.display())))?;
        Ok(Vouch { bin: bin.to_path_buf(), state, scratch })
    }

    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(&self.bin);
        command.arg("--state").arg(&self.state).args(args).env("RUST_LOG", "off");
        command
    }

    pub fn run(&self, args: &[&str], kill: Kill<'_>) -> Result<(Ran, Killed), Violated> {
        run(self.command(args), &self.scratch, kill)
    }

    /// A command that must succeed.
    pub fn ok(&self, args: &[&str]) -> Result<Ran, Violated> {
        let (ran, _) = self.run(args, Kill::Nobody)?;
        ran.must_succeed()?;
        Ok(ran)
    }

    /// A file in the scratch directory.
    pub fn file(&self, name: &str) -> PathBuf {
        self.scratch.join(name)
    }
}

/// How long each kind of work under a kill usually takes, so the kill's instant falls inside
/// it (a get is quicker than a multipart upload).
pub struct Pace {
    first_guess_ms: u64,
    typical_ms: std::collections::BTreeMap<String, u64>,
}

impl Pace {
    /// A first guess, until work of a kind was timed.
    pub fn new(first_guess_ms: u64) -> Pace {
        Pace { first_guess_ms, typical_ms: Default::default() }
    }

    /// Work of `kind` that ran whole took this long.
    pub fn observe(&mut self, kind: &str, took: Duration) {
        let ms = took.as_millis().min(60_000) as u64;
        let typical = self.typical_ms.entry(kind.to_string()).or_insert(ms);
        *typical = (*typical + ms).div_ceil(2).max(1);
    }

    /// A random instant within typical work of `kind`.
    pub fn instant(&self, kind: &str, rng: &mut crate::Rng) -> Duration {
        let typical = self.typical_ms.get(kind).copied().unwrap_or(self.first_guess_ms);
        Duration::from_millis(rng.below(typical + 1))
    }
}

/// The kind of a step, for [`Pace`]: its variant's name in `Debug`.
pub fn kind(step: &impl std::fmt::Debug) -> String {
    let text = format!("{step:?}");
    text.split([' ', '{', '(']).next().unwrap_or_default().to_string()
}

/// The string values of `"key": "..."` in a JSON text (the CLI's `--json` output; names and
/// keys hold no quotes).
pub fn json_strings(text: &str, key: &str) -> Vec<String> {
    let needle = format!("\"{key}\":");
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find(&needle) {
        rest = rest[at + needle.len()..].trim_start();
        if let Some(value) = rest.strip_prefix('"') {
            if let Some(end) = value.find('"') {
                found.push(value[..end].to_string());
            }
        }
    }
    found
}

/// The strings of the array `"key": [...]` in a JSON text.
pub fn json_array(text: &str, key: &str) -> Vec<String> {
    let needle = format!("\"{key}\":");
    let Some(at) = text.find(&needle) else { return Vec::new() };
    let rest = &text[at + needle.len()..];
    let (Some(open), Some(close)) = (rest.find('['), rest.find(']')) else { return Vec::new() };
    rest.get(open + 1..close).unwrap_or("").split('"').skip(1).step_by(2).map(str::to_string).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_values_are_found() {
        let ls = r#"[{"name": "a", "versions": 1}, {"name":"b"}]"#;
        assert_eq!(json_strings(ls, "name"), ["a", "b"]);
        assert_eq!(json_array(r#"{"keys": ["k0", "k1"], "x": []}"#, "keys"), ["k0", "k1"]);
        assert!(json_array(r#"{"keys": []}"#, "keys").is_empty());
    }
}
