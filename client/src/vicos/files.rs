//! A member's group files in the client's state directory, for `vouch group` and `vouch obj`:
//! `groups/NAME.toml` (this member's id, the mode, the group key; private) and
//! `groups/NAME.aip` (its AIP state: the hash chain and what it still needs, saved after each
//! REPLY before the COMMIT leaves, and after each operation, so that a fork is caught across
//! runs, not only within one, and a crash mid-operation loses no COMMIT).
//!
//! A group key file (`vouch group init --key-out`) hands the group to other members: the
//! group's name, mode, keys, and the next free member id. The group signs one of two ways:
//! * HMAC (the paper's default, Sec. 5.1): one group key. Whoever holds the key file can sign
//!   as any member: share it only with the group.
//! * Ed25519: each member its own signing key, kept in its own `NAME.toml` only, and the
//!   group's roster of public keys. A key file holds the roster and no signing key; a member
//!   that joins adds itself, and the others import its roster (`vouch group roster`). Until
//!   they do, its operations are not checked, and not accepted: reported as an unknown member,
//!   not as the provider's lie (the provider could invent a member, but never sign for one).
//!
//! Either way a key file admits its holder at the provider (`vouch_core::aip::Admission`):
//! an HMAC group's admission secret comes from its key, an Ed25519 group's is in its files.
//! Share them only with the group. A roster holds public keys only, never the admission
//! secret: rosters go back and forth between members, and one that leaked would otherwise
//! let its holder speak to the provider as a member that has not spoken yet.

use super::{DirectObjects, Group, S3Access};
use crate::error::ClientError;
use crate::remote::Remote;
use crate::state::{write_atomic, StateDir};
use crate::transport::Transport;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use vouch_core::aip::{self, Adict, Admission, ClientId, Keyring, Mode};

/// `groups/NAME.toml`, and the body of a group key file (or roster).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupFile {
    pub group: String,
    /// This member's id (in a key file: the next free one).
    pub id: ClientId,
    /// `compatible` (Table 1) or `commutative` (the ACOP baseline).
    pub mode: String,
    /// An HMAC group: the HMAC-SHA256 group key, hex.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// An Ed25519 group, in this member's own file only: its secret seed, hex.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signing: Option<String>,
    /// An Ed25519 group: each member's public key, hex, by id.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub members: BTreeMap<String, String>,
    /// An Ed25519 group: its admission secret, hex (an HMAC group's comes from its key).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admission: Option<String>,
    /// In this member's own file only: it reaches the provider's S3 bucket itself, with
    /// these credentials ([`super::DirectObjects`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub direct: Option<S3Access>,
}

/// How a new group signs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Signatures {
    /// One HMAC-SHA256 group key (the paper's default).
    Hmac,
    /// A key pair per member.
    Ed25519,
}

impl GroupFile {
    /// The group's keys: the HMAC group key, or the Ed25519 roster with this member's own
    /// signing key.
    pub fn keys(&self) -> Result<Keyring, ClientError> {
        match (&self.key, self.members.is_empty()) {
            (Some(key), true) if self.signing.is_none() => Ok(Keyring::hmac(bytes32(key, "the group key")?)),
            (None, false) => {
                let me = match &self.signing {
                    Some(seed) => Some((self.id, bytes32(seed, "the signing key")?)),
                    None => None,
                };
                Keyring::ed25519(me, &self.roster()?).map_err(|e| bad(&e.to_string()))
            }
            _ => Err(bad("a group has either an HMAC key, or Ed25519 members (and no HMAC key)")),
        }
    }

    /// The group's admission secret: an Ed25519 group's, from this file; `None` for an HMAC
    /// group, whose secret comes from its key.
    pub fn admission(&self) -> Result<Option<Admission>, ClientError> {
        match (&self.key, &self.admission) {
            (Some(_), None) => Ok(None),
            (None, Some(hex)) => Ok(Some(Admission(bytes32(hex, "the admission secret")?))),
            (None, None) => Err(bad("an Ed25519 group's file holds its admission secret")),
            (Some(_), Some(_)) => Err(bad("an HMAC group's admission secret comes from its key, not from the file")),
        }
    }

