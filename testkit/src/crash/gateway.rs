//! The gateway's crash loop: `vouch gateway` over an honest provider is killed while an S3
//! application puts, gets, deletes and uploads in parts through it, then started again on the
//! same port and client state (settling a commit the kill cut short), and every acknowledged
//! object is read back through it. Now and then the client's `vouch audit` runs while the
//! gateway is down (the state's lock is free then), as a user would.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::io;
use std::path::Path;
use std::sync::mpsc;
use std::thread;

use super::model::{Model, Pending};
use super::procs::{self, arg, Daemon, Pace, Vouch};
use super::s3::{Response, S3};
use super::{Cx, Violated};

const BUCKET: &str = "crash-bucket";
const KEYS: [&str; 4] = ["k0", "k1", "k2", "dir/k3"];
const ACCESS: &str = "crash-app";
const SECRET: &str = "crash-secret-key";
/// How long a request after a restart may be answered "try again" (503).
const RETRY_FOR: std::time::Duration = std::time::Duration::from_secs(10);

#[derive(Clone, Copy, Debug)]
enum Step {
    Put {
        key: &'static str,
    },
    Get {
        key: &'static str,
    },
    Delete {
        key: &'static str,
    },
    /// A multipart upload of this many parts.
    Multipart {
        key: &'static str,
        parts: usize,
    },
}

pub fn run(bin: &Path, cx: &mut Cx) -> Result<(), Violated> {
    let harness = |e: io::Error| Violated::Harness(e.to_string());
    let dir = tempfile::tempdir().map_err(harness)?;
    let serve: Vec<OsString> = [
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--data",
        &arg(&dir.path().join("provider")),
        "--client",
        "alice=crash-token",
    ]
    .iter()
    .map(OsString::from)
    .collect();
    let provider = Daemon::start(bin, serve)?;
    let client = Vouch::new(bin, dir.path().join("client"), dir.path().join("scratch"))?;
    client.ok(&["init", "--server", &provider.url, "--token", "crash-token"])?;
    let host = format!("127.0.0.1:{}", procs::free_port()?);
    let config = dir.path().join("gateway.toml");
    std::fs::write(
        &config,
        format!("listen = \"{host}\"\ncache_mb = 8\n[[keys]]\naccess_key = \"{ACCESS}\"\nsecret_key = \"{SECRET}\"\n"),
    )
    .map_err(harness)?;
    let gateway_args: Vec<OsString> =
        ["--state", &arg(&client.state), "gateway", "--config", &arg(&config)].iter().map(OsString::from).collect();
    let mut gateway = Daemon::start(bin, gateway_args)?;
    let s3 = S3 { host, access_key: ACCESS.into(), secret_key: SECRET.into() };
    expect_ok(&s3.request("PUT", &format!("/{BUCKET}"), &[], b""), "create the bucket")?;
    let mut world = World { s3, model: Model::new(), pace: Pace::new(100) };
    world.perform(cx, Step::Put { key: KEYS[0] }, None)?;

    for kill in 1..=cx.plan.kills {
        cx.kill = kill;
        // Work with nothing killed first, now and then: more acknowledged state to lose.
        for _ in 0..cx.rng.below(3) {
            let step = world.choose(cx);
            world.perform(cx, step, None)?;
        }
        let step = world.choose(cx);
        let instant = world.pace.instant(&procs::kind(&step), &mut cx.rng);
        cx.say(format_args!("{step:?}, gateway killed after {} ms", instant.as_millis()));
        let mid = world.perform(cx, step, Some((instant, &mut gateway)))?;
        cx.report.kills += 1;
        cx.report.kills_mid_operation += usize::from(mid);
        if cx.rng.below(3) == 0 {
            // The user's own command while the gateway is down settles what it left.
            client.ok(&["audit"])?;
            cx.report.checks += 1;
        }
        gateway.restart()?;
        cx.report.restarts += 1;
        world.verify(cx)?;
    }
    Ok(())
}

struct World {
    s3: S3,
    model: Model,
    pace: Pace,
}

