//! The functionality an authenticated data structure offers AIP (paper 003, Sec. 2.3–2.4).

use std::fmt::Debug;

/// An ADS: its operations, how the server answers them with auxiliary data (`query`), how a
/// client checks an answer against an authenticator and computes the next one (`authexec`),
/// how the server applies an operation (`refresh`), and which operations may run while others
/// are pending (`compatible`).
pub trait Functionality {
    type Op: Clone + Debug + PartialEq;
    type Response: Clone + Debug + PartialEq;
    /// The authenticator `a` (a root hash).
    type Auth: Clone + Debug + PartialEq;
    /// Auxiliary data `σ_o` (proofs).
    type Aux: Clone + Debug + PartialEq;
    /// The server's state `s`; cloning it should be cheap (a persistent structure).
    type State: Clone;

    /// The bytes signatures and the hash chain take for `op`.
    fn op_bytes(op: &Self::Op) -> Vec<u8>;
    fn auth_bytes(auth: &Self::Auth) -> Vec<u8>;

    /// `query_F(s, μ)`: the response of the last operation of `ops` after the ones before it,
    /// with what a client needs to check the whole sequence.
    fn query(state: &Self::State, ops: &[Self::Op]) -> (Self::Response, Self::Aux);

    /// `authexec_F(μ, a, r, σ_o)`: the authenticator after `ops` from `auth` when `aux` proves
    /// them and `response` is the last one's; `None` (FALSE) otherwise.
    fn authexec(ops: &[Self::Op], auth: &Self::Auth, response: &Self::Response, aux: &Self::Aux) -> Option<Self::Auth>;

    /// `refresh_F(s, o, ·)`: the server applies `op`.
    fn refresh(state: &mut Self::State, op: &Self::Op);

    /// The authenticator of `state` (what the server's state should be authenticated by).
    fn auth_of(state: &Self::State) -> Self::Auth;

    /// `compatible_F(γ, o)`: whether `op`'s response is the same with `pending` before it.
    fn compatible(&self, pending: &[Self::Op], op: &Self::Op) -> bool;

    /// Whether `op` never changes the state (a query: Sec. 3.7).
    fn is_query(op: &Self::Op) -> bool;
}