    /// The Ed25519 roster: each member's public key by id.
    fn roster(&self) -> Result<BTreeMap<ClientId, [u8; 32]>, ClientError> {
        let id = |text: &str| text.parse::<ClientId>().map_err(|_| bad(&format!("{text:?} is not a member id")));
        self.members.iter().map(|(k, v)| Ok((id(k)?, bytes32(v, "a member's public key")?))).collect()
    }

    /// Adds the members of `other`'s roster (the same group's) that this one lacks; a member
    /// `other` names with another key than this roster is refused (two members took one id,
    /// or a roster was altered). Returns the ids added.
    pub fn import(&mut self, other: &GroupFile) -> Result<Vec<ClientId>, ClientError> {
        if other.group != self.group || self.key.is_some() || other.key.is_some() {
            return Err(bad("a roster imports into an Ed25519 group of the same name"));
        }
        let (mine, theirs) = (self.roster()?, other.roster()?);
        if let Some((id, _)) = theirs.iter().find(|(id, key)| mine.get(id).is_some_and(|k| k != *key)) {
            return Err(bad(&format!("the roster gives member {id} another key than the one known here")));
        }
        let added: Vec<ClientId> = theirs.keys().filter(|id| !mine.contains_key(id)).copied().collect();
        for id in &added {
            self.members.insert(id.to_string(), other.members[&id.to_string()].clone());
        }
        Ok(added)
    }

    /// This file as a key file for a new member: the group, its mode, its keys and admission
    /// secret, none of this member's own secrets, and the next free member id.
    pub fn shared(&self) -> Result<GroupFile, ClientError> {
        let next = self.roster()?.keys().next_back().map_or(self.id, |last| (*last).max(self.id)) + 1;
        Ok(GroupFile { id: next, signing: None, direct: None, ..self.clone() })
    }

    /// This key file ([`GroupFile::shared`]) as an Ed25519 group's roster for the other
    /// members: without the admission secret (a roster admits no one). An HMAC group has no
    /// roster.
    pub fn as_roster(&self) -> Result<GroupFile, ClientError> {
        if self.key.is_some() {
            return Err(bad(
                "an HMAC group has no roster (its members share one key): a new member joins with a key file",
            ));
        }
        Ok(GroupFile { admission: None, signing: None, direct: None, ..self.clone() })
    }

    /// A roster file ([`GroupFile::as_roster`]), to import: checked as [`GroupFile::read`]
    /// checks a group file, but with no admission secret asked for (an older vouch's rosters
    /// held one; it is not read).
    pub fn read_roster(path: &Path) -> Result<GroupFile, ClientError> {
        let file = GroupFile { admission: None, ..GroupFile::parse(path)? };
        if file.key.is_some() {
            return Err(bad(&format!("{}: an HMAC group's key file, not a roster", path.display())));
        }
        Ok(file)
    }

    /// Whether the group runs ADICT compatible (Table 1) or commutative.
    pub fn mode(&self) -> Result<Mode, ClientError> {
        match self.mode.as_str() {
            "compatible" => Ok(Mode::Compatible),
            "commutative" => Ok(Mode::Commutative),
            other => Err(bad(&format!("unknown mode {other} (compatible or commutative)"))),
        }
    }

    pub fn read(path: &Path) -> Result<GroupFile, ClientError> {
        let file = GroupFile::parse(path)?;
        file.admission()?;
        Ok(file)
    }

    /// The file at `path`, its name, keys and mode checked.
    fn parse(path: &Path) -> Result<GroupFile, ClientError> {
        let text = std::fs::read_to_string(path).map_err(ClientError::io(format!("reading {}", path.display())))?;
        let file: GroupFile = toml::from_str(&text).map_err(|e| bad(&format!("{}: {e}", path.display())))?;
        check_name(&file.group)?;
        file.keys()?;
        file.mode()?;
        Ok(file)
    }

