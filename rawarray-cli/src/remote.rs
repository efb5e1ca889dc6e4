//! Object-store URLs on the command line (`s3://`, `gs://`, `az://`, `http(s)://`, `file://`;
//! feature `cloud`): every command that reads a file reads a URL through the library's
//! `StoreArrayReader`, and `convert`, `compress`, `decompress`, `reshape` and `slice` write one.
//!
//! A URL input becomes a local temporary file of the object's length holding what the command
//! reads, at the object's offsets, and nothing else (a sparse file: the rest is never written
//! and takes no disk): `ra info` gets the header, a chunked object's config and index and the
//! trailer (one or two requests); `ra slice` those and the blocks its box crosses, as the
//! library's reader fetches them for that box (`StoreArrayReader::fetch_box`); the commands
//! that read every byte (`cat`, `convert`, `diff`, `checksum`, `compress`, ...) the whole
//! object, streamed to the file. The command then reads the file as it reads any file, so its
//! output is the same as for a local copy. A URL output is written to a local temporary file,
//! then uploaded by `StoreUrl::put_atomic` (one request, or a multipart upload in parts;
//! nothing at the URL until it completes); rewriting a URL in place (`ra compress s3://...`
//! without `-o`) replaces the object only if it is still the one read (its ETag).
//!
//! The async runtime is made only when a URL is given: local commands keep their memory.
//! Stores are configured from the environment as object_store reads it (`AWS_*`, `GOOGLE_*`,
//! `AZURE_*`).

use std::fs::File;
use std::io::{Read, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};

use futures::StreamExt;
use object_store::ObjectStoreExt;
use rawarray_serde::store::{StorageOptions, StoreUrl, UploadOptions};
use rawarray_serde::StoreArrayReader;

use crate::fail::{At, Failure, Result};

/// Whether `arg` names an object in a store: `scheme://` with a scheme the library opens.
pub fn is_url(arg: &Path) -> bool {
    arg.to_str().is_some_and(rawarray_serde::store::is_url)
}

/// What of an object a command reads.
#[derive(Clone)]
pub enum Need {
    /// Its header, a chunked object's config and index, its trailer (`ra info`).
    Meta,
    /// Every byte.
    All,
    /// The box of the file's dims (given them) that a command reads, or a usage error of
    /// that command (`ra slice`'s RANGES, which only it parses).
    Box(BoxOf),
}

/// The box a command reads, given the file's dims, or its usage error: `(command, message)`.
pub type BoxOf = std::sync::Arc<
    dyn Fn(&[u64]) -> std::result::Result<Vec<Range<u64>>, (&'static str, String)> + Send + Sync,
>;

impl std::fmt::Debug for Need {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Need::Meta => "Meta",
            Need::All => "All",
            Need::Box(_) => "Box",
        })
    }
}

/// What the command running reads of its URL inputs (set by `main` before it runs).
static NEED: std::sync::Mutex<Option<Need>> = std::sync::Mutex::new(None);

/// The ETag and version of each URL read whole, for an in-place rewrite's precondition.
type ReadAs = (PathBuf, Option<String>, Option<String>);
static READ: std::sync::Mutex<Vec<ReadAs>> = std::sync::Mutex::new(Vec::new());

/// Says what the command about to run reads of its URL inputs (every byte, unless said).
pub fn set_need(need: Need) {
    *NEED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(need);
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::file(Path::new("<runtime>"), e))
}

fn open_url(url: &Path) -> Result<StoreUrl> {
    let text = url.to_string_lossy();
    StoreUrl::parse(&text, &StorageOptions::new()).map_err(|e| Failure::file(url, e))
}

/// The store's error for `url`, explained (where credentials were looked for, when that is the
/// trouble), naming the URL once.
fn failed(u: &StoreUrl, url: &Path, e: impl std::fmt::Display) -> Failure {
    let m = u.explain(&e.to_string());
    Failure::file(url, m.strip_prefix(&format!("{}: ", u.shown)).unwrap_or(&m))
}

