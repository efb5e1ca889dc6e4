//! Writers of blocks in many processes (issue 24, items 2 and 3): of 8 processes racing to
//! create one new array exactly one creates it and the others are told (and open it: no row is
//! lost); a block a SIGKILLed writer left half written is reported by its journal, and
//! `recover` changes nothing; a damaged journal is an error. The truth is the file's own bytes
//! (row `r` holds `r * 1000 + column`), read without the library.
// The old names (ChunkOptions, SectionReader, the ArrayWriter constructors) are kept
// one release as deprecated re-exports; these tests still use them.
#![allow(deprecated)]
// A block of a 1-d array is one range: `&[0..2]`.
#![allow(clippy::single_range_in_vec_init)]

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use rawarray_serde::{recover, ArrayWriter, ErrorKind, RawArray};

/// Set in a child process: `ROLE\nPATH\nROW\nDIR`.
const CHILD: &str = "RAWARRAY_BLOCK_CHILD";
const RANKS: u64 = 8;
const COLS: u64 = 1000;
const ROUNDS: usize = 20;

fn row_values(row: u64) -> Vec<u64> {
    (0..COLS).map(|c| row * 1000 + c).collect()
}

/// The u64 elements of a 2-d array file, from its bytes.
fn elements(path: &Path) -> Vec<u64> {
    let bytes = fs::read(path).unwrap();
    assert_eq!(&bytes[..8], b"rawarray");
    let ndims = u64::from_le_bytes(bytes[40..48].try_into().unwrap()) as usize;
    bytes[48 + 8 * ndims..]
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "gave up waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// The child roles; does nothing unless the parent set `CHILD`.
///
/// - `open_or_create`: waits for `DIR/go`, opens or creates the array, writes its row,
///   finishes; prints `created` or `opened`.
/// - `create`: waits for `DIR/go`, creates the array; a loser opens it. Writes `won` or
///   `locked` to `DIR/status-ROW`, writes its row, and finishes once `DIR/finish` exists, so
///   that no create comes after a finish.
/// - `slow_block`: opens the array and writes row 1 of a `[2, N]` array: N runs of one element,
///   slow enough to be killed in the middle.
#[test]
fn block_child() {
    let Ok(spec) = std::env::var(CHILD) else {
        return;
    };
    let [role, path, row, dir]: [&str; 4] =
        spec.split('\n').collect::<Vec<_>>().try_into().unwrap();
    let (path, row, dir) = (Path::new(path), row.parse::<u64>().unwrap(), Path::new(dir));
    let go = || wait_for("go", || dir.join("go").exists());
    match role {
        "open_or_create" => {
            go();
            let w = ArrayWriter::open_or_create::<u64>(path, &[COLS, RANKS]).unwrap();
            w.write_subset(&[0..COLS, row..row + 1], &row_values(row))
                .unwrap();
            print!("{}", if w.created() { "created" } else { "opened" });
            w.finish().unwrap();
        }
        "create" => {
            go();
            let (w, status) = match ArrayWriter::create::<u64>(path, &[COLS, RANKS]) {
                Ok(w) => (w, "won"),
                Err(e) if matches!(e.kind(), ErrorKind::Locked { path: p } if p == path) => {
                    // The winner holds its file alone for a moment (until its journal is in
                    // place): a loaded machine can stretch that past one open's wait.
                    let open = (0..50)
                        .find_map(|_| ArrayWriter::open(path).ok())
                        .expect("the winner's file opens");
                    (open, "locked")
                }
                Err(e) => panic!("{e}"),
            };
            fs::write(dir.join(format!("status-{row}")), status).unwrap();
            w.write_subset(&[0..COLS, row..row + 1], &row_values(row))
                .unwrap();
            wait_for("finish", || dir.join("finish").exists());
            w.finish().unwrap();
        }
        "slow_block" => {
            let w = ArrayWriter::open(path).unwrap();
            let n = w.header().dims[1];
            w.write_subset(&[1..2, 0..n], &vec![7u32; n as usize])
                .unwrap();
            w.finish().unwrap();
        }
        _ => panic!("unknown role {role}"),
    }
}

fn spawn(role: &str, path: &Path, row: u64, dir: &Path) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "block_child",
            "--exact",
            "--nocapture",
            "--test-threads=1",
            "--quiet",
        ])
        .env(
            CHILD,
            format!("{role}\n{}\n{row}\n{}", path.display(), dir.display()),
        )
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

fn check_all_rows(path: &Path) {
    let got = elements(path);
    for row in 0..RANKS {
        let r = (row * COLS) as usize;
        assert_eq!(got[r..r + COLS as usize], row_values(row), "row {row} lost");
    }
    assert!(ArrayWriter::uncommitted_blocks(path).unwrap().is_empty());
}

