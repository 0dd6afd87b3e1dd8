//! Opening a provider over its storage, written once for `vouch serve`, the benchmarks and the
//! tests: metadata in `DATA/meta.redb`, blocks in `DATA/blobs` or in an S3 bucket.

use crate::Provider;
use std::path::{Path, PathBuf};
use vouch_store::{ConfigError, MetaDb, ObjectBlobs, S3Config, StoreError};

/// Where a provider keeps its blocks.
#[derive(Clone, Debug)]
pub enum Blocks {
    /// In `DATA/blobs`, beside the metadata.
    Local,
    /// In an S3 bucket.
    S3(S3Config),
}

impl Blocks {
    /// From the `--s3` setting: none (local), `env` (the `VOUCH_S3_*` variables) or a file of
    /// `key = value` lines.
    pub fn from_setting(s3: Option<&str>) -> Result<Blocks, ConfigError> {
        Ok(match s3 {
            None => Blocks::Local,
            Some("env") => Blocks::S3(S3Config::from_env(None)?),
            Some(path) => Blocks::S3(S3Config::from_file(Path::new(path))?),
        })
    }
}

/// Why a provider could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("creating {path}: {source}")]
    Directory { path: PathBuf, source: std::io::Error },
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl Provider {
    /// The provider whose metadata is in `data` (created if missing) and whose blocks are
    /// where `blocks` says.
    pub fn open_dir(data: &Path, blocks: &Blocks) -> Result<Provider, OpenError> {
        std::fs::create_dir_all(data).map_err(|source| OpenError::Directory { path: data.to_path_buf(), source })?;
        let blobs = match blocks {
            Blocks::Local => ObjectBlobs::local(&data.join("blobs"))?,
            Blocks::S3(config) => ObjectBlobs::s3(config)?,
        };
        let meta = MetaDb::open(&data.join("meta.redb"))?;
        Ok(Provider::open(blobs, meta)?)
    }
}
