//! The functionality an authenticated data structure offers AIP (paper 003, Sec. 2.3–2.4).
//!
//! The server holds a state `s`; for the client's pending operations `μ` (its own, ending
//! with the current one) it computes a response and auxiliary data, `(r, σ_o) = query(s, μ)`;
//! the client, holding only the authenticator `a`, checks them and derives the next
//! authenticator, `a' = authexec(μ, a, r, σ_o)` (the paper's third output, "valid", is the
//! `Result`); the server then applies each operation, `s' = refresh(s, o)`. Here `σ'_o` never
//! travels: the server recomputes what it needs from its own state (Alg. 3, COMMIT-AUTH).

use super::wire::Wire;
use std::fmt::Debug;

/// An ADS: its operations, how the server answers them with auxiliary data (`query`), how a
/// client checks an answer against an authenticator and computes the next one (`authexec`),
/// how the server applies an operation (`refresh`), and which operations may run while others
/// are pending (`compatible`). Everything that travels has one canonical encoding ([`Wire`]),
/// which is also what signatures and the hash chain take.
pub trait Functionality {
    type Op: Clone + Debug + PartialEq + Wire;
    type Response: Clone + Debug + PartialEq + Wire;
    /// The authenticator `a` (a root hash).
    type Auth: Clone + Debug + PartialEq + Wire;
    /// Auxiliary data `σ_o` (proofs).
    type Aux: Clone + Debug + PartialEq + Wire;
    /// The server's state `s`; cloning it should be cheap (a persistent structure).
    type State: Clone;
    /// Why the server cannot answer an operation or apply it: an operation no state can
    /// take (a client's mistake), or a state that does not hold together (a bug).
    type StateError: std::error::Error + Clone + PartialEq + Eq;
    /// Why a client refuses an answer (`authexec`'s FALSE, with its reason).
    type VerifyError: std::error::Error + Clone + PartialEq + Eq;

    /// `query_F(s, μ)`: the response of the last operation of `ops` after the ones before it,
    /// with what a client needs to check the whole sequence.
    fn query(state: &Self::State, ops: &[Self::Op]) -> Result<(Self::Response, Self::Aux), Self::StateError>;

    /// `authexec_F(μ, a, r, σ_o)`: the authenticator after `ops` from `auth` when `aux` proves
    /// them and `response` is the last one's; an error (FALSE) otherwise.
    fn authexec(
        ops: &[Self::Op],
        auth: &Self::Auth,
        response: &Self::Response,
        aux: &Self::Aux,
    ) -> Result<Self::Auth, Self::VerifyError>;

    /// `refresh_F(s, o, ·)`: the server applies `op`; on an error `state` is unchanged.
    fn refresh(state: &mut Self::State, op: &Self::Op) -> Result<(), Self::StateError>;

    /// The authenticator of `state` (what the server's state should be authenticated by).
    fn auth_of(state: &Self::State) -> Self::Auth;

    /// `compatible_F(γ, o)`: whether `op`'s response is the same with `pending` before it.
    fn compatible(&self, pending: &[Self::Op], op: &Self::Op) -> bool;

    /// Whether `op` never changes the state (a query: Sec. 3.7).
    fn is_query(op: &Self::Op) -> bool;
}
