//! The group member's crash loop: two members of one VICOS group share an honest provider, and
//! a member's `vouch obj put`, `obj rm`, `obj get` or `obj ls` is killed at a random instant.
//! Its next command is its restart (it goes on from the AIP state it saved: a COMMIT the kill
//! kept from the provider is sent then, an operation whose answer never came is aborted). Then
//! both members read every key back, and the group must agree with what was acknowledged. One
//! kill in eight lands instead while a new group is made or joined ([`setup`]).

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::path::Path;
use std::thread;
use std::time::Duration;

use super::model::{Model, Pending};
use super::procs::{self, arg, Daemon, Kill, Pace, Ran, Vouch};
use super::setup;
use super::{Cx, Violated};

const KEYS: [&str; 4] = ["k0", "k1", "k2", "dir/k3"];
/// Exit code of a VICOS operation that aborted, changing nothing (docs/exit-codes.md).
const EXIT_ABORTED: i32 = 8;
/// Tries of a command that aborts because another member's operation is pending.
const ABORT_RETRIES: usize = 20;

#[derive(Clone, Copy, Debug)]
enum Step {
    Put { key: &'static str },
    Remove { key: &'static str },
    Get { key: &'static str },
    List,
}

pub fn run(bin: &Path, cx: &mut Cx) -> Result<(), Violated> {
    let dir = tempfile::tempdir().map_err(|e| Violated::Harness(format!("temporary directory: {e}")))?;
    let serve: Vec<OsString> = [
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--data",
        &arg(&dir.path().join("provider")),
        "--client",
        "alice=alice-token",
        "--client",
        "bob=bob-token",
    ]
    .iter()
    .map(OsString::from)
    .collect();
    let provider = Daemon::start(bin, serve)?;
    let members = [
        Vouch::new(bin, dir.path().join("alice"), dir.path().join("scratch-alice"))?,
        Vouch::new(bin, dir.path().join("bob"), dir.path().join("scratch-bob"))?,
    ];
    members[0].ok(&["init", "--server", &provider.url, "--token", "alice-token"])?;
    members[1].ok(&["init", "--server", &provider.url, "--token", "bob-token"])?;
    let key_file = arg(&dir.path().join("crash.key"));
    members[0].ok(&["group", "init", "crash", "--key-out", &key_file])?;
    members[1].ok(&["group", "join", &key_file, "--id", "1"])?;
    let mut group = Group { members, model: Model::new(), pace: Pace::new(100) };
    group.perform(cx, 0, Step::Put { key: KEYS[0] }, false)?;

    // A command that ends before its kill's instant is no kill: choose again, a bounded number
    // of times.
    let mut tries = 0;
    let mut setup_pace = Pace::new(30);
    while cx.report.kills < cx.plan.kills && tries < 20 * cx.plan.kills.max(1) {
        tries += 1;
        cx.kill = cx.report.kills + 1;
        // One kill in eight lands while a new group is made or joined.
        if cx.rng.below(8) == 0 {
            let tokens = ["alice-token", "bob-token"];
            if setup::kill_one(bin, dir.path(), &provider.url, tokens, &mut setup_pace, cx, tries)? {
                cx.report.kills += 1;
                cx.report.kills_mid_operation += 1;
            }
            continue;
        }
        // Work with nothing killed first, now and then: more acknowledged state to lose.
        for _ in 0..cx.rng.below(3) {
            let (who, step) = (cx.rng.below(2) as usize, group.choose(cx));
            group.perform(cx, who, step, false)?;
        }
        let who = cx.rng.below(2) as usize;
        let step = group.choose(cx);
        if !group.perform(cx, who, step, true)? {
            continue;
        }
        cx.report.kills += 1;
        cx.report.kills_mid_operation += 1;
        // The killed member's next command is its restart.
        group.until_done(cx, who, &["obj", "ls"])?;
        cx.report.restarts += 1;
        group.verify(cx, who)?;
    }
    Ok(())
}

struct Group {
    members: [Vouch; 2],
    model: Model,
    pace: Pace,
}

impl Group {
    fn choose(&self, cx: &mut Cx) -> Step {
        let key = *cx.rng.pick(&KEYS).unwrap_or(&KEYS[0]);
        match cx.rng.below(10) {
            0..=4 => Step::Put { key },
            5 if self.model.latest(key).is_some() => Step::Remove { key },
            6..=7 => Step::Get { key },
            8 => Step::List,
            _ => Step::Put { key },
        }
    }

    /// Runs `step` as member `who`, killed at a random instant when `kill`; whether the kill
    /// landed (the command was still running).
    fn perform(&mut self, cx: &mut Cx, who: usize, step: Step, kill: bool) -> Result<bool, Violated> {
        let member = &self.members[who];
        let (input, out) = (member.file("input"), member.file("out"));
        let _ = std::fs::remove_file(&out);
        let (args, change) = match step {
            Step::Put { key } => {
                let len = cx.size();
                let bytes = cx.bytes(len);
                std::fs::write(&input, &bytes).map_err(|e| Violated::Harness(format!("{}: {e}", input.display())))?;
                (vec!["obj".into(), "put".into(), arg(&input), key.to_string()], Some((key, Pending::Write(bytes))))
            }
            Step::Remove { key } => (vec!["obj".into(), "rm".into(), key.to_string()], Some((key, Pending::Remove))),
            Step::Get { key } => (vec!["obj".into(), "get".into(), key.to_string(), "-o".into(), arg(&out)], None),
            Step::List => (vec!["obj".into(), "ls".into()], None),
        };
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let instant = self.pace.instant(&procs::kind(&step), &mut cx.rng);
        let how = if kill { Kill::Itself(instant) } else { Kill::Nobody };
        cx.say(format_args!(
            "member {who}: {step:?}{}",
            if kill { format!(", killed after {} ms", instant.as_millis()) } else { String::new() }
        ));
        let (ran, killed) = member.run(&args, how)?;
        ran.no_violation()?;
        if killed.killed {
            cx.report.interrupted += 1;
            if let Some((key, pending)) = change {
                self.model.interrupted(key, pending);
            }
            // A get killed midway leaves no output, or the whole object (renamed at its end).
            if let (Step::Get { key }, Ok(bytes)) = (step, std::fs::read(&out)) {
                self.model.observe(key, Some(&bytes))?;
            }
            return Ok(true);
        }
        match ran.code {
            Some(0) => {
                cx.report.acknowledged += 1;
                self.pace.observe(&procs::kind(&step), ran.took);
                match change {
                    Some((key, Pending::Write(bytes))) => self.model.ack_write(key, bytes),
                    Some((key, Pending::Remove)) => self.model.ack_remove(key),
                    None => {}
                }
                if let Step::Get { key } = step {
                    let bytes =
                        std::fs::read(&out).map_err(|e| Violated::Harness(format!("{}: {e}", out.display())))?;
                    self.model.observe(key, Some(&bytes))?;
                    cx.report.checks += 1;
                }
            }
            Some(5) if matches!(step, Step::Get { .. }) => {
                if let Step::Get { key } = step {
                    self.model.observe(key, None)?;
                    cx.report.checks += 1;
                }
            }
            // Aborted: another member's operation was pending, and nothing changed.
            Some(EXIT_ABORTED) => {}
            _ => return Err(ran.not_converged()),
        }
        Ok(false)
    }

    /// After a member's restart: both members (the restarted one first) read every key and
    /// list the group, and it all agrees with what was acknowledged.
    fn verify(&mut self, cx: &mut Cx, restarted: usize) -> Result<(), Violated> {
        for who in [restarted, 1 - restarted] {
            for key in self.model.names() {
                let out = self.members[who].file("check");
                let _ = std::fs::remove_file(&out);
                let ran = self.until_done(cx, who, &["obj", "get", &key, "-o", &arg(&out)])?;
                let read = match ran.code {
                    Some(0) => {
                        Some(std::fs::read(&out).map_err(|e| Violated::Harness(format!("{}: {e}", out.display())))?)
                    }
                    _ => None,
                };
                self.model.observe(&key, read.as_deref())?;
                cx.report.checks += 1;
            }
            let listed = self.until_done(cx, who, &["--json", "obj", "ls"])?;
            let listed: BTreeSet<String> = procs::json_array(&listed.stdout, "keys").into_iter().collect();
            self.model.observe_listing(&listed)?;
            cx.report.checks += 1;
        }
        Ok(())
    }

    /// A command that must succeed (or, for a get, prove the key absent), tried again while it
    /// aborts on another member's pending operation.
    fn until_done(&self, cx: &mut Cx, who: usize, args: &[&str]) -> Result<Ran, Violated> {
        for _ in 0..ABORT_RETRIES {
            let (ran, _) = self.members[who].run(args, Kill::Nobody)?;
            ran.no_violation()?;
            match ran.code {
                Some(EXIT_ABORTED) => {
                    cx.report.retries += 1;
                    thread::sleep(Duration::from_millis(50));
                }
                Some(0) => return Ok(ran),
                Some(5) if args.get(1) == Some(&"get") => return Ok(ran),
                _ => return Err(ran.not_converged()),
            }
        }
        let (ran, _) = self.members[who].run(args, Kill::Nobody)?;
        ran.must_succeed()?;
        Ok(ran)
    }
}
