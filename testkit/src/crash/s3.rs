//! The smallest S3 client the gateway's crash loop needs: SigV4-signed HTTP/1.1 requests over
//! a plain TCP connection, one per request, answered whole or failed. The testkit has no HTTP
//! or hash crate of its own, so SHA-256 and HMAC are here too (a few dozen lines; checked
//! against the standard's test vectors below).

use std::io::{self, BufRead, BufReader, Write};
use std::net::TcpStream;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const REGION: &str = "us-east-1";
/// The most bytes of a body read into memory (the loop's objects are far smaller).
const MAX_BODY: usize = 1 << 30;

/// An S3 endpoint and the access key the requests are signed with.
pub struct S3 {
    /// `HOST:PORT`.
    pub host: String,
    pub access_key: String,
    pub secret_key: String,
}

/// An answer: its status, headers (names in lower case) and whole body.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The text of each `<tag>...</tag>` in the body.
    pub fn tags(&self, tag: &str) -> Vec<String> {
        let text = self.text();
        let (open, close) = (format!("<{tag}>"), format!("</{tag}>"));
        text.split(&open).skip(1).filter_map(|rest| rest.split(&close).next().map(str::to_string)).collect()
    }
}

impl S3 {
    /// `METHOD /path?query` with `body`, signed; an error when the connection fails or the
    /// answer is cut short.
    pub fn request(&self, method: &str, path: &str, query: &[(&str, &str)], body: &[u8]) -> io::Result<Response> {
        let (target, headers) = self.signed(method, path, query, body);
        let mut head = format!("{method} {target} HTTP/1.1\r\n");
        for (name, value) in &headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str(&format!("content-length: {}\r\nconnection: close\r\n\r\n", body.len()));
        let mut stream = TcpStream::connect(&self.host)?;
        stream.set_read_timeout(Some(Duration::from_secs(60)))?;
        stream.set_write_timeout(Some(Duration::from_secs(60)))?;
        stream.write_all(head.as_bytes())?;
        stream.write_all(body)?;
        read_response(BufReader::new(stream), method == "HEAD")
    }

    /// The request target (`/path?query`, encoded) and the headers that sign `METHOD` of it
    /// with `body` (SigV4: host, date, payload hash, authorization).
    pub fn signed(
        &self,
        method: &str,
        path: &str,
        query: &[(&str, &str)],
        body: &[u8],
    ) -> (String, Vec<(String, String)>) {
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_secs();
        let (date, stamp) = timestamp(now);
        let payload = hex(&sha256(body));
        let uri = encode(path, false);
        let mut pairs: Vec<(String, String)> = query.iter().map(|(k, v)| (encode(k, true), encode(v, true))).collect();
        pairs.sort();
        let query = pairs.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join("&");
        let signed = "host;x-amz-content-sha256;x-amz-date";
        let canonical = format!(
            "{method}\n{uri}\n{query}\nhost:{}\nx-amz-content-sha256:{payload}\nx-amz-date:{stamp}\n\n{signed}\n{payload}",
            self.host
        );
        let scope = format!("{date}/{REGION}/s3/aws4_request");
        let to_sign = format!("AWS4-HMAC-SHA256\n{stamp}\n{scope}\n{}", hex(&sha256(canonical.as_bytes())));
        let mut key = hmac(format!("AWS4{}", self.secret_key).as_bytes(), date.as_bytes());
        for part in [REGION, "s3", "aws4_request"] {
            key = hmac(&key, part.as_bytes());
        }
        let signature = hex(&hmac(&key, to_sign.as_bytes()));
        let target = if query.is_empty() { uri } else { format!("{uri}?{query}") };
        let authorization = format!(
            "AWS4-HMAC-SHA256 Credential={}/{scope}, SignedHeaders={signed}, Signature={signature}",
            self.access_key
        );
        let headers = [
            ("host", self.host.clone()),
            ("x-amz-date", stamp),
            ("x-amz-content-sha256", payload),
            ("authorization", authorization),
        ];
        (target, headers.into_iter().map(|(name, value)| (name.to_string(), value)).collect())
    }
}

fn read_response(mut from: impl BufRead, head_only: bool) -> io::Result<Response> {
    let bad = |what: &str| io::Error::new(io::ErrorKind::InvalidData, what.to_string());
    let mut line = String::new();
    from.read_line(&mut line)?;
    let status = line.split_whitespace().nth(1).and_then(|s| s.parse().ok()).ok_or_else(|| bad("no status line"))?;
    let mut headers = Vec::new();
    loop {
        line.clear();
        if from.read_line(&mut line)? == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        if let Some((name, value)) = l.split_once(':') {
            headers.push((name.trim().to_ascii_lowercase(), value.trim().to_string()));
        }
    }
    let mut response = Response { status, headers, body: Vec::new() };
    if head_only {
        return Ok(response);
    }
    if response.header("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
        loop {
            line.clear();
            from.read_line(&mut line)?;
            let size = usize::from_str_radix(line.trim().split(';').next().unwrap_or(""), 16)
                .map_err(|_| bad("bad chunk size"))?;
            if size == 0 {
                return Ok(response);
            }
            let start = response.body.len();
            if start + size > MAX_BODY {
                return Err(bad("a body past the loop's largest object"));
            }
            response.body.resize(start + size, 0);
            from.read_exact(&mut response.body[start..])?;
            line.clear();
            from.read_line(&mut line)?;
        }
    }
    match response.header("content-length").map(str::parse::<usize>) {
        Some(Ok(len)) if len > MAX_BODY => return Err(bad("a body past the loop's largest object")),
        Some(Ok(len)) => {
            response.body.resize(len, 0);
            from.read_exact(&mut response.body)?;
        }
        Some(Err(_)) => return Err(bad("bad content-length")),
        None => {
            from.read_to_end(&mut response.body)?;
        }
    }
    Ok(response)
}

/// SigV4's date (`YYYYMMDD`) and time stamp (`YYYYMMDDTHHMMSSZ`) of a UNIX time.
fn timestamp(secs: u64) -> (String, String) {
    let (days, rest) = (secs / 86_400, secs % 86_400);
    // Days to a civil date (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let date = format!("{year:04}{month:02}{day:02}");
    let stamp = format!("{date}T{:02}{:02}{:02}Z", rest / 3600, rest / 60 % 60, rest % 60);
    (date, stamp)
}

/// URI encoding as SigV4 wants it: unreserved characters as they are, `/` too in a path.
fn encode(s: &str, slash: bool) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            b'/' if !slash => "/".to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn hmac(key: &[u8], message: &[u8]) -> [u8; 32] {
    use hmac::Mac;
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(key).expect("HMAC takes a key of any length");
    mac.update(message);
    mac.finalize().into_bytes().into()
}

fn sha256(data: &[u8]) -> [u8; 32] {
    use sha2::Digest;
    sha2::Sha256::digest(data).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha256_and_hmac_match_the_standards() {
        assert_eq!(hex(&sha256(b"")), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
        assert_eq!(hex(&sha256(b"abc")), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        let long = b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
        assert_eq!(hex(&sha256(long)), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
        // RFC 4231, test case 2.
        assert_eq!(
            hex(&hmac(b"Jefe", b"what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn timestamps_are_civil_dates() {
        assert_eq!(timestamp(0), ("19700101".into(), "19700101T000000Z".into()));
        assert_eq!(timestamp(1_709_210_096).1, "20240229T123456Z");
        assert_eq!(encode("a b/c", false), "a%20b/c");
        assert_eq!(encode("a/b", true), "a%2Fb");
    }
}
