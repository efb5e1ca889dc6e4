//! One writer at a time (issue 14, cases 1 to 5): a second writer, in this process or another,
//! `recover`, `create` and rewrites over a live writer are refused with `ErrorKind::Locked` and
//! change nothing; a stale writer cannot exist, so a mapped reader is never cut short; bytes
//! after the data that are not our trailer are never deleted unasked. The truth is the records'
//! own values (record `i` holds `i`) and the file's bytes before and after.

use std::fs;
use std::path::Path;
use std::process::Command;

use rawarray_serde::{
    recover, DynArray, ErrorKind, RawArray, ReadMode, RecordOptions, RecordReader, RecordWriter,
    Trailer,
};

/// Set in the child process: `PATH\nFIRST\nCOUNT`, the records it appends.
const CHILD: &str = "RAWARRAY_LOCK_CHILD";

/// Exit code of a child refused with `ErrorKind::Locked`.
const LOCKED_EXIT: i32 = 3;

fn is_locked(e: &rawarray_serde::Error, path: &Path) -> bool {
    matches!(e.kind(), ErrorKind::Locked { path: p } if p == path)
}

/// The records of a u64 record file, read by an independent route (the whole file's bytes).
fn records(path: &Path) -> Vec<u64> {
    let bytes = fs::read(path).unwrap();
    let n = u64::from_le_bytes(bytes[48..56].try_into().unwrap()) as usize;
    assert_eq!(&bytes[..8], b"rawarray");
    bytes[56..56 + 8 * n]
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

fn options() -> RecordOptions {
    RecordOptions::new().params(serde_json::json!({"test": "lock"}))
}

#[test]
fn a_second_writer_in_the_same_process_is_refused_and_nothing_is_lost() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("two.ra");
    let mut a: RecordWriter<u64> = options().create(&path).unwrap();
    a.append_slice(&[1, 2, 3]).unwrap();
    // Case 1 as reported: B opened while A appends, appends 100, 101 and flushes.
    let b = options().open::<u64>(&path).unwrap_err();
    assert!(is_locked(&b, &path), "{b}");
    assert_eq!(
        b.to_string(),
        format!("{} is being written by another writer", path.display())
    );
    let b = options().create::<u64>(&path).unwrap_err();
    assert!(is_locked(&b, &path), "{b}");
    a.append_slice(&[4, 5, 6]).unwrap();
    a.finish().unwrap();
    assert_eq!(records(&path), [1, 2, 3, 4, 5, 6]);

    // Free once A is finished: B appends after A's records.
    let mut b: RecordWriter<u64> = options().open(&path).unwrap();
    b.append_slice(&[100, 101]).unwrap();
    b.finish().unwrap();
    assert_eq!(records(&path), [1, 2, 3, 4, 5, 6, 100, 101]);
}

/// The child role: appends `COUNT` records from `FIRST` to `PATH` and finishes, or exits with
/// `LOCKED_EXIT` when the file is held. Does nothing unless the parent set `CHILD`.
#[test]
fn writer_child() {
    let Ok(spec) = std::env::var(CHILD) else {
        return;
    };
    let [path, first, count]: [&str; 3] = spec.split('\n').collect::<Vec<_>>().try_into().unwrap();
    let (first, count): (u64, u64) = (first.parse().unwrap(), count.parse().unwrap());
    let mut w: RecordWriter<u64> = match options().open(path) {
        Ok(w) => w,
        Err(e) if matches!(e.kind(), ErrorKind::Locked { .. }) => {
            eprintln!("{e}");
            std::process::exit(LOCKED_EXIT)
        }
        Err(e) => panic!("{e}"),
    };
    for i in first..first + count {
        w.append(&i).unwrap();
        if i % 97 == 0 {
            w.flush().unwrap();
        }
    }
    w.finish().unwrap();
}

