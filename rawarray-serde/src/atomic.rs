//! Writing a file so that a failure never costs what was at the path before.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use crate::error::Result;

/// Writes a file through `write`, atomically: the bytes go to a temporary file in the same
/// folder, which is flushed, synced and then renamed over `path`. If `write` or any step fails
/// the temporary file is removed and `path` keeps its old content. Every write error, a full
/// disk included, is returned: the buffered writer is flushed explicitly, never by its drop.
pub(crate) fn write_atomic<F>(path: &Path, write: F) -> Result<()>
where
    F: FnOnce(&mut dyn Write) -> Result<()>,
{
    let (dir, mut tmp) = temp_beside(path)?;
    {
        let mut w = BufWriter::with_capacity(1 << 20, tmp.as_file_mut());
        write(&mut w)?;
        w.flush()?;
    }
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    sync_dir(dir);
    Ok(())
}

/// Creates a file atomically and keeps it open: `write` fills a temporary file in the same
/// folder, which is synced (if `sync`) and renamed over `path`. Readers that had the old file
/// open keep reading the old file; nobody ever sees a half-written new one.
pub(crate) fn create_atomic<F>(path: &Path, sync: bool, write: F) -> Result<File>
where
    F: FnOnce(&File) -> Result<()>,
{
    let (dir, tmp) = temp_beside(path)?;
    write(tmp.as_file())?;
    if sync {
        tmp.as_file().sync_all()?;
    }
    let file = tmp.persist(path).map_err(|e| e.error)?;
    if sync {
        sync_dir(dir);
    }
    Ok(file)
}

/// A temporary file next to `path` (same folder, so the rename stays on one file system),
/// with the permissions of the file at `path` if there is one; and that folder.
fn temp_beside(path: &Path) -> Result<(&Path, tempfile::NamedTempFile)> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let prefix = format!(".{name}.");
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix).suffix(".tmp");
    // A new file gets the mode `File::create` would give it (0o666 less the umask), not the
    // temporary file's private 0o600.
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
    let tmp = builder.tempfile_in(dir)?;
    // Keep the permissions of the file being replaced.
    if let Ok(meta) = std::fs::metadata(path) {
        tmp.as_file().set_permissions(meta.permissions())?;
    }
    Ok((dir, tmp))
}

/// Makes a rename durable; best effort, as not every platform can open a folder.
pub(crate) fn sync_dir(dir: &Path) {
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}