#[test]
fn eight_processes_racing_open_or_create_make_one_file_and_lose_no_row() {
    for round in 0..ROUNDS {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("race.ra");
        let children: Vec<Child> = (0..RANKS)
            .map(|row| spawn("open_or_create", &path, row, dir.path()))
            .collect();
        fs::write(dir.path().join("go"), "").unwrap();
        let mut created = 0;
        for c in children {
            let out = c.wait_with_output().unwrap();
            let said = String::from_utf8_lossy(&out.stdout);
            assert!(
                out.status.success(),
                "round {round}: {said} {}",
                String::from_utf8_lossy(&out.stderr)
            );
            if said.contains("created") {
                created += 1;
            } else {
                assert!(said.contains("opened"), "round {round}: {said}");
            }
        }
        assert_eq!(
            created, 1,
            "round {round}: exactly one process creates the file"
        );
        check_all_rows(&path);
        assert!(
            !dir.path().join("race.ra.journal").exists(),
            "finished: no journal left"
        );
    }
}

#[test]
fn eight_processes_racing_create_have_one_winner_and_seven_told() {
    for round in 0..ROUNDS {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("race.ra");
        let children: Vec<Child> = (0..RANKS)
            .map(|row| spawn("create", &path, row, dir.path()))
            .collect();
        fs::write(dir.path().join("go"), "").unwrap();
        let status = |row: u64| fs::read_to_string(dir.path().join(format!("status-{row}")));
        wait_for("every create", || (0..RANKS).all(|r| status(r).is_ok()));
        fs::write(dir.path().join("finish"), "").unwrap();
        for c in children {
            let out = c.wait_with_output().unwrap();
            assert!(
                out.status.success(),
                "round {round}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let won = (0..RANKS).filter(|&r| status(r).unwrap() == "won").count();
        let told = (0..RANKS)
            .filter(|&r| status(r).unwrap() == "locked")
            .count();
        assert_eq!((won, told), (1, 7), "round {round}");
        check_all_rows(&path);
    }
}

#[test]
fn a_create_over_a_file_no_writer_holds_replaces_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rerun.ra");
    let w = ArrayWriter::create::<u64>(&path, &[2]).unwrap();
    w.write_subset(&[0..2], &[5u64, 6]).unwrap();
    // Held: a second create is refused and changes nothing.
    let e = ArrayWriter::create::<u64>(&path, &[2]).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::Locked { .. }), "{e}");
    w.finish().unwrap();
    assert_eq!(elements(&path), [5, 6]);
    // Free: the rerun starts afresh.
    ArrayWriter::create::<u64>(&path, &[3])
        .unwrap()
        .finish()
        .unwrap();
    assert_eq!(elements(&path), [0, 0, 0]);
    // open_or_create opens it, never replaces it, and refuses another shape.
    let w = ArrayWriter::open_or_create::<u64>(&path, &[3]).unwrap();
    assert!(!w.created());
    w.write_subset(&[2..3], &[9u64]).unwrap();
    w.finish().unwrap();
    assert_eq!(elements(&path), [0, 0, 9]);
    let e = ArrayWriter::open_or_create::<u64>(&path, &[4]).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::DimsMismatch { .. }), "{e}");
    let e = ArrayWriter::open_or_create::<u32>(&path, &[3]).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::TypeMismatch { .. }), "{e}");
}

/// Creates a `[2, n]` u32 array, starts a child writing row 1 run by run, and SIGKILLs it once
/// the block's first element is written (so in the middle of the block).
#[cfg(unix)]
pub fn killed_mid_block(path: &Path, n: u64) {
    ArrayWriter::create::<u32>(path, &[2, n])
        .unwrap()
        .finish()
        .unwrap();
    let dir = path.parent().unwrap();
    let mut child = spawn("slow_block", path, 1, dir);
    let first = 48 + 16 + 4; // header with 2 dims, then element (1, 0)
    let mut buf = [0u8; 4];
    wait_for("the block's first element", || {
        use std::os::unix::fs::FileExt;
        let f = fs::File::open(path).unwrap();
        f.read_exact_at(&mut buf, first).unwrap();
        buf != [0; 4]
    });
    child.kill().unwrap(); // SIGKILL
    let status = child.wait().unwrap();
    assert!(!status.success(), "the child was killed, not finished");
}

