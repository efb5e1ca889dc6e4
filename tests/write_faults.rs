//! Faults on the write side: a disk that fills after k bytes, at every k, for every writer that
//! takes an `io::Write`; path writers failing half-way (a serializer error, a ragged value, a
//! real full disk) leave the previous file byte-identical and no temporary file; and readers
//! racing an appending `RecordWriter`, in another thread or another process (killed mid-write),
//! always see a valid prefix of what was appended.

use std::io::{self, BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use rawarray_serde::atomic::write_atomic;
use rawarray_serde::{
    to_file, to_writer, Category, Durability, DynArray, ElType, ErrorKind, RawArray, RecordOptions,
    RecordReader, RecordWriter, Trailer, WriteOptions,
};
use serde::ser::{Error as _, SerializeSeq};
use serde::{Serialize, Serializer};

const MAGIC: u64 = 0x7961727261776172;

/// A disk with room for `left` more bytes: writes are cut short there, then fail.
struct FullAfter {
    left: usize,
    out: Vec<u8>,
}

impl Write for FullAfter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.left == 0 && !buf.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::StorageFull,
                "simulated full disk",
            ));
        }
        let n = buf.len().min(self.left);
        self.out.extend_from_slice(&buf[..n]);
        self.left -= n;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn words(w: &[u64]) -> Vec<u8> {
    w.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// Runs `write` into a disk of every size from 0 to the file's length: each short disk is an
/// error of kind `StorageFull` (not swallowed, not replaced) with exactly the file's first
/// bytes written; the disk of the file's length is success with `expected` written.
fn every_k<F>(what: &str, expected: &[u8], write: F) -> usize
where
    F: Fn(&mut FullAfter) -> rawarray_serde::Result<()>,
{
    for k in 0..=expected.len() {
        let mut disk = FullAfter {
            left: k,
            out: Vec::new(),
        };
        let result = write(&mut disk);
        if k < expected.len() {
            let e = result.expect_err(what);
            assert_eq!(e.category(), Category::Io, "{what} at {k}: {e}");
            assert!(
                matches!(e.kind(), ErrorKind::Io(io) if io.kind() == io::ErrorKind::StorageFull),
                "{what} at {k}: {e:?}"
            );
        } else {
            result.unwrap_or_else(|e| panic!("{what} with room for the whole file: {e}"));
        }
        assert_eq!(disk.out, expected[..k], "{what}: the first {k} bytes");
    }
    expected.len() + 1
}

#[test]
fn every_writer_reports_a_full_disk_at_every_byte() {
    let a = RawArray::from_shape_vec(vec![3, 2], vec![1.0f32, 2.0, 3.5, -4.0, 5.0, 6.0]).unwrap();
    let values = [1.0f32, 2.0, 3.5, -4.0, 5.0, 6.0];
    let le: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    let be: Vec<u8> = values.iter().flat_map(|v| v.to_be_bytes()).collect();
    let header = |flags: u64, size: u64| words(&[MAGIC, flags, 3, 4, size, 2, 3, 2]);
    let plain = [header(0, 24), le.clone()].concat();
    let big = [header(1, 24), be].concat();
    let block = lz4_flex::block::compress(&le);
    let packed = [header(2, block.len() as u64), block].concat();

    let mut runs = 0;
    runs += every_k("RawArray::write_to", &plain, |w| a.write_to(w));
    runs += every_k("RawArray::write_to_with big-endian", &big, |w| {
        a.write_to_with(w, &WriteOptions::new().big_endian(true))
    });
    runs += every_k("RawArray::write_to_with LZ4", &packed, |w| {
        a.write_to_with(w, &WriteOptions::new().compress(true))
    });

    let mut d = DynArray::from_typed(&a);
    d.set_trailer_bytes(b"kept after the data".to_vec());
    let with_tail = [plain.clone(), b"kept after the data".to_vec()].concat();
    runs += every_k("DynArray::write_to", &with_tail, |w| d.write_to(w));
    runs += every_k(
        "DynArray::write_to_with big-endian",
        &[big, b"kept after the data".to_vec()].concat(),
        |w| d.write_to_with(w, &WriteOptions::new().big_endian(true)),
    );

    let nested = vec![[1u16, 2], [3, 4], [5, 6]];
    let serde_bytes = [
        words(&[MAGIC, 0, 2, 2, 12, 2, 2, 3]),
        (1u16..=6).flat_map(u16::to_le_bytes).collect(),
    ]
    .concat();
    runs += every_k("to_writer", &serde_bytes, |w| to_writer(w, &nested));
    runs += every_k(
        "to_writer (a string)",
        &[words(&[MAGIC, 0, 2, 1, 5, 1, 5]), b"hello".to_vec()].concat(),
        |w| to_writer(w, "hello"),
    );
    assert!(runs > 500, "{runs}");
    println!("{runs} writes into a disk that fills after k bytes");
}

/// The files in a folder, sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// A sequence of `n` f64 whose serialization fails at element `fail_at` (never if `n`).
struct FailingSeq {
    n: usize,
    fail_at: usize,
}

impl Serialize for FailingSeq {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.n))?;
        for i in 0..self.n {
            if i == self.fail_at {
                return Err(S::Error::custom(format!("element {i} failed")));
            }
            seq.serialize_element(&(i as f64))?;
        }
        seq.end()
    }
}

