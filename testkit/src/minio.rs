//! A MinIO server of a test's own, for the S3 storage backend.

use vouch_store::S3Config;

/// A MinIO server of our own on loopback, started by `scripts/minio.sh` (which installs MinIO
/// with `go install` the first time) and stopped when dropped.
pub struct Minio {
    dir: tempfile::TempDir,
    pub config: S3Config,
}

impl Minio {
    /// The `VOUCH_S3_*` variables a child process needs to reach this server.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        let c = &self.config;
        vec![
            ("VOUCH_S3_ENDPOINT", c.endpoint.clone().unwrap_or_default()),
            ("VOUCH_S3_BUCKET", c.bucket.clone()),
            ("VOUCH_S3_REGION", c.region.clone()),
            ("VOUCH_S3_ACCESS_KEY", c.access_key.clone()),
            ("VOUCH_S3_SECRET_KEY", c.secret_key.clone()),
        ]
    }

    pub fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let out = std::process::Command::new(script()).arg("start").arg(dir.path()).output().expect("run minio.sh");
        assert!(out.status.success(), "minio.sh start failed: {}", String::from_utf8_lossy(&out.stderr));
        let exports = String::from_utf8(out.stdout).unwrap();
        let var = |name: &str| {
            exports
                .lines()
                .find_map(|l| l.strip_prefix(&format!("export {name}=")))
                .unwrap_or_else(|| panic!("minio.sh printed no {name}: {exports}"))
                .to_string()
        };
        let config = S3Config {
            endpoint: Some(var("VOUCH_S3_ENDPOINT")),
            bucket: var("VOUCH_S3_BUCKET"),
            region: var("VOUCH_S3_REGION"),
            access_key: var("VOUCH_S3_ACCESS_KEY"),
            secret_key: var("VOUCH_S3_SECRET_KEY"),
        };
        Minio { dir, config }
    }
}

impl Drop for Minio {
    fn drop(&mut self) {
        let _ = std::process::Command::new(script()).arg("stop").arg(self.dir.path()).status();
    }
}

fn script() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/minio.sh")
}