    /// The group file of a `group init` left unfinished at `path`, if there is one; an error
    /// if it was begun with other settings than `mode` and `signatures` (the group may exist
    /// on the provider with those).
    fn read_pending(path: &Path, mode: &str, signatures: Signatures) -> Result<Option<GroupFile>, ClientError> {
        if !path.exists() {
            return Ok(None);
        }
        let file = GroupFile::parse(path)?;
        let signs_alone = file.signing.is_some();
        if file.mode != mode || signs_alone != matches!(signatures, Signatures::Ed25519) {
            return Err(ClientError::State(format!(
                "a `group init` of {} with other settings was interrupted: run it again as it was, or remove {} to begin anew",
                file.group,
                path.display()
            )));
        }
        Ok(Some(file))
    }

    pub fn write(&self, path: &Path) -> Result<(), ClientError> {
        let text = toml::to_string(self).map_err(|e| bad(&e.to_string()))?;
        write_atomic(path, text.as_bytes(), true)
    }
}

fn bad(why: &str) -> ClientError {
    ClientError::BadInput(why.to_string())
}

fn bytes32(text: &str, what: &str) -> Result<[u8; 32], ClientError> {
    hex(text).and_then(|b| b.try_into().ok()).ok_or_else(|| bad(&format!("{what} is not 64 hex digits")))
}

fn to_hex(bytes: &[u8]) -> String {
    base16ct::lower::encode_string(bytes)
}

fn hex(text: &str) -> Option<Vec<u8>> {
    base16ct::mixed::decode_vec(text).ok()
}

/// A group name: 1 to 64 of `[A-Za-z0-9_-]` (it names files and the provider's sequencer).
pub fn check_name(name: &str) -> Result<(), ClientError> {
    let ok = !name.is_empty()
        && name.len() <= vouch_proto::vicos::MAX_GROUP_NAME
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    ok.then_some(()).ok_or_else(|| bad(&format!("{name:?} is not a group name (1-64 of A-Z a-z 0-9 - _)")))
}

fn groups_dir(state: &Path) -> PathBuf {
    state.join("groups")
}

fn config_path(state: &Path, group: &str) -> PathBuf {
    groups_dir(state).join(format!("{group}.toml"))
}

/// A `group init` of `group` begun and not finished: the group file it sends the provider.
fn pending_path(state: &Path, group: &str) -> PathBuf {
    groups_dir(state).join(format!("{group}.creating"))
}

fn aip_path(state: &Path, group: &str) -> PathBuf {
    groups_dir(state).join(format!("{group}.aip"))
}

/// Holds `groups/NAME.lock` until dropped: the group file's writers take turns (it is
/// replaced whole, so its readers need no lock).
fn lock_group_file(state: &Path, group: &str) -> Result<std::fs::File, ClientError> {
    let path = groups_dir(state).join(format!("{group}.lock"));
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(ClientError::io(format!("opening {}", path.display())))?;
    file.lock().map_err(ClientError::io(format!("locking {}", path.display())))?;
    Ok(file)
}

/// The provider this state directory talks to, as a [`Remote`].
fn remote_of(state: &StateDir) -> Result<Remote, ClientError> {
    let transport = Transport::from_config(&state.dir, &state.config)?;
    Remote::with(&state.config.server, &state.secret.token, &transport)
}

/// The names of the groups this state directory is a member of.
pub fn groups(state: &Path) -> Result<Vec<String>, ClientError> {
    let dir = groups_dir(state);
    let Ok(entries) = std::fs::read_dir(&dir) else { return Ok(Vec::new()) };
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok()?.file_name().into_string().ok()?.strip_suffix(".toml").map(str::to_string))
        .collect();
    names.sort();
    Ok(names)
}