fn run_child(path: &Path, first: u64, count: u64) -> std::process::Output {
    Command::new(std::env::current_exe().unwrap())
        .args(["writer_child", "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, format!("{}\n{first}\n{count}", path.display()))
        .output()
        .unwrap()
}

#[test]
fn a_second_writer_in_another_process_is_refused_and_nothing_is_lost() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("procs.ra");
    let mut a: RecordWriter<u64> = options().create(&path).unwrap();
    a.append_slice(&(0..1000).collect::<Vec<_>>()).unwrap();
    a.flush().unwrap();
    let before = fs::read(&path).unwrap();

    // While this process holds the file, the other process's writer fails at once.
    let out = run_child(&path, 5000, 2000);
    assert_eq!(
        out.status.code(),
        Some(LOCKED_EXIT),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("is being written by another writer"));
    assert_eq!(
        fs::read(&path).unwrap(),
        before,
        "the refused writer wrote nothing"
    );

    a.append_slice(&(1000..2000).collect::<Vec<_>>()).unwrap();
    a.finish().unwrap();
    // Released: the other process appends its 2000 after ours.
    let out = run_child(&path, 5000, 2000);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let want: Vec<u64> = (0..2000).chain(5000..7000).collect();
    assert_eq!(records(&path), want);
}

#[test]
fn recover_and_rewrites_during_a_live_writer_are_refused_and_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("live.ra");
    // A small buffer: records are written ahead of the header, uncommitted, as in case 3.
    let mut w: RecordWriter<u64> = options().buffer_bytes(64).create(&path).unwrap();
    w.append_slice(&(0..1001).collect::<Vec<_>>()).unwrap();
    w.flush().unwrap();
    w.append_slice(&(1001..1500).collect::<Vec<_>>()).unwrap();
    let before = fs::read(&path).unwrap();

    let refused = [
        recover(&path).unwrap_err(),
        options().create::<u64>(&path).unwrap_err(),
        RawArray::from_vec(vec![9u64])
            .write_file(&path)
            .unwrap_err(),
        DynArray::from_typed(&RawArray::from_vec(vec![9u8]))
            .write_file(&path)
            .unwrap_err(),
        rawarray_serde::to_file(&path, &[7u64]).unwrap_err(),
    ];
    for e in &refused {
        assert!(is_locked(e, &path), "{e}");
    }
    assert_eq!(fs::read(&path).unwrap(), before, "nothing was written");
    assert_eq!(
        fs::read_dir(dir.path()).unwrap().count(),
        1,
        "no temporary file left"
    );

    w.flush().unwrap();
    w.append_slice(&(1500..2000).collect::<Vec<_>>()).unwrap();
    w.finish().unwrap();
    assert_eq!(records(&path), (0..2000).collect::<Vec<_>>());
    // Finished, the file is recover's again: nothing to do.
    let r = recover(&path).unwrap();
    assert_eq!((r.records_before, r.records_after), (2000, 2000));
}

#[test]
fn no_stale_writer_can_cut_a_mapped_reader_short() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mapped.ra");
    let mut a: RecordWriter<u64> = options().create(&path).unwrap();
    // Case 2: B opened while the file is empty would truncate it in `finish`; it cannot open.
    assert!(is_locked(&options().open::<u64>(&path).unwrap_err(), &path));
    let n = 1 << 20; // 8 MiB of records
    a.append_slice(&(0..n).collect::<Vec<_>>()).unwrap();
    a.flush().unwrap();
    let reader = RecordReader::<u64>::open(&path).unwrap();
    assert_eq!(reader.len() as u64, n);
    a.append_slice(&[n]).unwrap();
    a.finish().unwrap();
    // Another writer after A: it appends and cuts only after its own data end.
    let mut c: RecordWriter<u64> = options().open(&path).unwrap();
    c.append(&(n + 1)).unwrap();
    c.finish().unwrap();
    for i in [0, n / 2, n - 1] {
        assert_eq!(reader.get(i as usize).unwrap(), Some(i));
    }
    assert_eq!(records(&path).len() as u64, n + 2);
}