/// Path writers failing half-way (a serializer error after k of 100 000 elements, past the
/// serializer's 256 KiB buffer too; a ragged value; a closure error after k bytes; an
/// unsupported byte order) leave the old file byte-identical and nothing else in the folder.
#[test]
fn failed_path_writes_keep_the_old_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("data.ra");
    let old = RawArray::from_vec(vec![7u32; 10]).to_bytes();
    std::fs::write(&path, &old).unwrap();
    let unchanged = |what: &str| {
        assert_eq!(
            std::fs::read(&path).unwrap(),
            old,
            "{what}: the old file changed"
        );
        assert_eq!(
            listing(dir.path()),
            ["data.ra"],
            "{what}: a file was left behind"
        );
    };

    let n = 100_000;
    for fail_at in [0, 1, 32_767, 32_768, 50_000, n - 1] {
        let e = to_file(&path, &FailingSeq { n, fail_at }).unwrap_err();
        assert!(
            e.to_string().contains(&format!("element {fail_at} failed")),
            "{e}"
        );
        unchanged(&format!("to_file failing at {fail_at}"));
    }
    // Ragged below the top level (top-level rows of different lengths are a ragged file).
    let mut ragged = vec![vec![vec![1.0f64, 2.0]]; 40_000];
    ragged.push(vec![vec![3.0]]);
    let e = to_file(&path, &ragged).unwrap_err();
    assert!(
        matches!(e.kind(), rawarray_serde::ErrorKind::NotRectangular { .. }),
        "{e:?}"
    );
    unchanged("to_file ragged");

    for k in [0usize, 1, 4095, 4096, (1 << 20) + 5] {
        let r: io::Result<()> = write_atomic(&path, |w| {
            w.write_all(&vec![0xEE; k])?;
            Err(io::Error::other("conversion failed"))
        });
        assert!(r.is_err());
        unchanged(&format!("write_atomic failing after {k} bytes"));
    }

    let user = DynArray::new(ElType::User, 3, vec![2], vec![1, 2, 3, 4, 5, 6]).unwrap();
    let e = user
        .write_file_with(&path, &WriteOptions::new().big_endian(true))
        .unwrap_err();
    assert_eq!(e.category(), Category::Usage, "{e}");
    unchanged("DynArray::write_file_with an impossible byte order");

    // And the successes replace it whole.
    to_file(&path, &FailingSeq { n: 3, fail_at: 3 }).unwrap();
    assert_eq!(
        rawarray_serde::from_file::<Vec<f64>>(&path).unwrap(),
        [0.0, 1.0, 2.0]
    );
    assert_eq!(listing(dir.path()), ["data.ra"]);
}

