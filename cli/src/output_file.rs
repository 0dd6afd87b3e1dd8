//! The file a `get -o PATH` writes: whole or not at all. The verified bytes go to a
//! temporary file beside `PATH` (a name of its own, so that two gets into one directory
//! never share it), synced, then renamed over `PATH`; a get that fails leaves nothing.
//!
//! A `PATH` that exists and is no regular file (a device such as `/dev/null`, a named pipe)
//! is written in place as the bytes come, as standard output is: renaming a file over it
//! would replace the device.

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use tempfile::TempPath;
use vouch_client::ClientError;

pub struct OutputFile {
    writer: BufWriter<File>,
    /// The temporary file, removed when dropped unfinished; `None`: written in place.
    partial: Option<TempPath>,
    path: PathBuf,
}

/// What a temporary output file's name ends with.
pub const PARTIAL_SUFFIX: &str = ".vouch-partial";

impl OutputFile {
    pub fn create(path: &Path) -> Result<OutputFile, ClientError> {
        let failed = |what: &str| ClientError::io(format!("{what} {}", path.display()));
        let in_place = std::fs::metadata(path).is_ok_and(|m| !m.is_file());
        let (file, partial) = if in_place {
            (File::options().write(true).open(path).map_err(failed("opening"))?, None)
        } else {
            let dir = match path.parent() {
                Some(dir) if !dir.as_os_str().is_empty() => dir,
                _ => Path::new("."),
            };
            let name = path.file_name().map_or("out".into(), |n| n.to_string_lossy());
            let made = tempfile::Builder::new()
                .prefix(&format!(".{name}."))
                .suffix(PARTIAL_SUFFIX)
                .tempfile_in(dir)
                .map_err(failed("creating a temporary file beside"))?;
            let (file, partial) = made.into_parts();
            (file, Some(partial))
        };
        Ok(OutputFile { writer: BufWriter::new(file), partial, path: path.to_path_buf() })
    }

    pub fn writer(&mut self) -> &mut BufWriter<File> {
        &mut self.writer
    }

    /// Everything was written and verified: the file takes its name.
    pub fn finish(self) -> Result<(), ClientError> {
        let OutputFile { writer, partial, path } = self;
        let file = writer.into_inner().map_err(|e| ClientError::io("writing the output")(e.into_error()))?;
        if let Some(partial) = partial {
            file.sync_all().map_err(ClientError::io("writing the output"))?;
            partial.persist(&path).map_err(|e| ClientError::io(format!("renaming to {}", path.display()))(e.error))?;
        }
        Ok(())
    }
}
