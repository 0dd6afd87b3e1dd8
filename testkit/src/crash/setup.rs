//! Kills while a group is made or joined: `vouch group init` or `vouch group join` killed at a
//! random instant, in a state of its own (a process of the provider's clients that makes a
//! group), then run again as its restart. Run again, it must either finish what the killed one
//! began or find it finished ("already a member"), never stop the user with a half-made group;
//! then both members put into the group and read each other's object back.

use std::path::Path;

use super::procs::{arg, Kill, Pace, Ran, Vouch};
use super::{Cx, Violated};

/// What a setup command may answer when run again after its kill: done, or done already.
fn converged(ran: &Ran) -> bool {
    ran.ok() || (ran.code == Some(6) && ran.stderr.contains("already a member"))
}

/// One group made by a fresh client of `owner_token` and joined by a fresh client of
/// `joiner_token`, one of the two commands killed: the loop's `n`-th.
pub(super) fn kill_one(
    bin: &Path,
    dir: &Path,
    url: &str,
    tokens: [&str; 2],
    pace: &mut Pace,
    cx: &mut Cx,
    n: usize,
) -> Result<bool, Violated> {
    let fresh =
        |i: usize| Vouch::new(bin, dir.join(format!("setup-{n}-{i}")), dir.join(format!("setup-{n}-{i}-scratch")));
    let (owner, joiner) = (fresh(0)?, fresh(1)?);
    owner.ok(&["init", "--server", url, "--token", tokens[0]])?;
    joiner.ok(&["init", "--server", url, "--token", tokens[1]])?;
    let group = format!("setup{n}");
    let key_file = arg(&dir.join(format!("{group}.key")));
    let init = ["group", "init", group.as_str(), "--key-out", key_file.as_str()];
    let join = ["group", "join", key_file.as_str(), "--id", "1"];
    let kill_join = cx.rng.percent(50);
    let (who, args): (&Vouch, &[&str]) = match kill_join {
        false => (&owner, &init),
        true => {
            owner.ok(&init)?;
            (&joiner, &join)
        }
    };
    let kind = if kill_join { "group-join" } else { "group-init" };
    let instant = pace.instant(kind, &mut cx.rng);
    cx.say(format_args!("{kind} of {group}, killed after {} ms", instant.as_millis()));
    let (ran, killed) = who.run(args, Kill::Itself(instant))?;
    ran.no_violation()?;
    if !killed.killed {
        pace.observe(kind, ran.took);
        ran.must_succeed()?;
    }
    // The restart: the same command again.
    let (again, _) = who.run(args, Kill::Nobody)?;
    again.no_violation()?;
    if !converged(&again) {
        return Err(again.not_converged());
    }
    if !kill_join {
        joiner.ok(&join)?;
    }
    // Both members write, and each reads the other's object.
    for (writer, reader, key) in [(&owner, &joiner, "from-owner"), (&joiner, &owner, "from-joiner")] {
        let (input, out) = (writer.file("setup-in"), reader.file("setup-out"));
        let len = cx.size();
        let bytes = cx.bytes(len);
        std::fs::write(&input, &bytes).map_err(|e| Violated::Harness(format!("{}: {e}", input.display())))?;
        writer.ok(&["obj", "put", &arg(&input), key, "--group", &group])?;
        reader.ok(&["obj", "get", key, "-o", &arg(&out), "--group", &group])?;
        let read = std::fs::read(&out).map_err(|e| Violated::Harness(format!("{}: {e}", out.display())))?;
        if read != bytes {
            let what = format!("object {key} of group {group}");
            return Err(Violated::Lost {
                what,
                detail: format!("read back {} bytes, not the {} put", read.len(), bytes.len()),
            });
        }
        cx.report.checks += 1;
    }
    if killed.killed {
        cx.report.interrupted += 1;
        cx.report.restarts += 1;
    }
    Ok(killed.killed)
}