impl Group {
    /// `vouch group init`: creates group `name` on the provider of the client state in
    /// `state`, this client its member 0, signing as `signatures` says (a fresh group key, or
    /// this member's own key pair). Returns the key file for the next member (id 1).
    pub async fn init(state: &Path, name: &str, mode: Mode, signatures: Signatures) -> Result<GroupFile, ClientError> {
        check_name(name)?;
        let dir = StateDir::open(state)?;
        let mode_name = match mode {
            Mode::Compatible => "compatible",
            Mode::Commutative => "commutative",
        };
        if config_path(state, name).exists() {
            // Run again after it kept the group (killed before the caller wrote the key file
            // for the others): the same key file once more. Any other group is refused.
            let mine = GroupFile::parse(&config_path(state, name))?;
            let same = mine.id == 0
                && mine.mode == mode_name
                && mine.signing.is_some() == matches!(signatures, Signatures::Ed25519);
            return match same {
                true => mine.shared(),
                false => Err(ClientError::State(format!("already a member of group {name}"))),
            };
        }
        // A creation a kill (or a lost answer) left unfinished is sent again as it was: the
        // provider takes the same creation again, and would refuse a new one under this name.
        let pending = pending_path(state, name);
        if let Some(mine) = GroupFile::read_pending(&pending, mode_name, signatures)? {
            return Group::finish_init(state, &dir, name, mode, mine, &pending).await;
        }
        let secret: [u8; 32] = rand::random();
        let mine = match signatures {
            Signatures::Hmac => GroupFile {
                group: name.into(),
                id: 0,
                mode: mode_name.into(),
                key: Some(to_hex(&secret)),
                signing: None,
                members: BTreeMap::new(),
                admission: None,
                direct: None,
            },
            Signatures::Ed25519 => GroupFile {
                group: name.into(),
                id: 0,
                mode: mode_name.into(),
                key: None,
                signing: Some(to_hex(&secret)),
                members: BTreeMap::from([("0".into(), to_hex(&Keyring::ed25519_public(&secret)))]),
                admission: Some(to_hex(&rand::random::<[u8; 32]>())),
                direct: None,
            },
        };
        std::fs::create_dir_all(groups_dir(state)).map_err(ClientError::io("creating the groups directory"))?;
        mine.write(&pending)?;
        Group::finish_init(state, &dir, name, mode, mine, &pending).await
    }

    /// The creation of `mine` on the provider, then the group kept in `state` (and the
    /// pending file of the creation gone).
    async fn finish_init(
        state: &Path,
        dir: &StateDir,
        name: &str,
        mode: Mode,
        mine: GroupFile,
        pending: &Path,
    ) -> Result<GroupFile, ClientError> {
        let group = Group::create(remote_of(dir)?, name, 0, mine.keys()?, mode, mine.admission()?).await?;
        mine.write(&config_path(state, name))?;
        group.save(state).await?;
        std::fs::remove_file(pending).map_err(ClientError::io("removing the group's pending creation"))?;
        mine.shared()
    }