/// The local file to read for the input `url` (see the module docs; `source::input` calls
/// this for a URL, once per URL).
pub fn input(url: &Path) -> Result<PathBuf> {
    let need = NEED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone()
        .unwrap_or(Need::All);
    let u = open_url(url)?;
    let rt = runtime()?;
    let (file, named) = crate::copies::new_temp().at(url)?;
    match need {
        Need::All => {
            let got = rt
                .block_on(u.store.get(&u.path))
                .map_err(|e| failed(&u, url, e))?;
            READ.lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push((
                    url.to_path_buf(),
                    got.meta.e_tag.clone(),
                    got.meta.version.clone(),
                ));
            let mut body = got.into_stream();
            let mut w = std::io::BufWriter::with_capacity(1 << 20, &file);
            while let Some(chunk) = rt.block_on(body.next()) {
                let chunk = chunk.map_err(|e| failed(&u, url, e))?;
                w.write_all(&chunk).at(url)?;
            }
            w.flush().at(url)?;
        }
        Need::Meta | Need::Box(_) => {
            let reader = rt
                .block_on(StoreArrayReader::open(u.store.clone(), u.path.clone()))
                .map_err(|e| failed(&u, url, e))?;
            let dims = &reader.header().dims;
            let ranges: Vec<Range<u64>> = match need {
                Need::Box(of) => of(dims).map_err(|(command, m)| Failure::usage(command, m))?,
                _ => dims.iter().map(|_| 0..0).collect(),
            };
            let pieces = rt
                .block_on(reader.fetch_box(&ranges))
                .map_err(|e| failed(&u, url, e))?;
            file.set_len(reader.object_len()).at(url)?;
            for (at, bytes) in pieces {
                write_at(&file, &bytes, at).at(url)?;
            }
        }
    }
    crate::copies::keep_copy(url, file, named)
}

#[cfg(unix)]
fn write_at(file: &File, bytes: &[u8], at: u64) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::write_all_at(file, bytes, at)
}

#[cfg(not(unix))]
fn write_at(file: &File, bytes: &[u8], at: u64) -> std::io::Result<()> {
    use std::io::{Seek, SeekFrom};
    let mut f = file;
    f.seek(SeekFrom::Start(at))?;
    f.write_all(bytes)
}

/// An output URL's local stand-in: the file a command writes, and where it goes after.
pub struct Output {
    url: PathBuf,
    local: tempfile::TempPath,
    /// The command rewrites the object it read in place: replaced only if unchanged.
    in_place: bool,
}

/// A local path to write for the output `url`, uploaded by [`Output::upload`] once the command
/// succeeded; `None` when `url` is not a URL. `in_place`: the command rewrites the object it
/// read, which must still be the one at the URL when it is replaced.
pub fn output(url: &Path, in_place: bool) -> Result<Option<Output>> {
    if !is_url(url) {
        return Ok(None);
    }
    open_url(url)?;
    let name = url
        .file_name()
        .map_or_else(|| "out.ra".into(), |n| n.to_string_lossy().into_owned());
    let local = tempfile::Builder::new()
        .prefix(".ra-upload-")
        .suffix(&format!("-{name}"))
        .tempfile()
        .at(url)?
        .into_temp_path();
    crate::names::alias(&local, url);
    Ok(Some(Output {
        url: url.to_path_buf(),
        local,
        in_place,
    }))
}

impl Output {
    /// The local file the command writes.
    pub fn local(&self) -> &Path {
        &self.local
    }

    /// Uploads the local file to the URL (streamed in parts), then deletes it.
    pub fn upload(self) -> Result<()> {
        let u = open_url(&self.url)?;
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .at(&self.url)?;
        let mut opts = UploadOptions::new();
        if self.in_place {
            // The object as it was read (its GET's ETag): a write since is not overwritten.
            let read = READ
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if let Some((_, e_tag, version)) = read.iter().find(|r| r.0 == self.url) {
                opts = opts.if_match(e_tag.clone(), version.clone());
            }
        }
        let mut f = File::open(&self.local).at(&self.url)?;
        u.put_atomic(rt.handle(), &opts, |w| {
            let mut buf = vec![0u8; 1 << 20];
            loop {
                let n = f.read(&mut buf)?;
                if n == 0 {
                    return Ok(());
                }
                w.write_all(&buf[..n])?;
            }
        })
        .map_err(|e| {
            Failure::file(
                &self.url,
                e.to_string()
                    .strip_prefix(&format!("{}: ", u.shown))
                    .unwrap_or(&e.to_string()),
            )
        })?;
        let _ = self.local.close();
        Ok(())
    }
}

/// The output of a rewriting command (`compress`, `decompress`, `reshape`): `-o URL` is
/// uploaded; no `-o` and a URL input rewrites that object, if it is still the one read.
pub fn rewrite(file: &Path, output: Option<&Path>) -> Result<Option<Output>> {
    match output {
        Some(o) => self::output(o, false),
        None => self::output(file, true),
    }
}

/// The commands that follow a file or repair it in place cannot take a URL.
pub fn refuse(command: &'static str, path: &Path) -> Result<()> {
    if is_url(path) {
        return Err(Failure::usage(
            command,
            format!(
                "{} is an object-store URL: ra {command} works on a local file",
                path.display()
            ),
        ));
    }
    Ok(())
}