/// A small tmpfs mounted for one test, unmounted when dropped.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    /// `None` where mounting is not permitted: not root, no tmpfs.
    fn mount(bytes: usize) -> Option<Tmpfs> {
        if !cfg!(target_os = "linux") {
            return None;
        }
        let dir = tempfile::tempdir().ok()?;
        let status = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={bytes}"), "tmpfs"])
            .arg(dir.path())
            .stderr(Stdio::null())
            .status();
        match status {
            Ok(s) if s.success() => Some(Tmpfs { dir }),
            _ => None,
        }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn free(&self) -> u64 {
        // statvfs through df, to stay free of unsafe and of extra dependencies.
        let out = Command::new("df")
            .args(["-B1", "--output=avail"])
            .arg(self.path())
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .nth(1)
            .and_then(|l| l.trim().parse().ok())
            .unwrap()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount")
            .arg("-l")
            .arg(self.dir.path())
            .status();
    }
}

/// Writes up to `bytes` zeros to `path`, stopping quietly where the disk is full.
fn fill(path: &Path, bytes: u64) -> io::Result<()> {
    let mut f = std::fs::File::create(path)?;
    let chunk = vec![0u8; 4096];
    let mut left = bytes;
    while left > 0 {
        let n = left.min(4096) as usize;
        match f.write_all(&chunk[..n]) {
            Err(e) if e.kind() == io::ErrorKind::StorageFull => break,
            r => r?,
        }
        left -= n as u64;
    }
    Ok(())
}

/// The `ra` binary next to this test's folder, if `cargo test --workspace` built it.
fn ra_binary() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let ra = exe.parent()?.parent()?.join("ra");
    ra.is_file().then_some(ra)
}