    /// `vouch group join`: joins the group of `key_file` as member `id` (default: the file's).
    /// In an Ed25519 group, this member makes its key pair and adds itself to its roster;
    /// the others import that roster ([`Group::roster`]) before they accept its operations.
    pub fn join_with(state: &Path, key_file: &Path, id: Option<ClientId>) -> Result<GroupFile, ClientError> {
        let mut file = GroupFile::parse(key_file)?;
        if file.key.is_none() && file.admission.is_none() {
            return Err(bad(&format!(
                "{} is a roster, which admits no one: join with a key file (vouch group roster {} --key-out FILE, on a member)",
                key_file.display(),
                file.group
            )));
        }
        file.admission()?;
        StateDir::open(state)?;
        if config_path(state, &file.group).exists() {
            return Err(ClientError::State(format!("already a member of group {}", file.group)));
        }
        if file.signing.is_some() || file.direct.is_some() {
            return Err(bad("this key file holds a member's own secrets: it is that member's own file"));
        }
        // An HMAC key file is one file for every joiner, so its id would be every joiner's:
        // two members under one id could be shown different outcomes on one hash chain (#43
        // item 9). An Ed25519 joiner's new key tells it apart in the others' rosters.
        if file.key.is_some() && id.is_none() {
            return Err(bad(&format!(
                "{} is shared by every member who joins with it: choose this member's id with --id (one no other member has, such as {})",
                key_file.display(),
                file.id
            )));
        }
        file.id = id.unwrap_or(file.id);
        if file.key.is_none() {
            if file.members.contains_key(&file.id.to_string()) {
                return Err(bad(&format!("member {} is in the group already: join with another --id", file.id)));
            }
            let seed: [u8; 32] = rand::random();
            file.members.insert(file.id.to_string(), to_hex(&Keyring::ed25519_public(&seed)));
            file.signing = Some(to_hex(&seed));
        }
        file.keys()?;
        std::fs::create_dir_all(groups_dir(state)).map_err(ClientError::io("creating the groups directory"))?;
        file.write(&config_path(state, &file.group))?;
        Ok(file)
    }

    /// `vouch group roster`: this member's key file of group `name` for a new member (see
    /// [`GroupFile::shared`]; its roster for the others is [`GroupFile::as_roster`], with no
    /// admission secret); with `import`, first adds the members of that roster file. Returns
    /// the key file and the ids imported.
    ///
    /// Runs beside a process that holds the member (a gateway): it takes only the group
    /// file's own lock, so two imports never lose one another's members, and the member reads
    /// the file again when it meets a member it does not know ([`Group::run`]).
    pub fn roster(state: &Path, name: &str, import: Option<&Path>) -> Result<(GroupFile, Vec<ClientId>), ClientError> {
        check_name(name)?;
        let path = config_path(state, name);
        if !path.exists() {
            return Err(ClientError::State(format!("{} is no member of group {name}", state.display())));
        }
        let _locked = lock_group_file(state, name)?;
        let mut mine = GroupFile::read(&path)?;
        let mut added = Vec::new();
        if let Some(other) = import {
            added = mine.import(&GroupFile::read_roster(other)?)?;
            mine.write(&path)?;
        }
        Ok((mine.shared()?, added))
    }

    /// `vouch group direct`: from now on this member reaches the objects of group `name` in
    /// the provider's S3 bucket itself, with `access` (its own credentials for that bucket);
    /// `None` goes back to reaching them through the provider.
    pub fn set_direct(state: &Path, name: &str, access: Option<S3Access>) -> Result<(), ClientError> {
        check_name(name)?;
        let _dir = StateDir::open(state)?;
        let _locked = lock_group_file(state, name)?;
        let path = config_path(state, name);
        let mut mine = GroupFile::read(&path)?;
        if let Some(access) = &access {
            DirectObjects::s3(access)?;
        }
        mine.direct = access;
        mine.write(&path)
    }

    /// The member of group `name` whose files are in the state directory `state`, with its
    /// saved AIP state.
    pub fn open(state: &Path, name: &str) -> Result<Group, ClientError> {
        check_name(name)?;
        let dir = StateDir::open(state)?;
        let file = GroupFile::read(&config_path(state, name))?;
        let (keys, mode) = (file.keys()?, file.mode()?);
        let saved = aip_path(state, name);
        let mut client = match saved.exists() {
            true => {
                let bytes = std::fs::read(&saved).map_err(ClientError::io(format!("reading {}", saved.display())))?;
                aip::Client::restore(&bytes, file.id, keys, Adict { mode })
                    .map_err(|e| ClientError::State(format!("{}: {e}", saved.display())))?
            }
            false => aip::Client::new(file.id, keys, Adict { mode }),
        };
        // An INVOKE may have left after the last save (or before the first): its counter is
        // never signed again.
        client.skip_counter();
        let mut group = Group::with_client(remote_of(&dir)?, name, client);
        // The skip is saved before this process's first INVOKE leaves: else a process killed
        // after sending it would leave the same saved counter, and the next one would sign
        // that INVOKE's counter again (refused by the provider as a replay).
        group.unsaved_invoke = true.into();
        if let Some(admission) = file.admission()? {
            group = group.with_admission(admission);
        }
        let caught_file = groups_dir(state).join(format!("{name}.caught"));
        group.caught = super::caught::read_caught(&caught_file)?.into();
        group.caught_file = Some(caught_file);
        group.state = Some(dir);
        group.direct = file.direct.as_ref().map(DirectObjects::s3).transpose()?;
        Ok(group)
    }

