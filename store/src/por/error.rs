//! Why a PoR log operation failed: the request was refused, the store failed, or what the
//! store holds for the log does not make sense.

use crate::StoreError;
use vouch_core::por::provider::ProviderError;
use vouch_core::por::raw_tree::MAX_LOG_CAPACITY;
use vouch_core::por::Region;

#[derive(Debug, thiserror::Error)]
pub enum PorStoreError {
    /// The client's request does not fit the log (as the reference provider refuses it).
    #[error("request refused: {0}")]
    Refused(#[from] ProviderError),
    #[error("an audit asks for {region:?}, which the log does not hold, or for a slot beyond it")]
    NotHeld { region: Region },
    #[error("a log of 2^{log_capacity} slots of {width} elements is not accepted (at most 2^{MAX_LOG_CAPACITY} slots of 1..={max_width} elements)", max_width = super::MAX_WIDTH)]
    Shape { log_capacity: u32, width: usize },
    #[error("this owner already has a PoR log")]
    Exists,
    /// The log's records in the metadata store contradict themselves or the log's schedule.
    #[error("the PoR log's state at {at} is corrupt: {detail}")]
    CorruptState { at: String, detail: String },
    /// The store failed, or bytes the log needs are missing or short ([`StoreError::NotFound`],
    /// [`StoreError::BadRange`], [`StoreError::Corrupt`]): data lost until repaired.
    #[error(transparent)]
    Store(#[from] StoreError),
}