impl World {
    fn choose(&self, cx: &mut Cx) -> Step {
        let key = *cx.rng.pick(&KEYS).unwrap_or(&KEYS[0]);
        match cx.rng.below(10) {
            0..=3 => Step::Put { key },
            4..=5 => Step::Multipart { key, parts: 2 + cx.rng.below(3) as usize },
            6..=7 => Step::Get { key },
            8 if self.model.latest(key).is_some() => Step::Delete { key },
            _ => Step::Put { key },
        }
    }

    /// Runs `step` through the gateway, killing it at the given instant (while the step runs
    /// or after it ended); whether the kill landed mid-step.
    fn perform(
        &mut self,
        cx: &mut Cx,
        step: Step,
        kill: Option<(std::time::Duration, &mut Daemon)>,
    ) -> Result<bool, Violated> {
        let (change, parts) = match step {
            Step::Put { key } => {
                let len = cx.size();
                let body = cx.bytes(len);
                (Some((key, Pending::Write(body.clone()))), vec![body])
            }
            Step::Multipart { key, parts } => {
                let parts: Vec<Vec<u8>> = (0..parts)
                    .map(|_| {
                        let len = cx.size();
                        cx.bytes(len)
                    })
                    .collect();
                (Some((key, Pending::Write(parts.concat()))), parts)
            }
            Step::Delete { key } => (Some((key, Pending::Remove)), Vec::new()),
            Step::Get { .. } => (None, Vec::new()),
        };
        let (done_tx, done_rx) = mpsc::channel();
        let started = std::time::Instant::now();
        let (answer, mid) = thread::scope(|scope| {
            let s3 = &self.s3;
            let parts = &parts;
            scope.spawn(move || {
                let _ = done_tx.send(send(s3, step, parts));
            });
            match kill {
                None => (done_rx.recv().unwrap_or_else(|_| Err(io::Error::other("the request thread failed"))), false),
                Some((instant, gateway)) => match done_rx.recv_timeout(instant) {
                    Ok(answer) => {
                        thread::sleep(instant.saturating_sub(started.elapsed()));
                        gateway.kill();
                        (answer, false)
                    }
                    Err(_) => {
                        gateway.kill();
                        (done_rx.recv().unwrap_or_else(|_| Err(io::Error::other("the request thread failed"))), true)
                    }
                },
            }
        });
        let took = started.elapsed();
        let what = format!("{step:?}");
        match answer {
            Ok(response) if response.status == 502 => Err(violation(&what, &response)),
            Ok(response) if (200..300).contains(&response.status) => {
                cx.report.acknowledged += 1;
                if !mid {
                    self.pace.observe(&procs::kind(&step), took);
                }
                match change {
                    Some((key, Pending::Write(bytes))) => self.model.ack_write(key, bytes),
                    Some((key, Pending::Remove)) => self.model.ack_remove(key),
                    None => {}
                }
                if let Step::Get { key } = step {
                    self.model.observe(key, Some(&response.body))?;
                    cx.report.checks += 1;
                }
                Ok(mid)
            }
            Ok(response) if response.status == 404 && matches!(step, Step::Get { .. }) => {
                if let Step::Get { key } = step {
                    self.model.observe(key, None)?;
                    cx.report.checks += 1;
                }
                Ok(mid)
            }
            // Cut short by the kill: the connection failed, or the gateway's S3 client side
            // (the provider) answered an error on the way down.
            _ if mid => {
                cx.report.interrupted += 1;
                if let Some((key, pending)) = change {
                    self.model.interrupted(key, pending);
                }
                Ok(mid)
            }
            Ok(response) => Err(refused(&what, &response)),
            Err(e) => Err(Violated::NotConverged { command: what, code: None, stderr: e.to_string() }),
        }
    }

    /// After a restart: every key reads back as acknowledged, and the listing agrees.
    fn verify(&mut self, cx: &mut Cx) -> Result<(), Violated> {
        for key in self.model.names() {
            let what = format!("GET {key} after the restart");
            let response = self.until_done(cx, "GET", &object(&key), &[])?;
            let read = match response.status {
                200 => Some(response.body),
                404 => None,
                502 => return Err(violation(&what, &response)),
                _ => return Err(refused(&what, &response)),
            };
            self.model.observe(&key, read.as_deref())?;
            cx.report.checks += 1;
        }
        let what = "ListObjectsV2 after the restart";
        let listing = self.until_done(cx, "GET", &format!("/{BUCKET}"), &[("list-type", "2")])?;
        expect_ok(&Ok(listing), what).and_then(|listing| {
            let keys: BTreeSet<String> = listing.tags("Key").into_iter().collect();
            self.model.observe_listing(&keys)
        })?;
        cx.report.checks += 1;
        Ok(())
    }
}