    /// Reads this member's roster again (from its state directory, when it was opened from
    /// one) and takes its keys; whether they now know `member`.
    pub(super) fn reload_roster(&self, aip: &mut aip::Client<Adict>, member: ClientId) -> Result<bool, ClientError> {
        let Some(dir) = &self.state else { return Ok(false) };
        let keys = GroupFile::read(&config_path(&dir.dir, &self.name))?.keys()?;
        if !keys.knows(member) {
            return Ok(false);
        }
        aip.learn_keys(keys);
        Ok(true)
    }

    /// Saves the AIP state `aip` of this member into its state directory, when it was opened
    /// from one (see [`Group::run`]'s write-ahead).
    pub(super) fn persist(&self, aip: &aip::Client<Adict>) -> Result<(), ClientError> {
        match &self.state {
            Some(dir) => {
                write_atomic(&aip_path(&dir.dir, &self.name), &aip.save(), true)?;
                self.unsaved_invoke.store(false, std::sync::atomic::Ordering::Release);
                Ok(())
            }
            None => Ok(()),
        }
    }

    /// Saves this member's AIP state into the state directory `state`.
    pub async fn save(&self, state: &Path) -> Result<(), ClientError> {
        // Under the lock: a save never lands after (and over) a newer write-ahead save.
        let aip = self.aip.lock().await;
        write_atomic(&aip_path(state, &self.name), &aip.save(), true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_group_file_is_checked_when_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("g.toml");
        let good = GroupFile {
            group: "team".into(),
            id: 3,
            mode: "compatible".into(),
            key: Some("ab".repeat(32)),
            signing: None,
            members: BTreeMap::new(),
            admission: None,
            direct: None,
        };
        good.write(&path).unwrap();
        assert_eq!(GroupFile::read(&path).unwrap(), good);
        let public = to_hex(&Keyring::ed25519_public(&[5; 32]));
        let signed = GroupFile {
            key: None,
            signing: Some(to_hex(&[5; 32])),
            members: BTreeMap::from([("3".into(), public.clone())]),
            admission: Some("cd".repeat(32)),
            ..good.clone()
        };
        signed.write(&path).unwrap();
        assert_eq!(GroupFile::read(&path).unwrap(), signed);
        for bad in [
            GroupFile { key: Some("ab".repeat(31)), ..good.clone() },
            GroupFile { key: Some("zz".repeat(32)), ..good.clone() },
            GroupFile { mode: "fast".into(), ..good.clone() },
            GroupFile { key: None, ..good.clone() },
            GroupFile { signing: Some("ab".repeat(32)), ..good.clone() },
            GroupFile { key: Some("ab".repeat(32)), ..signed.clone() },
            GroupFile { members: BTreeMap::from([("x".into(), public.clone())]), ..signed.clone() },
            GroupFile { members: BTreeMap::from([("4".into(), "00".repeat(31))]), ..signed.clone() },
            GroupFile { group: "a/b".into(), ..good.clone() },
            GroupFile { admission: None, ..signed.clone() },
            GroupFile { admission: Some("cd".repeat(31)), ..signed.clone() },
            GroupFile { admission: Some("cd".repeat(32)), ..good.clone() },
        ] {
            bad.write(&path).unwrap();
            assert!(matches!(GroupFile::read(&path), Err(ClientError::BadInput(_))), "{bad:?}");
        }
    }

    #[test]
    fn a_roster_adds_members_and_never_changes_a_known_key() {
        let key = |seed: u8| to_hex(&Keyring::ed25519_public(&[seed; 32]));
        let mine = GroupFile {
            group: "team".into(),
            id: 0,
            mode: "compatible".into(),
            key: None,
            signing: Some(to_hex(&[1; 32])),
            members: BTreeMap::from([("0".into(), key(1))]),
            admission: Some("cd".repeat(32)),
            direct: Some(super::S3Access {
                endpoint: None,
                bucket: "b".into(),
                region: "r".into(),
                access_key: "a".into(),
                secret_key: "the-secret".into(),
            }),
        };
        let theirs = GroupFile {
            id: 2,
            signing: None,
            members: BTreeMap::from([("0".into(), key(1)), ("1".into(), key(2))]),
            ..mine.clone()
        };
        let mut updated = mine.clone();
        assert_eq!(updated.import(&theirs).unwrap(), [1]);
        assert_eq!(updated.members.len(), 2);
        assert_eq!(updated.import(&theirs).unwrap(), Vec::<ClientId>::new(), "nothing new");
        let shared = updated.shared().unwrap();
        assert_eq!((shared.signing.as_ref(), shared.direct.as_ref()), (None, None), "no secret of this member's");
        assert_eq!((shared.id, shared.signing.as_ref()), (2, None), "the next id, and no secret");
        assert_eq!(shared.admission, mine.admission, "the group's admission secret goes with a key file");
        // A roster that gives a known member another key is refused whole.
        let forged = GroupFile { members: BTreeMap::from([("0".into(), key(9)), ("5".into(), key(5))]), ..theirs };
        let mut kept = updated.clone();
        assert!(kept.import(&forged).is_err());
        assert_eq!(kept, updated);
        let other_group = GroupFile { group: "other".into(), ..shared };
        assert!(kept.import(&other_group).is_err());
    }
}

#[cfg(test)]
mod roster_tests {
    use super::*;