/// A real full disk (a 256 KiB tmpfs, filled to leave 0 to 128 KiB free): every path writer,
/// the record writer and the `ra` tool's outputs fail with the disk's error, the old file
/// stays byte-identical, no temporary file is left, and the space is given back.
#[test]
#[cfg_attr(
    skip_tmpfs,
    ignore = "mounting a tmpfs needs root on Linux (or RAWARRAY_SKIP_TMPFS=1 was set)"
)]
fn a_real_full_disk_loses_nothing() {
    let fs = Tmpfs::mount(256 << 10).unwrap_or_else(|| {
        panic!("cannot mount a tmpfs (a container without CAP_SYS_ADMIN?): set RAWARRAY_SKIP_TMPFS=1 to skip this test")
    });
    let dir = fs.path();
    let target = dir.join("out.ra");
    let old = RawArray::from_vec((0..256u32).collect()).to_bytes();
    // 256 KiB of values that LZ4 cannot shrink.
    let big = RawArray::from_vec(
        (0..1u64 << 15)
            .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15))
            .collect(),
    );
    let big_dyn = DynArray::from_typed(&big);
    let source = tempfile::tempdir().unwrap();
    let big_file = source.path().join("big.ra");
    big.write_file(&big_file).unwrap();
    let ra = ra_binary();
    if ra.is_none() {
        eprintln!("note: the ra binary is not built; its full-disk cases did not run");
    }

    let mut failures = 0;
    for leave in [0u64, 4 << 10, 32 << 10, 64 << 10, 100 << 10, 128 << 10] {
        let fresh = |name: &str| {
            for f in listing(dir) {
                std::fs::remove_file(dir.join(f)).unwrap();
            }
            std::fs::write(&target, &old).unwrap();
            fill(&dir.join("filler"), fs.free().saturating_sub(leave))
                .unwrap_or_else(|e| panic!("{name}: {e}"));
        };
        let check = |name: &str, r: rawarray_serde::Result<()>| {
            let e = r.expect_err(name);
            assert_eq!(e.category(), Category::Io, "{name}: {e}");
            assert_eq!(
                std::fs::read(&target).unwrap(),
                old,
                "{name}: the old file changed"
            );
            assert_eq!(
                listing(dir),
                ["filler", "out.ra"],
                "{name}: a file was left behind"
            );
        };
        let cases: [(&str, &dyn Fn() -> rawarray_serde::Result<()>); 5] = [
            ("RawArray::write_file", &|| big.write_file(&target)),
            ("RawArray::write_file_with LZ4", &|| {
                big.write_file_with(&target, &WriteOptions::new().compress(true))
            }),
            ("DynArray::write_file", &|| big_dyn.write_file(&target)),
            ("to_file", &|| to_file(&target, big.as_slice())),
            ("write_atomic", &|| {
                write_atomic(&target, |w| -> rawarray_serde::Result<()> {
                    big.write_to(w)
                })
            }),
        ];
        for (name, write) in cases {
            fresh(name);
            check(&format!("{name}, {leave} bytes free"), write());
            failures += 1;
        }
        if let Some(ra) = &ra {
            let npy = dir.join("out.npy");
            for (name, args) in [
                (
                    "ra compress",
                    // The whole LZ4 block, which cannot shrink these values (byte shuffle and
                    // zstd, the default, can).
                    vec![
                        "compress".into(),
                        "--codec".into(),
                        "lz4-whole".into(),
                        big_file.clone(),
                        "-o".into(),
                        target.clone(),
                    ],
                ),
                (
                    "ra reshape",
                    vec![
                        "reshape".into(),
                        big_file.clone(),
                        "1024".into(),
                        "32".into(),
                        "-o".into(),
                        target.clone(),
                    ],
                ),
                (
                    "ra convert",
                    vec!["convert".into(), big_file.clone(), npy.clone()],
                ),
            ] {
                fresh(name);
                let out = Command::new(ra).args(&args).output().unwrap();
                assert_eq!(
                    out.status.code(),
                    Some(1),
                    "{name}: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
                assert_eq!(
                    std::fs::read(&target).unwrap(),
                    old,
                    "{name}: the old file changed"
                );
                assert_eq!(
                    listing(dir),
                    ["filler", "out.ra"],
                    "{name}: a file was left behind"
                );
                failures += 1;
            }
        }
    }

    // Records: the flushed ones survive a flush that finds the disk full, and the flush can be
    // retried once there is room.
    for f in listing(dir) {
        std::fs::remove_file(dir.join(f)).unwrap();
    }
    let log = dir.join("log.ra");
    let mut w: RecordWriter<[u64; 2]> = RecordOptions::new()
        .durability(Durability::NoFsync)
        .create(&log)
        .unwrap();
    let rec = |i: u64| [i, i * i + 7];
    for i in 0..100 {
        w.append(&rec(i)).unwrap();
    }
    w.flush().unwrap();
    fill(&dir.join("filler"), fs.free()).unwrap();
    for i in 100..8_000 {
        w.append(&rec(i)).unwrap();
    }
    let e = w.flush().unwrap_err();
    assert_eq!(e.category(), Category::Io, "{e}");
    let r = RecordReader::<[u64; 2]>::open(&log).unwrap();
    assert_eq!(r.len(), 100, "the header still covers the flushed records");
    assert!(r
        .iter()
        .enumerate()
        .all(|(i, v)| v.unwrap()[0] == rec(i as u64)));
    assert!(
        Trailer::read_file(&log).unwrap().is_some(),
        "a trailer copy is valid"
    );
    drop(r);
    std::fs::remove_file(dir.join("filler")).unwrap();
    w.flush().unwrap();
    w.finish().unwrap();
    let all: RawArray<u64> = RawArray::read_file(&log).unwrap();
    assert_eq!(all.dims(), [2, 8_000]);
    assert!(all
        .as_slice()
        .chunks(2)
        .enumerate()
        .all(|(i, v)| v == rec(i as u64)));
    eprintln!("full disk: {failures} failed writes, old file intact each time");
}

/// Record `i` of the concurrency tests.
fn record(i: u64) -> [u64; 2] {
    [i, i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xA5]
}

