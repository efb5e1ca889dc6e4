//! `ra watch FILE`: a writer (the library's `RecordWriter`, in this process) appends and
//! flushes; `ra watch`, spawned with its stdout piped, must print each flushed record within a
//! second, and nothing that was not flushed.

mod common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use rawarray_serde::RecordWriter;

use common::*;

/// A spawned `ra watch`, its stdout lines arriving on a channel; killed when dropped.
struct Watch {
    child: Child,
    lines: mpsc::Receiver<String>,
}

impl Watch {
    fn start(args: &[&dyn AsRef<std::ffi::OsStr>]) -> Watch {
        let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("ra"));
        cmd.arg("watch");
        // A test run started in the background by a non-interactive shell (`cargo test &`, a
        // CI step launched so) has SIGINT ignored, which a child inherits through exec
        // (POSIX): then Ctrl-C could not end it, whatever `ra watch` does. The tests are of
        // Ctrl-C at a terminal, where it is not ignored, so the child gets the default back.
        #[cfg(unix)]
        {
            use std::os::unix::process::CommandExt;
            // SAFETY: the closure runs in the child between fork and exec and calls only
            // `signal`, which is async-signal-safe; it touches no memory of the parent.
            unsafe {
                cmd.pre_exec(|| {
                    libc::signal(libc::SIGINT, libc::SIG_DFL);
                    Ok(())
                });
            }
        }
        for a in args {
            cmd.arg(a);
        }
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                if tx.send(line.unwrap()).is_err() {
                    break;
                }
            }
        });
        Watch { child, lines }
    }

    /// The next `n` lines, each within a second of the one before.
    fn next(&self, n: usize) -> Vec<String> {
        self.next_within(n, Duration::from_secs(1))
    }

    /// The next `n` lines, each within `d`.
    fn next_within(&self, n: usize, d: Duration) -> Vec<String> {
        (0..n)
            .map(|i| {
                self.lines
                    .recv_timeout(d)
                    .unwrap_or_else(|_| panic!("line {i} of {n} did not come within {d:?}"))
            })
            .collect()
    }

    /// Asserts nothing more is printed for a while.
    fn quiet_for(&self, d: Duration) {
        if let Ok(line) = self.lines.recv_timeout(d) {
            panic!("unexpected line: {line}");
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `ra cat`'s lines for records `from..to` of a finished copy: the same printing.
fn cat_lines(path: &Path, from: usize, to: usize) -> Vec<String> {
    let text = stdout_of(ra().arg("cat").arg(path));
    text.lines()
        .skip(from)
        .take(to - from)
        .map(String::from)
        .collect()
}

#[test]
fn prints_each_flushed_record_within_a_second_and_starts_from_the_last_n() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.ra");
    let mut w = RecordWriter::<Rec>::create(&path, serde_json::json!({"dt": 0.5})).unwrap();
    w.append_slice(&recs(5)).unwrap();
    w.flush().unwrap();
    let watch = Watch::start(&[&"-n", &"2", &path]);
    // Starting the process may take longer on a loaded machine; the flushes below may not.
    let first = watch.next_within(2, Duration::from_secs(10));
    // rec(3): t 1.5, xyz [3, 3.25, -3], id 22; by hand, as ra cat prints records.
    assert_eq!(first[0], "[3]\t{t: 1.5, xyz: [3.0, 3.25, -3.0], id: 22}");
    assert!(first[1].starts_with("[4]\t{t: 2.0,"), "{first:?}");
    let all = recs(9);
    // Appended but not flushed: not committed, not printed.
    w.append(&all[5]).unwrap();
    watch.quiet_for(Duration::from_millis(400));
    w.flush().unwrap();
    let flushed = Instant::now();
    let one = watch.next(1);
    assert!(flushed.elapsed() < Duration::from_secs(1));
    assert!(one[0].starts_with("[5]\t{t: 2.5,"), "{one:?}");
    w.append_slice(&all[6..9]).unwrap();
    w.flush().unwrap();
    let three = watch.next(3);
    watch.quiet_for(Duration::from_millis(300));
    w.finish().unwrap();
    let mut seen = first;
    seen.extend(one);
    seen.extend(three);
    assert_eq!(seen, cat_lines(&path, 3, 9));
}

#[test]
fn summary_prints_one_line_per_flush() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.ra");
    let mut w = RecordWriter::<Rec>::create(&path, serde_json::Value::Null).unwrap();
    w.append_slice(&recs(3)).unwrap();
    w.flush().unwrap();
    let watch = Watch::start(&[&"--summary", &"-n", &"1", &path]);
    let p = path.display();
    // Started: the last record already there is its first line (a handshake, not a wait).
    assert_eq!(
        watch.next_within(1, Duration::from_secs(10)),
        [format!("{p}: +1 record (3 in all)")]
    );
    for (batch, total) in [(2u64, 5u64), (1, 6), (4, 10)] {
        let before = total - batch;
        w.append_slice(&recs(total)[before as usize..]).unwrap();
        w.flush().unwrap();
        let s = if batch == 1 { "" } else { "s" };
        // The line is the handshake: the next flush comes after the poll that saw this one.
        assert_eq!(
            watch.next_within(1, Duration::from_secs(10)),
            [format!("{p}: +{batch} record{s} ({total} in all)")]
        );
    }
    watch.quiet_for(Duration::from_millis(300));
    interrupt_ends_it(watch);
}