impl World {
    /// A request after the restart, sent again while the gateway answers 503 ("try again", as
    /// S3 SDKs do), for up to [`RETRY_FOR`]: the provider may still be finishing what the
    /// killed gateway's connection left.
    fn until_done(&self, cx: &mut Cx, method: &str, path: &str, query: &[(&str, &str)]) -> Result<Response, Violated> {
        let what = format!("{method} {path} after the restart");
        let started = std::time::Instant::now();
        loop {
            let response = self.s3.request(method, path, query, b"").map_err(|e| not_converged(&what, e))?;
            if response.status != 503 || started.elapsed() > RETRY_FOR {
                return Ok(response);
            }
            cx.report.retries += 1;
            cx.say(format_args!("{what}: 503 after {} ms, again", started.elapsed().as_millis()));
            thread::sleep(std::time::Duration::from_millis(100));
        }
    }
}

/// The requests of `step`; the last answer (or the first that failed).
fn send(s3: &S3, step: Step, parts: &[Vec<u8>]) -> io::Result<Response> {
    match step {
        Step::Put { key } => s3.request("PUT", &object(key), &[], parts.first().map_or(&[][..], Vec::as_slice)),
        Step::Get { key } => s3.request("GET", &object(key), &[], b""),
        Step::Delete { key } => s3.request("DELETE", &object(key), &[], b""),
        Step::Multipart { key, .. } => {
            let created = s3.request("POST", &object(key), &[("uploads", "")], b"")?;
            let Some(upload) = created.tags("UploadId").pop().filter(|_| created.status == 200) else {
                return Ok(created);
            };
            let mut completed = String::from("<CompleteMultipartUpload>");
            for (i, part) in parts.iter().enumerate() {
                let number = (i + 1).to_string();
                let sent = s3.request("PUT", &object(key), &[("partNumber", &number), ("uploadId", &upload)], part)?;
                let Some(etag) = sent.header("etag").filter(|_| sent.status == 200).map(str::to_string) else {
                    return Ok(sent);
                };
                completed.push_str(&format!("<Part><PartNumber>{number}</PartNumber><ETag>{etag}</ETag></Part>"));
            }
            completed.push_str("</CompleteMultipartUpload>");
            let done = s3.request("POST", &object(key), &[("uploadId", &upload)], completed.as_bytes())?;
            // CompleteMultipartUpload may answer 200 with an error in its body.
            if done.status == 200 && done.text().contains("<Error>") {
                return Ok(Response { status: 500, ..done });
            }
            Ok(done)
        }
    }
}

fn object(key: &str) -> String {
    format!("/{BUCKET}/{key}")
}

fn expect_ok(answer: &io::Result<Response>, what: &str) -> Result<Response, Violated> {
    match answer {
        Ok(r) if (200..300).contains(&r.status) => {
            Ok(Response { status: r.status, headers: r.headers.clone(), body: r.body.clone() })
        }
        Ok(r) if r.status == 502 => Err(violation(what, r)),
        Ok(r) => Err(refused(what, r)),
        Err(e) => Err(Violated::NotConverged { command: what.into(), code: None, stderr: e.to_string() }),
    }
}

/// The gateway's `VouchIntegrityViolation` (HTTP 502): a lie caught, after an honest crash.
fn violation(what: &str, r: &Response) -> Violated {
    let kind = r.header("x-vouch-violation").unwrap_or("?");
    Violated::Misbehaved { command: what.into(), stderr: format!("HTTP 502 ({kind}): {}", r.text()) }
}

fn refused(what: &str, r: &Response) -> Violated {
    Violated::NotConverged { command: what.into(), code: Some(i32::from(r.status)), stderr: r.text() }
}

fn not_converged(what: &str, e: io::Error) -> Violated {
    Violated::NotConverged { command: what.into(), code: None, stderr: e.to_string() }
}
