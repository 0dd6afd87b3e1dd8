//! A provider on a loopback port and a client of it, as the end-to-end benches run them.

use crate::measure::SelfCheckFailed;
use std::collections::HashMap;
use std::path::Path;
use vouch_client::Client;
use vouch_server::{token_hash, Blocks, Provider, RunningServer};

pub(crate) struct Running {
    pub(crate) server: RunningServer,
    pub(crate) client: Client,
}

/// A provider over `dir` with its blocks where `blocks` says, serving on a loopback port, and a
/// client of it.
pub(crate) async fn start(blocks: &Blocks, dir: &Path) -> Result<Running, SelfCheckFailed> {
    let fail = |e: &dyn std::fmt::Display| SelfCheckFailed(e.to_string());
    let provider = Provider::open_dir(dir, blocks).map_err(|e| fail(&e))?;
    let clients = HashMap::from([(token_hash("bench"), "bench".to_string())]);
    let server =
        vouch_server::start("127.0.0.1:0", provider, clients, std::future::pending()).await.map_err(|e| fail(&e))?;
    let client =
        Client::init(&dir.join("client"), &format!("http://{}", server.addr), "bench").map_err(|e| fail(&e))?;
    Ok(Running { server, client })
}
