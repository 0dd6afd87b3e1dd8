//! Where a [`Remote`](crate::Remote)'s requests go when not over HTTP: a [`Link`] in the same
//! process, which sees every request and chooses every answer. The simulator
//! (`vouch_testkit::sim`) puts the provider behind one, with an adversary in between; the
//! client's checks, deadlines and limits are the same as over HTTP, since they read only what
//! a link gives them: a status, the provider's error body, and the answer's bytes.

use bytes::Bytes;
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use vouch_proto::Op;

/// Bytes arriving, or the connection failing under them.
pub type ByteStream = BoxStream<'static, Result<Bytes, std::io::Error>>;

/// One request as the client sends it.
pub struct LinkRequest {
    pub op: Op,
    /// The bearer token.
    pub token: String,
    /// The request's body: whole, or streamed (a put's upload).
    pub body: ByteStream,
}

/// One answer as the client reads it.
pub struct LinkAnswer {
    /// The HTTP status: 2xx is an answer, anything else an error whose body is an
    /// `ErrorBody` (or not, which the client reports as such).
    pub status: u16,
    /// The provider's own time for the request, in milliseconds (its `Server-Timing`).
    pub server_ms: Option<f64>,
    pub body: ByteStream,
}

/// A provider reached in the same process. `exchange` failing is the connection failing
/// (the client's `Unreachable`).
pub trait Link: Send + Sync + 'static {
    fn exchange(&self, request: LinkRequest) -> BoxFuture<'static, Result<LinkAnswer, std::io::Error>>;
}
