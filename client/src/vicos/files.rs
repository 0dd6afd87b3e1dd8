//! A member's group files in the client's state directory, for `vouch group` and `vouch obj`:
//! `groups/NAME.toml` (this member's id, the mode, the group key; private) and
//! `groups/NAME.aip` (its AIP state: the hash chain and what it still needs, saved after each
//! REPLY before the COMMIT leaves, and after each operation, so that a fork is caught across
//! runs, not only within one, and a crash mid-operation loses no COMMIT).
//!
//! A group key file (`vouch group init --key-out`) hands the group to other members: the
//! group's name, mode and key, and the next free member id. Whoever holds it can sign as any
//! member (HMAC, the paper's default, Sec. 5.1): share it only with the group.

use super::Group;
use crate::error::ClientError;
use crate::remote::Remote;
use crate::state::{write_atomic, StateDir};
use crate::transport::Transport;
use std::path::{Path, PathBuf};
use vouch_core::aip::{self, Adict, ClientId, Keyring, Mode};

/// `groups/NAME.toml`, and the body of a group key file.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupFile {
    pub group: String,
    /// This member's id (in a key file: the next free one).
    pub id: ClientId,
    /// `compatible` (Table 1) or `commutative` (the ACOP baseline).
    pub mode: String,
    /// The HMAC-SHA256 group key, hex.
    pub key: String,
}

impl GroupFile {
    /// The group's keys (the HMAC group key).
    pub fn keys(&self) -> Result<Keyring, ClientError> {
        let bytes =
            hex(&self.key).filter(|b| b.len() == 32).ok_or_else(|| bad("the group key is not 64 hex digits"))?;
        Ok(Keyring::Hmac { key: bytes.try_into().expect("length checked") })
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
        let text = std::fs::read_to_string(path).map_err(ClientError::io(format!("reading {}", path.display())))?;
        let file: GroupFile = toml::from_str(&text).map_err(|e| bad(&format!("{}: {e}", path.display())))?;
        check_name(&file.group)?;
        file.keys()?;
        file.mode()?;
        Ok(file)
    }

    pub fn write(&self, path: &Path) -> Result<(), ClientError> {
        let text = toml::to_string(self).map_err(|e| bad(&e.to_string()))?;
        write_atomic(path, text.as_bytes(), true)
    }
}

fn bad(why: &str) -> ClientError {
    ClientError::BadInput(why.to_string())
}

fn hex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len()).step_by(2).map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok()).collect()
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

fn aip_path(state: &Path, group: &str) -> PathBuf {
    groups_dir(state).join(format!("{group}.aip"))
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
    /// `state`, this client its member 0, with a fresh group key. Returns the key file's
    /// contents for the next member (id 1).
    pub async fn init(state: &Path, name: &str, mode: Mode) -> Result<GroupFile, ClientError> {
        check_name(name)?;
        let dir = StateDir::open(state)?;
        if config_path(state, name).exists() {
            return Err(ClientError::State(format!("already a member of group {name}")));
        }
        let key: [u8; 32] = rand::random();
        let mode_name = match mode {
            Mode::Compatible => "compatible",
            Mode::Commutative => "commutative",
        };
        let key_hex: String = key.iter().map(|b| format!("{b:02x}")).collect();
        let mine = GroupFile { group: name.into(), id: 0, mode: mode_name.into(), key: key_hex };
        let group = Group::create(remote_of(&dir)?, name, 0, mine.keys()?, mode).await?;
        std::fs::create_dir_all(groups_dir(state)).map_err(ClientError::io("creating the groups directory"))?;
        mine.write(&config_path(state, name))?;
        group.save(state).await?;
        Ok(GroupFile { id: 1, ..mine })
    }

    /// `vouch group join`: joins the group of `key_file` as member `id` (default: the file's).
    pub fn join_with(state: &Path, key_file: &Path, id: Option<ClientId>) -> Result<GroupFile, ClientError> {
        StateDir::open(state)?;
        let mut file = GroupFile::read(key_file)?;
        if config_path(state, &file.group).exists() {
            return Err(ClientError::State(format!("already a member of group {}", file.group)));
        }
        file.id = id.unwrap_or(file.id);
        std::fs::create_dir_all(groups_dir(state)).map_err(ClientError::io("creating the groups directory"))?;
        file.write(&config_path(state, &file.group))?;
        Ok(file)
    }

    /// The member of group `name` whose files are in the state directory `state`, with its
    /// saved AIP state.
    pub fn open(state: &Path, name: &str) -> Result<Group, ClientError> {
        check_name(name)?;
        let dir = StateDir::open(state)?;
        let file = GroupFile::read(&config_path(state, name))?;
        let (keys, mode) = (file.keys()?, file.mode()?);
        let saved = aip_path(state, name);
        let client = match saved.exists() {
            true => {
                let bytes = std::fs::read(&saved).map_err(ClientError::io(format!("reading {}", saved.display())))?;
                aip::Client::restore(&bytes, file.id, keys, Adict { mode })
                    .map_err(|e| ClientError::State(format!("{}: {e}", saved.display())))?
            }
            false => aip::Client::new(file.id, keys, Adict { mode }),
        };
        let mut group = Group::with_client(remote_of(&dir)?, name, client);
        group.state = Some(dir);
        Ok(group)
    }

    /// Saves the AIP state `aip` of this member into its state directory, when it was opened
    /// from one (see [`Group::run`]'s write-ahead).
    pub(super) fn persist(&self, aip: &aip::Client<Adict>) -> Result<(), ClientError> {
        match &self.state {
            Some(dir) => write_atomic(&aip_path(&dir.dir, &self.name), &aip.save(), true),
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
        let good = GroupFile { group: "team".into(), id: 3, mode: "compatible".into(), key: "ab".repeat(32) };
        good.write(&path).unwrap();
        assert_eq!(GroupFile::read(&path).unwrap(), good);
        for bad in [
            GroupFile { key: "ab".repeat(31), ..good.clone() },
            GroupFile { key: "zz".repeat(32), ..good.clone() },
            GroupFile { mode: "fast".into(), ..good.clone() },
            GroupFile { group: "a/b".into(), ..good.clone() },
        ] {
            bad.write(&path).unwrap();
            assert!(matches!(GroupFile::read(&path), Err(ClientError::BadInput(_))), "{bad:?}");
        }
    }
}
