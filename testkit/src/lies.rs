//! What a client must make of each lie of [`Misbehave`]: the one table the tests hold every
//! lie to (`client/tests/it/lie_matrix.rs` runs them all against it). Each entry is what the
//! lie's own tests assert; a new lie does not compile until it has one.

use vouch_client::ViolationKind as Kind;
use vouch_misbehave::Misbehave;

/// What a client must make of a lie, met by the operation it targets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expect {
    /// No lie: every operation succeeds, and every audit verifies.
    Honest,
    /// The operation the lie targets fails as `ClientError::Misbehaved`, caught by the check
    /// for exactly this kind. (Other operations may meet the lie elsewhere: an altered block
    /// fails an audit's proof too, as `BadAuditProof`; its own tests cover those.)
    Caught(Kind),
    /// A PoR audit answers, but with failed parts in its report (the copy it checks at random
    /// among them), which `PorAuditReport::into_result` makes `BadPorAudit`: an audit is a
    /// report of what holds, not an error.
    AuditPartFails,
    /// Not a lie: an honest provider can fail, or be slow, this way. The client never reports
    /// it as `Misbehaved`, and goes on once the provider is well again.
    NotALie,
    /// A lie the client's own record overrules: never believed, never reported as
    /// `Misbehaved` (the refusal that sets it up is an honest failure), and the client goes on
    /// while the provider still tells it.
    Overruled,
}

/// What a client must make of `lie` (derived from the assertions of the lie's own tests,
/// named beside each entry, in `client/tests/it` unless said otherwise).
pub fn expected(lie: Misbehave) -> Expect {
    use Expect::*;
    match lie {
        Misbehave::None => Honest,
        // Reads and audits: misbehave.rs; bindings.rs (stretch-block, past-range);
        // public_audit.rs; the lies of `vouch demo`.
        Misbehave::CorruptBlock => Caught(Kind::AlteredBlock),
        Misbehave::DropBlock => Caught(Kind::MissingBlock),
        Misbehave::SwapBlocks => Caught(Kind::AlteredBlock),
        Misbehave::OldVersion => Caught(Kind::WrongVersion),
        Misbehave::ReplayProof => Caught(Kind::BadAuditProof),
        Misbehave::OtherChallenge => Caught(Kind::BadAuditProof),
        Misbehave::HideFile => Caught(Kind::HiddenName),
        Misbehave::TruncateStream => Caught(Kind::ShortStream),
        Misbehave::HideVersion => Caught(Kind::HiddenVersion),
        Misbehave::StretchBlock => Caught(Kind::BadReadProof),
        Misbehave::PastRange => Caught(Kind::BlocksPastRange),
        // Changes: misbehave.rs (rollback); bindings.rs (wrong-count, and refuse-commit: an
        // error, never `Misbehaved`); intents.rs (drop-answer); crash.rs (slow-commit).
        Misbehave::Rollback => Caught(Kind::BadLookupProof),
        Misbehave::WrongCount => Caught(Kind::BadCommitProof),
        Misbehave::RefuseCommit => NotALie,
        Misbehave::DropAnswer => NotALie,
        Misbehave::SlowCommit => NotALie,
        // PoR: por.rs (swap-por-slots, forge-por-aggregate, fail-por-writes, slow-por-write);
        // por_lies.rs; por_compact.rs (stale-por-label, flaky-por-writes); the server's por.rs.
        Misbehave::ForgePorAggregate => AuditPartFails,
        Misbehave::SwapPorSlots => Caught(Kind::BadPorRead),
        Misbehave::SkipPorRebuild => AuditPartFails,
        Misbehave::StalePorLevel => Caught(Kind::BadPorWrite),
        Misbehave::OtherPorChecksum => Caught(Kind::BadPorRead),
        Misbehave::FreePorLiveSlots => Caught(Kind::BadPorWrite),
        Misbehave::FailPorWrites => NotALie,
        Misbehave::FlakyPorWrites => NotALie,
        Misbehave::StalePorLabel => Caught(Kind::BadPorCopy),
        Misbehave::RefusedPorLabel => Overruled,
        Misbehave::DropPorLabels => AuditPartFails,
        Misbehave::DropPorAnswer => NotALie,
        Misbehave::SlowPorWrite => NotALie,
        // VICOS: vicos.rs (the forks meet); the gateway's group.rs.
        Misbehave::ForkAip => Caught(Kind::BadAipAnswer),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_honest_mode_is_honest() {
        for lie in Misbehave::ALL {
            assert_eq!(expected(lie) == Expect::Honest, lie == Misbehave::None, "{lie}");
        }
    }
}
