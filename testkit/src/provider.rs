//! A provider served on loopback for a test: the honest [`Provider`], or one wrapped in
//! [`Misbehaving`] to lie as told ([`Misbehave::None`]: every request passed through).

use std::collections::HashMap;
use std::path::Path;
use vouch_misbehave::{Misbehave, Misbehaving};
use vouch_server::{token_hash, Blocks, RunningServer, ServeOptions, Service};

/// Alice's token.
pub const TOKEN: &str = "test-token";
/// Bob's token: another namespace on the same provider.
pub const TOKEN_BOB: &str = "bob-token";

/// Alice alone, as a provider's clients are given here: each a bearer token and the name the
/// provider knows it by.
pub const ALICE: &[(&str, &str)] = &[(TOKEN, "alice")];
/// Alice and Bob.
pub const ALICE_AND_BOB: &[(&str, &str)] = &[(TOKEN, "alice"), (TOKEN_BOB, "bob")];

/// A free port on loopback.
pub const ANY_PORT: &str = "127.0.0.1:0";

/// The provider over `data` (its metadata, and its blobs unless `blocks` puts them in S3),
/// lying as `lie`, served on a free loopback port to `clients` with `options`.
pub async fn start(
    data: &Path,
    blocks: &Blocks,
    lie: Misbehave,
    options: ServeOptions,
    clients: &[(&str, &str)],
) -> RunningServer<Misbehaving> {
    serve(ANY_PORT, lying(data, blocks, lie), options, clients).await
}

/// The provider over `data`, lying as `lie`, not yet served.
pub fn lying(data: &Path, blocks: &Blocks, lie: Misbehave) -> Misbehaving {
    Misbehaving::open_dir(data, blocks, lie).unwrap()
}

/// `service` (a [`Provider`] itself, or one lying) served on `listen` to `clients` with
/// `options`, until shut down.
pub async fn serve<S: Service>(
    listen: &str,
    service: S,
    options: ServeOptions,
    clients: &[(&str, &str)],
) -> RunningServer<S> {
    let clients: HashMap<[u8; 32], String> =
        clients.iter().map(|(token, name)| (token_hash(token), name.to_string())).collect();
    vouch_server::start_with(listen, service, clients, options, std::future::pending()).await.unwrap()
}
