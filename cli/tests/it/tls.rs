//! The `vouch` binary over TLS as a user sets it up: `vouch tls-cert`, `vouch serve
//! --tls-cert/--tls-key`, `vouch init --ca`, then verified commands over https://. And the
//! startup refusals: an empty client token, half a TLS pair.

use std::path::Path;
use std::process::{Command, Output};

use crate::common;

use common::{Server, VOUCH};

fn vouch(args: &[&str]) -> Output {
    Command::new(VOUCH).args(args).env("RUST_LOG", "off").output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn serve_tls(data: &Path, cert: &Path, key: &Path) -> Server {
    common::serve(data, &["--tls-cert", path(cert), "--tls-key", path(key)])
}

#[test]
fn a_self_signed_pair_serves_https_to_a_client_that_pins_it() {
    let dir = tempfile::tempdir().unwrap();
    let certs = dir.path().join("tls");
    let out = vouch(&["tls-cert", "--host", "127.0.0.1", "--host", "localhost", "--out", path(&certs)]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let (cert, key) = (certs.join("cert.pem"), certs.join("key.pem"));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&key).unwrap().permissions().mode() & 0o777, 0o600);
    }
    // Never over an existing pair.
    let again = vouch(&["tls-cert", "--host", "127.0.0.1", "--out", path(&certs)]);
    assert!(!again.status.success() && text(&again.stderr).contains("exists"), "{}", text(&again.stderr));

    let server = serve_tls(&dir.path().join("data"), &cert, &key);
    assert!(server.url.starts_with("https://"), "{}", server.url);
    let state = dir.path().join("state");
    let out = vouch(&["--state", path(&state), "init", "--server", &server.url, "--token", "secret-token"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    // Without --ca the self-signed certificate is not trusted: unreachable (4), not a lie.
    assert!(text(&out.stdout).contains("NOT reachable"), "{}", text(&out.stdout));
    std::fs::remove_dir_all(&state).unwrap();
    let out = vouch(&[
        "--state",
        path(&state),
        "init",
        "--server",
        &server.url,
        "--token",
        "secret-token",
        "--ca",
        path(&cert),
    ]);
    assert!(out.status.success() && text(&out.stdout).contains("reachable ("), "{}", text(&out.stdout));

    let file = dir.path().join("f.txt");
    std::fs::write(&file, "hello over tls\n".repeat(1000)).unwrap();
    let out = vouch(&["--state", path(&state), "put", path(&file)]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let back = dir.path().join("back.txt");
    let out = vouch(&["--state", path(&state), "get", "f.txt", "-o", path(&back)]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(std::fs::read(&back).unwrap(), std::fs::read(&file).unwrap());
}

#[test]
fn serve_refuses_an_empty_token_and_half_a_tls_pair() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let out = vouch(&["serve", "--listen", "127.0.0.1:0", "--data", path(&data), "--client", "alice="]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("empty token"), "{}", text(&out.stderr));

    let out = vouch(&["serve", "--listen", "127.0.0.1:0", "--data", path(&data), "--tls-cert", "c.pem"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
}