#[test]
fn a_positioned_reader_gets_an_error_not_a_signal_when_another_program_truncates() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cut.ra");
    RawArray::from_vec((0..10_000u64).collect())
        .write_file(&path)
        .unwrap();
    let r = RecordReader::<u64>::open_with(&path, ReadMode::Positioned).unwrap();
    assert_eq!(r.get(9_999).unwrap(), Some(9_999));
    // Another program (here: this test, without the crate) cuts the file under the reader.
    fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(56 + 8 * 100)
        .unwrap();
    // The reader's file is not the one it opened any more: every read says so (a record that
    // is still there included: its header, which the reader went by, counts 10,000).
    for i in [50, 9_999] {
        let err = r.get(i).unwrap_err();
        assert!(
            matches!(err.kind(), ErrorKind::Changed { .. }) && err.to_string().contains("cut.ra"),
            "{err}"
        );
    }
    assert!(r.data().is_err());
}

#[test]
fn foreign_trailing_bytes_are_never_deleted_unasked() {
    let dir = tempfile::tempdir().unwrap();
    // Case 5: a plain .ra followed by 55 bytes of another program's JSON.
    let path = dir.path().join("meta.ra");
    let json = b"{\"instrument\": \"xyz\", \"operator\": \"ada\", \"run\": 12345}\n";
    assert_eq!(json.len(), 55);
    let mut bytes = RawArray::from_vec(vec![1u64, 2]).to_bytes();
    bytes.extend_from_slice(json);
    fs::write(&path, &bytes).unwrap();
    let err = options().open::<u64>(&path).unwrap_err();
    match err.kind() {
        ErrorKind::ForeignTrailing {
            bytes: 55,
            looks_like,
            ..
        } => assert!(
            looks_like.starts_with("text \"{\\\"instrument"),
            "{looks_like}"
        ),
        _ => panic!("{err}"),
    }
    let err = recover(&path).unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::ForeignTrailing { bytes: 55, .. }),
        "{err}"
    );
    assert_eq!(fs::read(&path).unwrap(), bytes, "untouched");
    // Asked to, the writer drops them.
    let mut w: RecordWriter<u64> = options().drop_foreign_trailing(true).open(&path).unwrap();
    w.append(&3).unwrap();
    w.finish().unwrap();
    assert_eq!(records(&path), [1, 2, 3]);

    // u8 [5] + 13 bytes of JSON became [18]; a 3-byte array before a 2 GiB hole became
    // [2147483592]: now both are refused and unchanged.
    let small = dir.path().join("small.ra");
    let mut bytes = RawArray::from_vec(vec![1u8, 2, 3, 4, 5]).to_bytes();
    bytes.extend_from_slice(br#"{"units":"m"}"#);
    fs::write(&small, &bytes).unwrap();
    let err = recover(&small).unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::ForeignTrailing { bytes: 13, .. }),
        "{err}"
    );
    assert_eq!(fs::read(&small).unwrap(), bytes);

    let holey = dir.path().join("hole.ra");
    fs::write(&holey, RawArray::from_vec(vec![1u8, 2, 3]).to_bytes()).unwrap();
    let f = fs::OpenOptions::new().write(true).open(&holey).unwrap();
    f.set_len(2 << 30).unwrap();
    drop(f);
    let err = recover(&holey).unwrap_err();
    match err.kind() {
        ErrorKind::ForeignTrailing {
            bytes, looks_like, ..
        } => {
            assert_eq!(*bytes, (2 << 30) - 59);
            assert_eq!(looks_like, "zeros...");
        }
        _ => panic!("{err}"),
    }
    assert_eq!(fs::metadata(&holey).unwrap().len(), 2 << 30);
    let mut head = [0u8; 56];
    std::io::Read::read_exact(&mut fs::File::open(&holey).unwrap(), &mut head).unwrap();
    assert_eq!(
        &head[48..56],
        &3u64.to_le_bytes(),
        "the header still says 3"
    );
    // The file's own trailer is no foreign byte.
    assert_eq!(
        Trailer::read_file(&path).unwrap().unwrap().params,
        serde_json::json!({"test": "lock"})
    );
}
