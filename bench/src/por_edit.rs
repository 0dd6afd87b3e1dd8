//! A PoR file edited in the middle, end to end through a provider on the local backend: the
//! slots of the PoR log the edit takes beside those of the file's whole copy. The issue asks
//! that an edit in the middle of a large file cost PoR writes for the blocks it touches,
//! never a rewrite of the rest; the whole copy is the baseline, measured in the same run.

use crate::e2e::data;
use crate::measure::{check, SelfCheckFailed, Target};
use crate::served::start;
use serde::Serialize;
use std::path::Path;
use std::time::Instant;
use vouch_client::{ByteEdit, PutOptions};
use vouch_server::Blocks;

/// Bytes the edit replaces in the middle of the file.
const EDIT_BYTES: usize = 20 << 10;
/// Most slots an edit may take, as a share of the whole copy's.
const SHARE_TARGET: f64 = 0.01;

#[derive(Debug, Serialize)]
pub struct EditFigure {
    pub file_bytes: u64,
    /// Slots of U the put's whole copy took, and its time (the put with its copy).
    pub whole_slots: u64,
    pub put_seconds: f64,
    /// What the edit sent (its new blocks), the slots its copy took, and its time.
    pub edit_bytes: u64,
    pub edit_slots: u64,
    pub edit_seconds: f64,
    /// `edit_slots / whole_slots`.
    pub share: f64,
}

/// Puts a PoR file of `file_bytes`, replaces 20 KiB in its middle, and reads it back through
/// U (the figure is refused if the copy is not the edited file).
pub fn edit_figure(file_bytes: usize, dir: &Path) -> Result<EditFigure, SelfCheckFailed> {
    let fail = |e: &dyn std::fmt::Display| SelfCheckFailed(e.to_string());
    let rt = crate::measure::runtime()?;
    rt.block_on(async {
        let running = start(&Blocks::Local, dir).await?;
        let client = &running.client;
        let mut file = data(file_bytes, 11);
        let started = Instant::now();
        let por = PutOptions { por: true, ..PutOptions::default() };
        client.put_with("big", std::io::Cursor::new(file.clone()), por, |_| {}).await.map_err(|e| fail(&e))?;
        let put_seconds = started.elapsed().as_secs_f64();
        let whole_slots = client.por().audit(1).await.map_err(|e| fail(&e))?.slots_used;

        let at = file_bytes / 2;
        let new = data(EDIT_BYTES, 12);
        let started = Instant::now();
        let edit = ByteEdit::Replace { at: at as u64, data: new.clone() };
        let sent = client.edit("big", &edit, None).await.map_err(|e| fail(&e))?;
        let edit_seconds = started.elapsed().as_secs_f64();
        let edit_slots = client.por().audit(1).await.map_err(|e| fail(&e))?.slots_used - whole_slots;

        file[at..at + EDIT_BYTES].copy_from_slice(&new);
        let mut back = Vec::with_capacity(file.len());
        client.por().get("big", None, &mut back).await.map_err(|e| fail(&e))?;
        check(back == file, || "the edited file's PoR copy does not read back as the edited file".into())?;
        running.server.shutdown().await.map_err(|e| fail(&e))?;
        Ok(EditFigure {
            file_bytes: file_bytes as u64,
            whole_slots,
            put_seconds,
            edit_bytes: sent.bytes,
            edit_slots,
            edit_seconds,
            share: edit_slots as f64 / whole_slots as f64,
        })
    })
}

pub fn targets(figure: &EditFigure) -> Vec<Target> {
    vec![Target::at_most(
        &format!("PoR slots a 20 KB edit of a {} MB file takes, share of a whole copy", figure.file_bytes >> 20),
        figure.share,
        SHARE_TARGET,
        "x",
        Some("O(log n) writes for the blocks it touches (the issue)"),
    )]
}
