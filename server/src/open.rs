//! Opening a provider over its storage, written once for `vouch serve`, the benchmarks and the
//! tests: metadata in `DATA/meta.redb`, blocks in `DATA/blobs` or in an S3 bucket. Also the
//! operator's checks of that storage: `check_dir` and `rebuild_dir`.

use crate::Provider;
use std::path::{Path, PathBuf};
use vouch_store::{
    CheckReport, ConfigError, Faults, MetaDb, ObjectBlobs, RebuildReport, Repository, S3Config, StoreError,
};

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

impl OpenError {
    /// Whether what is stored is damaged (the metadata store can be rebuilt from the blobs).
    pub fn is_corrupt(&self) -> bool {
        matches!(self, OpenError::Store(StoreError::Corrupt { .. }))
    }
}

impl Provider {
    /// The provider whose metadata is in `data` (created if missing) and whose blocks are
    /// where `blocks` says.
    pub fn open_dir(data: &Path, blocks: &Blocks) -> Result<Provider, OpenError> {
        let blobs = blobs(data, blocks)?;
        let meta = MetaDb::open(&data.join("meta.redb"))?;
        Ok(Provider::open(blobs, meta)?)
    }

    /// [`Provider::open_dir`] over a blob store behind `faults`, which make it fail or garble
    /// what it stores when armed (for fault tests, and for the lying provider whose lie is
    /// its storage's: `vouch_misbehave`).
    pub fn open_dir_faulty(
        data: &Path,
        blocks: &Blocks,
        faults: std::sync::Arc<Faults>,
    ) -> Result<Provider, OpenError> {
        let blobs = blobs(data, blocks)?.with_faults(faults);
        let meta = MetaDb::open(&data.join("meta.redb"))?;
        Ok(Provider::open(blobs, meta)?)
    }
}

fn blobs(data: &Path, blocks: &Blocks) -> Result<ObjectBlobs, OpenError> {
    std::fs::create_dir_all(data).map_err(|source| OpenError::Directory { path: data.to_path_buf(), source })?;
    Ok(match blocks {
        Blocks::Local => ObjectBlobs::local(&data.join("blobs"))?,
        Blocks::S3(config) => ObjectBlobs::s3(config)?,
    })
}

/// Verifies every segment of the provider over `data` against its index (`vouch serve
/// --check`; see `vouch_store::Repository::check`).
pub async fn check_dir(data: &Path, blocks: &Blocks) -> Result<CheckReport, OpenError> {
    let repo = Repository::open(blobs(data, blocks)?, MetaDb::open(&data.join("meta.redb"))?)?;
    Ok(repo.check().await?)
}

/// Rebuilds the metadata store in `data` from the blobs, moving the old one aside (`vouch
/// serve --rebuild-index`; see `vouch_store::Repository::rebuild`). The clients' roots decide
/// whether the rebuilt state is the right one.
pub async fn rebuild_dir(data: &Path, blocks: &Blocks) -> Result<RebuildReport, OpenError> {
    let (repo, report) = Repository::rebuild(blobs(data, blocks)?, &data.join("meta.redb")).await?;
    repo.close().await?;
    Ok(report)
}