    fn member() -> GroupFile {
        GroupFile {
            group: "team".into(),
            id: 0,
            mode: "compatible".into(),
            key: None,
            signing: Some(to_hex(&[1; 32])),
            members: BTreeMap::from([("0".into(), to_hex(&Keyring::ed25519_public(&[1; 32])))]),
            admission: Some("cd".repeat(32)),
            direct: None,
        }
    }

    /// Rosters go from member to member; one that carried the admission secret would admit
    /// whoever it leaked to at the provider, in the name of a member id no one has used yet.
    /// A roster written for export holds no admission secret (nor any other secret), it
    /// still imports, and it does not serve to join with.
    #[test]
    fn an_exported_roster_carries_no_admission_secret() {
        let dir = tempfile::tempdir().unwrap();
        let roster = member().shared().unwrap().as_roster().unwrap();
        assert_eq!((&roster.admission, &roster.signing, &roster.direct), (&None, &None, &None));
        let path = dir.path().join("team.roster");
        roster.write(&path).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(!text.contains(&"cd".repeat(32)) && !text.contains("admission"), "{text}");
        let mut theirs = GroupFile { id: 1, members: BTreeMap::new(), ..member() };
        theirs.members.insert("1".into(), to_hex(&Keyring::ed25519_public(&[2; 32])));
        assert_eq!(theirs.import(&GroupFile::read_roster(&path).unwrap()).unwrap(), [0]);
        let state = dir.path().join("state");
        match Group::join_with(&state, &path, Some(5)) {
            Err(ClientError::BadInput(why)) => assert!(why.contains("roster, which admits no one"), "{why}"),
            other => panic!("a roster is no key file: {other:?}"),
        }
        let hmac = GroupFile {
            key: Some("ab".repeat(32)),
            signing: None,
            members: BTreeMap::new(),
            admission: None,
            ..member()
        };
        assert!(hmac.as_roster().is_err(), "an HMAC group's key file is its secret: no roster of it");
    }
}