#[cfg(unix)]
#[test]
fn a_block_torn_by_a_killed_writer_is_reported_until_it_is_written_again() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("torn.ra");
    let n = 1 << 21;
    killed_mid_block(&path, n);
    let torn = vec![vec![1..2, 0..n]];
    assert_eq!(ArrayWriter::uncommitted_blocks(&path).unwrap(), torn);
    let elements_before = fs::read(&path).unwrap();
    let got: Vec<u32> = elements_before[64..]
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(got[1], 7, "the block was begun");

    // recover reports it and changes nothing (no header extended, as for records).
    let e = recover(&path).unwrap_err();
    match e.kind() {
        ErrorKind::Uncommitted { path: p, blocks } => {
            assert_eq!((p, blocks), (&path, &torn));
        }
        _ => panic!("{e}"),
    }
    assert!(
        e.to_string()
            .contains(&format!("block [1..2, 0..{n}) was never committed")),
        "{e}"
    );
    assert_eq!(fs::read(&path).unwrap(), elements_before);

    // A writer of another block does not clear the report: finishing last, it is told.
    let w = ArrayWriter::open(&path).unwrap();
    w.write_subset(&[0..1, 0..n], &vec![3u32; n as usize])
        .unwrap();
    let e = w.finish().unwrap_err();
    assert!(
        matches!(e.kind(), ErrorKind::Uncommitted { blocks, .. } if *blocks == torn),
        "{e}"
    );
    assert_eq!(ArrayWriter::uncommitted_blocks(&path).unwrap(), torn);

    // Written again whole, the block is committed, and the last finish removes the journal.
    let w = ArrayWriter::open(&path).unwrap();
    w.write_subset(&[1..2, 0..n], &vec![7u32; n as usize])
        .unwrap();
    w.finish().unwrap();
    assert!(ArrayWriter::uncommitted_blocks(&path).unwrap().is_empty());
    assert!(!journal(&path).exists());
    let a: RawArray<u32> = RawArray::read_file(&path).unwrap();
    assert!(a.as_slice().chunks_exact(2).all(|p| p == [3, 7]));
}

fn journal(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap().to_os_string();
    name.push(".journal");
    path.with_file_name(name)
}

#[test]
fn a_damaged_journal_is_an_error_and_another_files_journal_is_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("j.ra");
    let w = ArrayWriter::create::<u16>(&path, &[4]).unwrap();
    w.write_subset(&[0..2], &[1u16, 2]).unwrap();
    let good = fs::read(journal(&path)).unwrap();
    assert_eq!(&good[..8], b"rajournl");
    assert_eq!(
        good.len(),
        32 + 2 * (16 + 16),
        "a header, a begin and an end"
    );
    drop(w); // not finished: the journal stays, every block in it committed
    assert!(ArrayWriter::uncommitted_blocks(&path).unwrap().is_empty());

    let hostile: [Vec<u8>; 4] = [
        b"not a journal at all, but long enough for a header".to_vec(),
        good[..good.len() - 3].to_vec(),
        {
            let mut b = good.clone();
            b[32 + 16] = 9; // a range's start, under its CRC
            b
        },
        {
            let mut b = good.clone();
            b.truncate(32 + 32); // an end lost: the block is uncommitted, not an error
            b
        },
    ];
    for (i, bytes) in hostile.iter().enumerate() {
        fs::write(journal(&path), bytes).unwrap();
        if i == 3 {
            assert_eq!(
                ArrayWriter::uncommitted_blocks(&path).unwrap(),
                [vec![0..2]]
            );
            continue;
        }
        for e in [
            ArrayWriter::uncommitted_blocks(&path).unwrap_err(),
            recover(&path).unwrap_err(),
            ArrayWriter::open(&path).unwrap_err(),
        ] {
            assert!(
                matches!(e.kind(), ErrorKind::BadJournal { .. }),
                "case {i}: {e}"
            );
            assert!(e.to_string().contains("j.ra.journal"), "case {i}: {e}");
        }
    }

    // The file replaced by another writer: the journal (uncommitted block and all) is another
    // file's, ignored, and replaced by the next block writer.
    RawArray::from_vec(vec![1u16, 2, 3, 4])
        .write_file(&path)
        .unwrap();
    assert!(ArrayWriter::uncommitted_blocks(&path).unwrap().is_empty());
    let w = ArrayWriter::open(&path).unwrap();
    w.write_subset(&[3..4], &[40u16]).unwrap();
    w.finish().unwrap();
    assert!(!journal(&path).exists());
    let a: RawArray<u16> = RawArray::read_file(&path).unwrap();
    assert_eq!(a.as_slice(), [1, 2, 3, 40]);
}

#[cfg(unix)]
#[test]
fn a_fifo_in_place_of_the_journal_is_refused_without_blocking() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f.ra");
    ArrayWriter::create::<u8>(&path, &[4])
        .unwrap()
        .finish()
        .unwrap();
    let made = Command::new("mkfifo").arg(journal(&path)).status().unwrap();
    assert!(made.success());
    for e in [
        ArrayWriter::uncommitted_blocks(&path).unwrap_err(),
        ArrayWriter::open(&path).unwrap_err(),
    ] {
        assert!(matches!(e.kind(), ErrorKind::BadJournal { .. }), "{e}");
        assert!(e.to_string().contains("not a regular file"), "{e}");
    }
}
