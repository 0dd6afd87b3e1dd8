//! Where a log's things live: everything of one owner's log is under `por/<name>/`, its
//! objects in the blob store and its records in the metadata store.
//!
//! `<name>` is the owner's BLAKE3 hash (derive-key mode), in hex: an owner is opaque bytes of
//! any length (the server's are `<client>/<file id in hex>`, up to ~130 bytes), and hex of
//! that would exceed a file name's 255 bytes in the local backend. The owner itself is kept
//! in the state record, and checked at open.

use vouch_core::por::Region;

/// One stored level or C: a folder of segments of `per_segment` slots each, and its sealed
/// checksums.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct ObjectRef {
    pub region: Region,
    /// When its slots were written (the time its sealed checksums are bound to).
    pub time: u64,
    pub slots: u64,
    pub per_segment: u64,
    /// `Some(j)`: not a part but stage `j` of a C being built (`coded_build`).
    pub stage: Option<u8>,
}

impl ObjectRef {
    pub fn segments(&self) -> u64 {
        self.slots.div_ceil(self.per_segment)
    }

    /// The slots of segment `number`.
    pub fn segment_slots(&self, number: u64) -> std::ops::Range<u64> {
        let start = number * self.per_segment;
        start..(start + self.per_segment).min(self.slots)
    }
}

/// The keys of one owner's log.
#[derive(Clone, Debug)]
pub(crate) struct Names {
    /// `por/<name>`.
    root: String,
}

impl Names {
    pub fn new(owner: &[u8]) -> Names {
        let hash = blake3::Hasher::new_derive_key("vouch store por owner v1").update(owner).finalize();
        Names { root: format!("por/{}", hash.to_hex()) }
    }

    /// The blob store's folder of the log's objects (for listing).
    pub fn folder(&self) -> &str {
        &self.root
    }

    /// The state record (metadata): schedule, width, the current objects.
    pub fn state(&self) -> Vec<u8> {
        format!("{}/state", self.root).into_bytes()
    }

    /// The writes of the open group (metadata), flat, when a group is open.
    pub fn staged(&self) -> Vec<u8> {
        format!("{}/staged", self.root).into_bytes()
    }

    /// U's slots (metadata), one entry per written index.
    pub fn raw(&self, index: u64) -> Vec<u8> {
        format!("{}/raw/{index:016x}", self.root).into_bytes()
    }

    /// U's sealed checksums (metadata), one entry per written index.
    pub fn raw_sealed_prefix(&self) -> Vec<u8> {
        format!("{}/raw-sealed/", self.root).into_bytes()
    }

    pub fn raw_sealed(&self, index: u64) -> Vec<u8> {
        format!("{}/raw-sealed/{index:016x}", self.root).into_bytes()
    }

    /// U's ⊥ slots (metadata), one empty entry per index whose last write was ⊥: the free
    /// slots the provider names for reuse (App. A.3).
    pub fn free_prefix(&self) -> Vec<u8> {
        format!("{}/free/", self.root).into_bytes()
    }

    pub fn free(&self, index: u64) -> Vec<u8> {
        format!("{}/free/{index:016x}", self.root).into_bytes()
    }

    /// A label the owner attached to a batch (metadata): opaque bytes, e.g. where a file's
    /// slots are. Keys are hex so that any bytes make a valid key.
    pub fn label(&self, key: &[u8]) -> Vec<u8> {
        let hex = base16ct::lower::encode_string(key);
        format!("{}/label/{hex}", self.root).into_bytes()
    }

    /// The index of a key under `prefix` (one of the two above).
    pub fn parse_index(prefix: &[u8], key: &[u8]) -> Option<u64> {
        let hex = std::str::from_utf8(key.strip_prefix(prefix)?).ok()?;
        (hex.len() == 16).then(|| u64::from_str_radix(hex, 16).ok()).flatten()
    }

    /// The folder of one object: a level or C as written at one time.
    pub fn group(&self, object: &ObjectRef) -> String {
        match (object.stage, object.region) {
            (Some(stage), _) => format!("{}/cstage-{stage:02}-{:016x}", self.root, object.time),
            (None, Region::Level(level)) => format!("{}/level-{level:02}-{:016x}", self.root, object.time),
            (None, _) => format!("{}/coded-{:016x}", self.root, object.time),
        }
    }

    /// A stashed slot of U (metadata): its value at the end of the epoch whose C is being
    /// built at `time`, kept because a write in the window changed it before C read it.
    pub fn stashes(&self) -> Vec<u8> {
        format!("{}/stash/", self.root).into_bytes()
    }

    pub fn stash_prefix(&self, time: u64) -> Vec<u8> {
        format!("{}/stash/{time:016x}/", self.root).into_bytes()
    }

    pub fn stash(&self, time: u64, index: u64) -> Vec<u8> {
        format!("{}/stash/{time:016x}/{index:016x}", self.root).into_bytes()
    }

    /// Segment `number` of an object's slots.
    pub fn segment(&self, object: &ObjectRef, number: u64) -> String {
        format!("{}/slots-{number:06}", self.group(object))
    }

    /// An object's sealed checksums, beside its segments.
    pub fn sealed(&self, object: &ObjectRef) -> String {
        format!("{}/sealed", self.group(object))
    }

    /// The object folder a blob key of this log is in.
    pub fn group_of<'k>(&self, key: &'k str) -> Option<&'k str> {
        let rest = key.strip_prefix(&self.root)?.strip_prefix('/')?;
        let end = rest.find('/')?;
        Some(&key[..self.root.len() + 1 + end])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_name_their_owner_and_parse_back() {
        let names = Names::new(b"alice/0123");
        assert_ne!(names.folder(), Names::new(b"alice/0124").folder());
        assert_eq!(names.folder().len(), "por/".len() + 64, "long owners still make short keys");
        let sealed = names.raw_sealed(0x2a);
        assert_eq!(Names::parse_index(&names.raw_sealed_prefix(), &sealed), Some(0x2a));
        assert_eq!(Names::parse_index(&names.raw_sealed_prefix(), &names.raw(0x2a)), None);
        assert_eq!(Names::parse_index(&names.free_prefix(), &names.free(0x2a)), Some(0x2a));
        assert_eq!(Names::parse_index(&names.free_prefix(), &sealed), None);
        assert!(names.stash(7, 0x2a).starts_with(&names.stash_prefix(7)));
        assert!(!names.stash(8, 0x2a).starts_with(&names.stash_prefix(7)));
        let object = ObjectRef { region: Region::Level(3), time: 16, slots: 16, per_segment: 4, stage: None };
        let segment = names.segment(&object, 2);
        assert_eq!(names.group_of(&segment), Some(names.group(&object).as_str()));
        assert_eq!(names.group_of(&names.sealed(&object)), Some(names.group(&object).as_str()));
        assert_eq!(names.group_of("por/other/level-03-0000000000000010/sealed"), None);
    }
}
