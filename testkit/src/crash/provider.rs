//! The provider's crash loop: `vouch serve` is killed while one client command works against it
//! (a put, a PoR put, an edit, a sync, a get, an audit, a PoR audit, a repair, a removal), then
//! started again over the same data directory, and everything acknowledged is read back.
//!
//! While it is down, `vouch serve --check` must find its store whole. It compacts every second
//! (over a small garbage threshold), so some kills land in a compaction too.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::path::Path;

use super::model::{Model, Pending};
use super::procs::{self, arg, Daemon, Kill, Killed, Pace, Vouch};
use super::{Cx, Sabotage, Violated};

const TOKEN: &str = "crash-token";
/// Plain files: put, edited, synced, removed.
const PLAIN: [&str; 3] = ["f0", "f1", "f2"];
/// Files with retrievability (PoR from their first version on): put, audited, repaired.
const POR: [&str; 2] = ["p0", "p1"];

/// The change a command makes to a name, if it happens.
type Change = (&'static str, Pending);

/// One client command the provider may be killed under.
#[derive(Clone, Debug)]
enum Step {
    Put { name: &'static str, por: bool },
    Edit { name: &'static str },
    Sync { name: &'static str },
    Get { name: &'static str },
    Audit,
    AuditPor,
    Repair { name: &'static str },
    Remove { name: &'static str },
}

pub fn run(bin: &Path, cx: &mut Cx) -> Result<(), Violated> {
    let dir = tempfile::tempdir().map_err(|e| Violated::Harness(format!("temporary directory: {e}")))?;
    let data = dir.path().join("provider");
    let listen = format!("127.0.0.1:{}", procs::free_port()?);
    let serve: Vec<OsString> = [
        "serve",
        "--listen",
        &listen,
        "--data",
        &arg(&data),
        "--client",
        &format!("alice={TOKEN}"),
        "--compact-every-secs",
        "1",
        "--compact-min-garbage",
        "65536",
    ]
    .iter()
    .map(OsString::from)
    .collect();
    let mut provider = Daemon::start(bin, serve)?;
    let client = Vouch::new(bin, dir.path().join("client"), dir.path().join("scratch"))?;
    client.ok(&["init", "--server", &provider.url, "--token", TOKEN])?;
    let mut world = World { client, model: Model::new(), pace: Pace::new(150) };
    for step in [
        Step::Put { name: PLAIN[0], por: false },
        Step::Put { name: PLAIN[1], por: false },
        Step::Put { name: POR[0], por: true },
    ] {
        world.perform(cx, step, Kill::Nobody)?;
    }
    world.verify(cx)?;

    for kill in 1..=cx.plan.kills {
        cx.kill = kill;
        // Work with nothing killed first, now and then: more acknowledged state to lose.
        for _ in 0..cx.rng.below(3) {
            let step = world.choose(cx);
            world.perform(cx, step, Kill::Nobody)?;
        }
        let step = world.choose(cx);
        let instant = world.pace.instant(&procs::kind(&step), &mut cx.rng);
        cx.say(format_args!("{step:?}, provider killed after {} ms", instant.as_millis()));
        let killed = world.perform(cx, step, Kill::Daemon(instant, &mut provider))?;
        cx.report.kills += 1;
        cx.report.kills_mid_operation += usize::from(killed.mid_operation);
        check_store(bin, &data, &world.client.scratch, cx)?;
        let sabotage = cx.plan.sabotage.filter(|s| matches!(s, Sabotage::WipeProvider { at_kill } | Sabotage::ForgetEverything { at_kill } if *at_kill == kill));
        if sabotage.is_some() {
            std::fs::remove_dir_all(&data).map_err(|e| Violated::Harness(format!("sabotage: {e}")))?;
        }
        provider.restart()?;
        cx.report.restarts += 1;
        if let Some(Sabotage::ForgetEverything { .. }) = sabotage {
            std::fs::remove_dir_all(&world.client.state).map_err(|e| Violated::Harness(format!("sabotage: {e}")))?;
            world.client.ok(&["init", "--server", &provider.url, "--token", TOKEN])?;
        }
        world.verify(cx)?;
    }
    Ok(())
}

/// `vouch serve --check` over the data of a killed provider: its store must be whole.
fn check_store(bin: &Path, data: &Path, scratch: &Path, cx: &mut Cx) -> Result<(), Violated> {
    let mut command = std::process::Command::new(bin);
    command.args(["serve", "--check", "--data"]).arg(data).env("RUST_LOG", "off");
    let (ran, _) = procs::run(command, scratch, Kill::Nobody)?;
    cx.report.checks += 1;
    if ran.ok() {
        Ok(())
    } else {
        Err(Violated::StoreCheck {
            report: format!("exit {:?}: {} {}", ran.code, ran.stdout.trim(), ran.stderr.trim()),
        })
    }
}

/// The client, what it was acknowledged, and how long its commands take.
struct World {
    client: Vouch,
    model: Model,
    pace: Pace,
}

impl World {
    /// A step, mostly writes; one that needs a file falls back to a put when there is none.
    fn choose(&self, cx: &mut Cx) -> Step {
        let present = |names: &[&'static str]| -> Vec<&'static str> {
            names.iter().copied().filter(|n| self.model.latest(n).is_some()).collect()
        };
        let (plain, por) = (present(&PLAIN), present(&POR));
        let any: Vec<&'static str> = plain.iter().chain(&por).copied().collect();
        let put = |cx: &mut Cx| Step::Put { name: cx.rng.pick(&PLAIN).unwrap_or(&PLAIN[0]), por: false };
        match cx.rng.below(16) {
            0..=3 => put(cx),
            4..=5 => Step::Put { name: cx.rng.pick(&POR).unwrap_or(&POR[0]), por: true },
            6..=8 => cx.rng.pick(&plain).map_or_else(|| put(cx), |&name| Step::Edit { name }),
            9 => cx.rng.pick(&plain).map_or_else(|| put(cx), |&name| Step::Sync { name }),
            10..=11 => cx.rng.pick(&any).map_or_else(|| put(cx), |&name| Step::Get { name }),
            12 if !any.is_empty() => Step::Audit,
            13 if !por.is_empty() => Step::AuditPor,
            14 => cx.rng.pick(&por).map_or_else(|| put(cx), |&name| Step::Repair { name }),
            15 => cx.rng.pick(&plain).map_or_else(|| put(cx), |&name| Step::Remove { name }),
            _ => put(cx),
        }
    }

    /// Runs `step` under `kill` and folds its outcome into the model: exit 0 is acknowledged,
    /// a failure under a kill mid-operation leaves its change pending, anything else fails.
    fn perform(&mut self, cx: &mut Cx, step: Step, kill: Kill<'_>) -> Result<Killed, Violated> {
        let (args, change) = self.prepare(cx, &step)?;
        let out = self.client.file("out");
        let _ = std::fs::remove_file(&out);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (ran, killed) = self.client.run(&args, kill)?;
        ran.no_violation()?;
        let got = match ran.code {
            Some(0) => {
                cx.report.acknowledged += 1;
                if !killed.mid_operation {
                    self.pace.observe(&procs::kind(&step), ran.took);
                }
                match change {
                    Some((name, Pending::Write(bytes))) => self.model.ack_write(name, bytes),
                    Some((name, Pending::Remove)) => self.model.ack_remove(name),
                    None => {}
                }
                Some(true)
            }
            Some(5) if matches!(step, Step::Get { .. }) => Some(false),
            _ if killed.mid_operation => {
                cx.report.interrupted += 1;
                if let Some((name, pending)) = change {
                    self.model.interrupted(name, pending);
                }
                None
            }
            _ => return Err(ran.not_converged()),
        };
        if let Step::Get { name } = step {
            match got {
                Some(found) => {
                    let read = if found { Some(read_file(&out)?) } else { None };
                    self.model.observe(name, read.as_deref())?;
                    cx.report.checks += 1;
                }
                // A get cut short writes whole or not at all.
                None if out.exists() || partial_beside(&out) => {
                    return Err(Violated::HalfWritten {
                        what: format!("get {name} -o"),
                        detail: "a get that failed left its output file behind".into(),
                    })
                }
                None => {}
            }
        }
        Ok(killed)
    }

    /// The command line of `step`, and the change it makes if it happens.
    fn prepare(&mut self, cx: &mut Cx, step: &Step) -> Result<(Vec<String>, Option<Change>), Violated> {
        let input = self.client.file("input");
        let write = |bytes: &[u8]| {
            std::fs::write(&input, bytes).map_err(|e| Violated::Harness(format!("{}: {e}", input.display())))
        };
        let s = |v: &[&str]| v.iter().map(|a| a.to_string()).collect::<Vec<_>>();
        Ok(match *step {
            Step::Put { name, por } => {
                let len = cx.size();
                let bytes = cx.bytes(len);
                write(&bytes)?;
                let mut args = s(&["put", &arg(&input), name]);
                if por {
                    args.insert(1, "--por".into());
                }
                (args, Some((name, Pending::Write(bytes))))
            }
            Step::Edit { name } => {
                let old = self.model.latest(name).unwrap_or_default().to_vec();
                let len = 1 + cx.rng.below(4096) as usize;
                let data = cx.bytes(len);
                let Edit { flag, at, data, new } = edit(cx, &old, data);
                let mut args = s(&["edit", name, flag, &at]);
                if let Some(data) = data {
                    write(&data)?;
                    args.extend(s(&["--from", &arg(&input)]));
                }
                (args, Some((name, Pending::Write(new))))
            }
            Step::Sync { name } => {
                let old = self.model.latest(name).unwrap_or_default();
                let cut = cx.rng.below(old.len() as u64 + 1) as usize;
                let tail = cut + (cx.rng.below(8192) as usize).min(old.len() - cut);
                let fresh_len = 1 + cx.rng.below(8192) as usize;
                let new = [&old[..cut], &cx.bytes(fresh_len), &old[tail..]].concat();
                write(&new)?;
                (s(&["sync", name, &arg(&input)]), Some((name, Pending::Write(new))))
            }
            Step::Get { name } => (s(&["get", name, "-o", &arg(&self.client.file("out"))]), None),
            Step::Audit => (s(&["audit"]), None),
            Step::AuditPor => (s(&["audit", "--por"]), None),
            Step::Repair { name } => (s(&["repair", name]), None),
            Step::Remove { name } => (s(&["rm", name]), Some((name, Pending::Remove))),
        })
    }

    /// After a restart: every name reads back as acknowledged (settling what a kill left
    /// pending), the listing and the version logs agree, an older version reads back, and the
    /// audits pass.
    fn verify(&mut self, cx: &mut Cx) -> Result<(), Violated> {
        let out = self.client.file("check");
        let out_arg = arg(&out);
        for name in self.model.names() {
            let read = self.get(&["get", &name, "-o", &out_arg], &out)?;
            self.model.observe(&name, read.as_deref())?;
            cx.report.checks += 1;
        }
        let listed: BTreeSet<String> =
            procs::json_strings(&self.client.ok(&["--json", "ls"])?.stdout, "name").into_iter().collect();
        self.model.observe_listing(&listed)?;
        cx.report.checks += 1;
        for name in self.model.names().iter().filter(|n| self.model.latest(n).is_some()) {
            let log = self.client.ok(&["--json", "log", name])?;
            let kept = log.stdout.matches("\"version\":").count();
            if kept != self.model.versions(name).len() {
                return Err(Violated::Lost {
                    what: format!("versions of {name}"),
                    detail: format!("the log holds {kept}, {} acknowledged", self.model.versions(name).len()),
                });
            }
            cx.report.checks += 1;
        }
        let older: Vec<(String, usize)> = self
            .model
            .names()
            .into_iter()
            .map(|n| (n.clone(), self.model.versions(&n).len()))
            .filter(|(_, v)| *v > 1)
            .collect();
        if let Some((name, count)) = cx.rng.pick(&older).cloned() {
            let number = 1 + cx.rng.below(count as u64 - 1) as usize;
            let read = self.get(&["get", &name, "--version", &number.to_string(), "-o", &out_arg], &out)?;
            self.model.observe_version(&name, number, read.as_deref())?;
            cx.report.checks += 1;
        }
        let por: Vec<&str> = POR.iter().copied().filter(|n| self.model.latest(n).is_some()).collect();
        if let Some(&name) = cx.rng.pick(&por) {
            let read = self.get(&["get", name, "--por", "-o", &out_arg], &out)?;
            self.model.observe(name, read.as_deref())?;
            self.client.ok(&["audit", "--por"])?;
            cx.report.checks += 2;
        }
        if self.model.names().iter().any(|n| self.model.latest(n).is_some()) {
            self.client.ok(&["audit"])?;
            cx.report.checks += 1;
        }
        Ok(())
    }

    /// A get that must succeed or prove the name absent (exit 5): the bytes, or None.
    fn get(&self, args: &[&str], out: &Path) -> Result<Option<Vec<u8>>, Violated> {
        let _ = std::fs::remove_file(out);
        let (ran, _) = self.client.run(args, Kill::Nobody)?;
        ran.no_violation()?;
        match ran.code {
            Some(0) => Ok(Some(read_file(out)?)),
            Some(5) => Ok(None),
            _ => Err(ran.not_converged()),
        }
    }
}

/// One `vouch edit`: its flag and the flag's argument, the bytes it sends (`--from`), and
/// what the file is after it.
struct Edit {
    flag: &'static str,
    at: String,
    data: Option<Vec<u8>>,
    new: Vec<u8>,
}

/// A random edit of `old`: an insertion of `data`, a deletion, or `data` written over bytes.
fn edit(cx: &mut Cx, old: &[u8], mut data: Vec<u8>) -> Edit {
    let len = old.len();
    match cx.rng.below(3) {
        1 if len > 1 => {
            let a = cx.rng.below(len as u64 - 1) as usize;
            let b = a + 1 + cx.rng.below((len - a - 1).min(8192) as u64) as usize;
            Edit { flag: "--delete", at: format!("{a}..{b}"), data: None, new: [&old[..a], &old[b..]].concat() }
        }
        2 if len > 0 => {
            data.truncate(len);
            let at = cx.rng.below((len - data.len()) as u64 + 1) as usize;
            let new = [&old[..at], &data, &old[at + data.len()..]].concat();
            Edit { flag: "--replace", at: at.to_string(), data: Some(data), new }
        }
        _ => {
            let at = cx.rng.below(len as u64 + 1) as usize;
            let new = [&old[..at], &data, &old[at..]].concat();
            Edit { flag: "--insert", at: at.to_string(), data: Some(data), new }
        }
    }
}

fn read_file(path: &Path) -> Result<Vec<u8>, Violated> {
    std::fs::read(path).map_err(|e| Violated::Harness(format!("{}: {e}", path.display())))
}

/// Whether a get's temporary output file (`.NAME.*.vouch-partial`) is left beside `out`.
fn partial_beside(out: &std::path::Path) -> bool {
    let (Some(dir), Some(name)) = (out.parent(), out.file_name()) else { return false };
    let prefix = format!(".{}.", name.to_string_lossy());
    std::fs::read_dir(dir).into_iter().flatten().flatten().any(|e| {
        let n = e.file_name().to_string_lossy().into_owned();
        n.starts_with(&prefix) && n.ends_with(".vouch-partial")
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crash::{Component, CrashPlan};
    use crate::Rng;

    #[test]
    fn edits_make_what_the_cli_is_told() {
        let mut cx = Cx {
            plan: CrashPlan::new(Component::Provider, 1, 1),
            rng: Rng::new(1),
            kill: 0,
            report: Default::default(),
        };
        let old = crate::sample(1000, 3);
        for _ in 0..200 {
            let data = crate::sample(50, cx.rng.next_u64());
            let Edit { flag, at, new, .. } = edit(&mut cx, &old, data.clone());
            match flag {
                "--insert" => {
                    let at: usize = at.parse().unwrap();
                    assert_eq!(new.len(), 1050);
                    assert_eq!(&new[at..at + 50], &data[..]);
                }
                "--delete" => {
                    let (a, b) = at.split_once("..").unwrap();
                    let (a, b): (usize, usize) = (a.parse().unwrap(), b.parse().unwrap());
                    assert!(a < b && b <= 1000);
                    assert_eq!(new.len(), 1000 - (b - a));
                }
                _ => assert_eq!(new.len(), 1000),
            }
        }
    }
}
