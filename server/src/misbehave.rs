//! Deliberate lies, for tests and `vouch demo`: each one is a way an untrusted provider can
//! cheat, and the client must catch every one of them.

use std::fmt;
use std::str::FromStr;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Misbehave {
    /// Honest.
    #[default]
    None,
    /// Flip a byte of a block it serves (reads and audits) or of a tag it lists (sync).
    CorruptBlock,
    /// Leave a block out of what it serves.
    DropBlock,
    /// Serve two blocks in each other's place.
    SwapBlocks,
    /// Acknowledge changes with valid proofs, then forget them: later answers come from the
    /// state before (a rollback of the whole namespace).
    Rollback,
    /// Serve the previous version of a file as its latest.
    OldVersion,
    /// Answer each audit of a file with the first proof it made for it.
    ReplayProof,
    /// Answer an audit for another challenge than the one asked.
    OtherChallenge,
    /// Leave the first name out of listings.
    HideFile,
    /// Stop a read stream after its first chunk.
    TruncateStream,
    /// Say an old version that exists does not ("not found" for any version asked by number
    /// but the latest).
    HideVersion,
}

impl Misbehave {
    pub const ALL: [Misbehave; 11] = [
        Misbehave::None,
        Misbehave::CorruptBlock,
        Misbehave::DropBlock,
        Misbehave::SwapBlocks,
        Misbehave::Rollback,
        Misbehave::OldVersion,
        Misbehave::ReplayProof,
        Misbehave::OtherChallenge,
        Misbehave::HideFile,
        Misbehave::TruncateStream,
        Misbehave::HideVersion,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Misbehave::None => "none",
            Misbehave::CorruptBlock => "corrupt-block",
            Misbehave::DropBlock => "drop-block",
            Misbehave::SwapBlocks => "swap-blocks",
            Misbehave::Rollback => "rollback",
            Misbehave::OldVersion => "old-version",
            Misbehave::ReplayProof => "replay-proof",
            Misbehave::OtherChallenge => "other-challenge",
            Misbehave::HideFile => "hide-file",
            Misbehave::TruncateStream => "truncate-stream",
            Misbehave::HideVersion => "hide-version",
        }
    }
}

impl fmt::Display for Misbehave {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Misbehave {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Misbehave::ALL.into_iter().find(|m| m.name() == s).ok_or_else(|| {
            let names: Vec<&str> = Misbehave::ALL.iter().map(|m| m.name()).collect();
            format!("unknown misbehaviour {s:?}; one of: {}", names.join(", "))
        })
    }
}
