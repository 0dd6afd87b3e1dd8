//! The check of an audit's possession proof.

use crate::error::ClientError;
use crate::violation::ViolationKind;
use vouch_core::namespace::VersionRecord;
use vouch_core::pdp::{self, Auditor, Challenge, PossessionProof};

/// The possession proof `proof` for `challenge` over the proven version `record`, checked by
/// `auditor` (the owner's key, or anyone's public key for the RSA schemes). Returns how many
/// blocks it covers.
pub fn possession(
    auditor: &impl Auditor,
    record: &VersionRecord,
    challenge: &Challenge,
    proof: &[u8],
) -> Result<usize, ClientError> {
    if record.len == 0 {
        // Nothing to hold: the proven record says the version is empty.
        if !proof.is_empty() {
            return Err(ClientError::violation(
                ViolationKind::MalformedAnswer,
                "a possession proof for a version proven empty",
            ));
        }
        return Ok(0);
    }
    let proof = PossessionProof::from_bytes(proof).map_err(ClientError::caught(ViolationKind::BadAuditProof))?;
    let c = record.client_file();
    pdp::verify_possession(auditor, &c.file, &c.root, c.len, challenge, &proof)
        .map_err(ClientError::caught(ViolationKind::BadAuditProof))?;
    Ok(proof.blocks.len())
}
