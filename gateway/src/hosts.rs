//! Which bucket a request's Host header names: virtual-hosted-style addressing
//! (`BUCKET.<domain>`) under the configured domain, path style (`/BUCKET/KEY`) for every other
//! host. Unlike the S3 protocol crate's own single-domain parser, a host outside the domain
//! (an IP address, `localhost`) is never taken as a bucket's name itself, so that path-style
//! clients keep working beside virtual-hosted ones.

use s3s::host::{S3Host, VirtualHost};
use s3s::S3Result;

pub(crate) struct VirtualHosts {
    domain: String,
}

impl VirtualHosts {
    pub(crate) fn new(domain: &str) -> VirtualHosts {
        VirtualHosts { domain: domain.to_ascii_lowercase() }
    }
}

/// Labels of letters, digits and '-', joined by '.'.
pub(crate) fn is_domain(name: &str) -> bool {
    !name.is_empty()
        && name
            .split('.')
            .all(|label| !label.is_empty() && label.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'))
}

impl S3Host for VirtualHosts {
    fn parse_host_header<'a>(&'a self, host: &'a str) -> S3Result<VirtualHost<'a>> {
        // Without its port; an IPv6 literal (`[::1]:9000`) is no bucket's host.
        if host.starts_with('[') {
            return Ok(VirtualHost::new(self.domain.as_str()));
        }
        let name = match host.rsplit_once(':') {
            Some((name, port)) if port.parse::<u16>().is_ok() => name,
            _ => host,
        };
        let name = name.to_ascii_lowercase();
        let bucket = name.strip_suffix(self.domain.as_str()).and_then(|rest| rest.strip_suffix('.'));
        Ok(match bucket {
            Some(bucket) if !bucket.is_empty() => {
                VirtualHost::new(self.domain.as_str()).with_bucket(bucket.to_string())
            }
            _ => VirtualHost::new(self.domain.as_str()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bucket(host: &str) -> Option<String> {
        VirtualHosts::new("S3.Example.test").parse_host_header(host).unwrap().bucket().map(str::to_string)
    }

    #[test]
    fn a_host_under_the_domain_names_its_bucket_and_any_other_is_path_style() {
        assert_eq!(bucket("photos.s3.example.test"), Some("photos".into()));
        assert_eq!(bucket("Photos.S3.example.test:9000"), Some("photos".into()));
        assert_eq!(bucket("my.dotted.bucket.s3.example.test"), Some("my.dotted.bucket".into()));
        for path_style in ["s3.example.test", "s3.example.test:9000", "127.0.0.1:9000", "localhost", "[::1]:9000"] {
            assert_eq!(bucket(path_style), None, "{path_style}");
        }
        assert_eq!(bucket("evil-s3.example.test"), None, "a suffix that is no label of its own");
        assert_eq!(bucket(".s3.example.test"), None);
        assert!(is_domain("s3.localhost") && !is_domain("s3..x") && !is_domain("a:9000") && !is_domain(""));
    }
}