/// Checks a file being appended to, as any reader might open it: the mapped reader, the plain
/// reader and the trailer all see records 0..n for some n (returned), each intact.
fn valid_prefix(path: &Path) -> u64 {
    let r = RecordReader::<[u64; 2]>::open(path).unwrap();
    for (i, v) in r.iter().enumerate() {
        assert_eq!(*v.unwrap(), [record(i as u64)], "record {i} of {}", r.len());
    }
    let t = r.trailer().expect("a trailer copy is always valid");
    assert_eq!(t.params["run"], "concurrent");
    let plain: RawArray<u64> = RawArray::read_file(path).unwrap();
    let m = plain.dims()[1];
    assert!(
        m >= r.len() as u64,
        "the plain read came later, it sees no fewer"
    );
    assert!(plain
        .as_slice()
        .chunks(2)
        .enumerate()
        .all(|(i, v)| v == record(i as u64)));
    m
}

fn append_records(path: &Path, n: u64, per_flush: u64, progress: impl Fn(u64)) {
    let mut w: RecordWriter<[u64; 2]> = RecordOptions::new()
        .durability(Durability::NoFsync)
        .params(serde_json::json!({"run": "concurrent"}))
        .buffer_bytes(1 << 30)
        .create(path)
        .unwrap();
    for i in 0..n {
        w.append(&record(i)).unwrap();
        if (i + 1) % per_flush == 0 {
            w.flush().unwrap();
            progress(i + 1);
        }
    }
    w.finish().unwrap();
}

#[test]
fn a_reader_thread_racing_an_appending_writer_sees_a_valid_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("live.ra");
    let n = 20_000;
    append_records(&path, 0, 1, |_| {}); // the file exists before the reader starts
    let done = Arc::new(AtomicBool::new(false));
    let writer = {
        let (path, done) = (path.clone(), done.clone());
        std::thread::spawn(move || {
            append_records(&path, n, 37, |_| {});
            done.store(true, Ordering::SeqCst);
        })
    };
    let mut opens = 0;
    while !done.load(Ordering::SeqCst) {
        // `create` replaces the file atomically: a reader opens the old (empty) or the new one.
        valid_prefix(&path);
        opens += 1;
    }
    writer.join().unwrap();
    assert_eq!(valid_prefix(&path), n);
    assert!(opens > 0);
}

/// A child process, killed if the test fails before it does (the writer never stops itself).
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A writer in another process, killed without warning after a while: while it runs, every
/// open sees a valid prefix; after the kill, the file holds at least every record whose flush
/// the writer reported (it does not sync; a killed process loses nothing the kernel has).
#[test]
fn a_writer_process_killed_mid_write_loses_no_flushed_record() {
    const CHILD: &str = "RA_WRITE_FAULTS_WRITER";
    if let Some(path) = std::env::var_os(CHILD) {
        // The child: append "forever", reporting each flush on stdout.
        let stdout = std::sync::Mutex::new(io::stdout());
        append_records(Path::new(&path), u64::MAX, 50, |k| {
            let mut out = stdout.lock().unwrap();
            let _ = writeln!(out, "flushed {k}");
            let _ = out.flush();
        });
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("killed.ra");
    let mut child = KillOnDrop(
        Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "a_writer_process_killed_mid_write_loses_no_flushed_record",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD, &path)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut lines = io::BufReader::new(child.0.stdout.take().unwrap()).lines();
    let mut reported = 0;
    let mut opens = 0;
    while reported < 30_000 {
        let line = lines.next().expect("the writer reports flushes").unwrap();
        let Some(k) = line.strip_prefix("flushed ") else {
            continue;
        };
        reported = k.parse().unwrap();
        if reported % 1000 == 0 {
            assert!(valid_prefix(&path) >= reported);
            opens += 1;
        }
    }
    child.0.kill().unwrap();
    child.0.wait().unwrap();
    // Whatever the kill interrupted, the file is valid and has every reported record.
    let seen = valid_prefix(&path);
    assert!(
        seen >= reported,
        "{seen} records, {reported} reported flushed"
    );
    let r = rawarray_serde::recover(&path).unwrap();
    assert!(r.records_after >= seen);
    valid_prefix(&path);
    assert!(opens >= 20);
}