/// Ctrl-C (SIGINT) ends it by the default action: killed by the signal, as a shell shows
/// with status 130.
#[cfg(unix)]
fn interrupt_ends_it(mut watch: Watch) {
    use std::os::unix::process::ExitStatusExt;
    let pid = watch.child.id().to_string();
    assert!(std::process::Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .unwrap()
        .success());
    let started = Instant::now();
    let status = loop {
        if let Some(s) = watch.child.try_wait().unwrap() {
            break s;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "SIGINT did not end it"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.signal(), Some(2));
}

#[cfg(not(unix))]
fn interrupt_ends_it(_: Watch) {}

#[test]
fn a_replaced_or_cut_file_stops_it_with_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.ra");
    record_file(&path, 4);
    let mut watch = Watch::start(&[&"-n", &"1", &path]);
    // Started: its first line (the last record) is the handshake.
    assert!(watch.next_within(1, Duration::from_secs(10))[0].starts_with("[3]\t"));
    // Another file renamed over the name (as every atomic rewrite does).
    let other = dir.path().join("other.ra");
    record_file(&other, 2);
    std::fs::rename(&other, &path).unwrap();
    let status = exit_within(&mut watch.child, Duration::from_secs(10));
    assert_eq!(status.code(), Some(1));
    let mut err = String::new();
    std::io::Read::read_to_string(watch.child.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert_eq!(
        err,
        format!(
            "ra: {}: was replaced by another file; stopped\n",
            path.display()
        )
    );

    // Cut in place below what was printed: the header counts fewer records.
    let watch2 = Watch::start(&[&"-n", &"1", &path]);
    assert!(watch2.next_within(1, Duration::from_secs(10))[0].starts_with("[1]\t"));
    let mut b = std::fs::read(&path).unwrap();
    b[48..56].copy_from_slice(&1u64.to_le_bytes());
    // size: one record of 22 bytes (f64, 3 f32, u16).
    b[32..40].copy_from_slice(&22u64.to_le_bytes());
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .and_then(|mut f| std::io::Write::write_all(&mut f, &b[..56]))
        .unwrap();
    let mut watch2 = watch2;
    let status = exit_within(&mut watch2.child, Duration::from_secs(10));
    assert_eq!(status.code(), Some(1));
    let mut err = String::new();
    std::io::Read::read_to_string(watch2.child.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert!(
        err.contains("was cut from 2 to 1 records; stopped"),
        "{err}"
    );
}

/// The child's exit status; fails the test (the child is killed by `Watch`'s drop) if it is
/// still running after `d`.
fn exit_within(child: &mut Child, d: Duration) -> std::process::ExitStatus {
    let started = Instant::now();
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        assert!(started.elapsed() < d, "still running after {d:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Read syscalls the process `pid` has made (Linux's /proc/PID/io): ra's header reads, for a
/// handshake on its polls rather than a guess at their timing.
#[cfg(target_os = "linux")]
fn reads_of(pid: u32) -> u64 {
    let io = std::fs::read_to_string(format!("/proc/{pid}/io")).unwrap();
    io.lines()
        .find_map(|l| l.strip_prefix("syscr: "))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// Waits until `pid` has made `n` more read syscalls (ra polls every 0.1 s, reading the header).
#[cfg(target_os = "linux")]
fn wait_for_reads(pid: u32, n: u64) {
    let start = reads_of(pid);
    let deadline = Instant::now() + Duration::from_secs(10);
    while reads_of(pid) < start + n {
        assert!(Instant::now() < deadline, "ra stopped reading");
        std::thread::yield_now();
    }
}

/// A header that cannot be decoded at one poll (a writer caught mid-update, as the library's
/// `stable_header` guards against) is read again at the next polls; one that stays bad stops
/// ra watch with an error.
#[cfg(target_os = "linux")]
#[test]
fn a_header_bad_for_a_poll_is_read_again_and_one_that_stays_bad_stops_it() {
    use std::os::unix::fs::FileExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.ra");
    record_file(&path, 4);
    let mut watch = Watch::start(&[&"-n", &"1", &path]);
    assert!(watch.next_within(1, Duration::from_secs(10))[0].starts_with("[3]\t"));
    let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    let pid = watch.child.id();
    // The magic spoiled: each poll reads the header at least twice (two agreeing reads, each
    // a read and an end-of-file read): 8 reads are at least one whole poll that saw it.
    file.write_at(b"X", 0).unwrap();
    wait_for_reads(pid, 8);
    file.write_at(b"r", 0).unwrap();
    wait_for_reads(pid, 8);
    assert!(
        watch.child.try_wait().unwrap().is_none(),
        "stopped on one bad poll"
    );
    // Spoiled for good: it stops, naming the problem.
    file.write_at(b"X", 0).unwrap();
    let status = exit_within(&mut watch.child, Duration::from_secs(10));
    assert_eq!(status.code(), Some(1));
    let mut err = String::new();
    std::io::Read::read_to_string(watch.child.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert!(err.contains("bad magic"), "{err}");
}

#[test]
fn refuses_what_it_cannot_follow() {
    let err = fails_with_one_line(ra().arg("watch").arg(reference("mnist_8_z.ra")));
    assert!(err.contains("stored as lz4-whole"), "{err}");
    fails_with_one_line(ra().arg("watch").arg("/nonexistent/run.ra"));
}

/// A chunked record file (flag bit 2) is followed through the codec layer: its last records
/// print as `ra cat` prints them from the plain file.
#[test]
fn follows_a_chunked_record_file() {
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("run.ra");
    record_file(&plain, 30);
    let z = dir.path().join("z.ra");
    ra().arg("compress")
        .arg(&plain)
        .args(["-o"])
        .arg(&z)
        .args(["--chunks", "4"])
        .assert()
        .success();
    let watch = Watch::start(&[&"-n", &"6", &z]);
    let lines = watch.next_within(6, Duration::from_secs(10));
    assert_eq!(lines, cat_lines(&plain, 24, 30));
}

/// A compressed record file growing under a `RecordWriter` (records compressed a chunk at a
/// time, the partial last chunk replaced at each flush): each flushed record prints within a
/// second, nothing unflushed prints, and the lines are `ra cat`'s of the finished file.
#[test]
fn follows_a_compressed_record_writer() {
    use rawarray_serde::codec::Codec;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("z.ra");
    let mut w: RecordWriter<Rec> = rawarray_serde::RecordOptions::new()
        .codec(Codec::Zstd)
        .chunk_records(4)
        .create(&path)
        .unwrap();
    let all = recs(14);
    w.append_slice(&all[..5]).unwrap();
    w.flush().unwrap();
    let watch = Watch::start(&[&"-n", &"2", &path]);
    let mut seen = watch.next_within(2, Duration::from_secs(10));
    // Appended but not flushed: not committed, not printed.
    w.append(&all[5]).unwrap();
    watch.quiet_for(Duration::from_millis(400));
    w.flush().unwrap();
    seen.extend(watch.next(1));
    // Within the last chunk, then across two chunk boundaries.
    for (from, to) in [(6, 7), (7, 13), (13, 14)] {
        w.append_slice(&all[from..to]).unwrap();
        w.flush().unwrap();
        seen.extend(watch.next(to - from));
    }
    watch.quiet_for(Duration::from_millis(300));
    w.finish().unwrap();
    assert_eq!(seen, cat_lines(&path, 3, 14));
}
