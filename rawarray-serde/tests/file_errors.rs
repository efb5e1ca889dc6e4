//! Every error of a missing, truncated or foreign file names the file, through every reader
//! that takes a path; a truncation says how many bytes were expected and found; a file that is
//! not `.ra` is named for what it is (HDF5, PNG, ...).

use std::path::Path;

use rawarray_serde::sniff::FileKind;
use rawarray_serde::{
    ArrayReader, DynArray, Error, ErrorKind, RawArray, ReadMode, RecordReader, Trailer,
};

/// The error of each reader that takes a path, by name.
fn every_reader(path: &Path) -> Vec<(&'static str, Error)> {
    let mut errors = vec![];
    let mut push = |name, r: Result<(), Error>| errors.push((name, r.unwrap_err()));
    push(
        "RawArray::read_file",
        RawArray::<f32>::read_file(path).map(drop),
    );
    push("DynArray::read_file", DynArray::read_file(path).map(drop));
    push(
        "RecordReader::open",
        RecordReader::<f32>::open(path).map(drop),
    );
    push(
        "RecordReader::open_with(Positioned)",
        RecordReader::<f32>::open_with(path, ReadMode::Positioned).map(drop),
    );
    push("ArrayReader::open", ArrayReader::open(path).map(drop));
    push(
        "ArrayReader::open_mapped",
        ArrayReader::open_mapped(path).map(drop),
    );
    push(
        "from_file",
        rawarray_serde::from_file::<Vec<f32>>(path).map(drop),
    );
    push("Trailer::read_file", Trailer::read_file(path).map(drop));
    errors
}

/// Checks that each error names `path` once, at the start, and says `what`.
fn assert_named(path: &Path, what: &str) -> Vec<(&'static str, Error)> {
    let errors = every_reader(path);
    for (reader, e) in &errors {
        let msg = e.to_string();
        let shown = path.display().to_string();
        assert_eq!(e.path(), Some(path), "{reader}: {e:?}");
        assert!(msg.starts_with(&format!("{shown}: ")), "{reader}: {msg}");
        assert_eq!(msg.matches(&shown).count(), 1, "{reader}: {msg}");
        assert!(msg.contains(what), "{reader}: {msg:?} lacks {what:?}");
    }
    errors
}

#[test]
fn a_missing_file_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("missing.ra");
    for (reader, e) in assert_named(&path, "No such file or directory") {
        assert!(
            matches!(e.kind(), ErrorKind::Io(io) if io.kind() == std::io::ErrorKind::NotFound),
            "{reader}: {e:?}"
        );
        let io = std::io::Error::from(e);
        assert_eq!(io.kind(), std::io::ErrorKind::NotFound, "{reader}");
        assert!(io.to_string().contains("missing.ra"), "{reader}: {io}");
    }
}

#[test]
fn a_file_cut_inside_its_data_is_named_with_the_bytes_expected_and_found() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cut.ra");
    let bytes = RawArray::from_vec((0..100).map(|i| i as f32).collect()).to_bytes();
    // 56 header bytes, then 400 data bytes of which 150 are kept.
    std::fs::write(&path, &bytes[..56 + 150]).unwrap();
    for (reader, e) in assert_named(&path, "truncated: expected 400 data bytes, found 150") {
        assert!(
            matches!(
                e.kind(),
                ErrorKind::Truncated {
                    expected: 400,
                    found: 150
                }
            ),
            "{reader}: {e:?}"
        );
    }
}

#[test]
fn a_file_cut_inside_its_header_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("stub.ra");
    let bytes = RawArray::from_vec(vec![1.0f32]).to_bytes();
    std::fs::write(&path, &bytes[..20]).unwrap();
    assert_named(
        &path,
        "truncated header: expected 48 header bytes, found 20",
    );
}

#[test]
fn a_file_cut_under_an_open_reader_names_the_file_and_the_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shrinks.ra");
    RawArray::from_vec((0..100).map(|i| i as f32).collect())
        .write_file(&path)
        .unwrap();
    let array = ArrayReader::open(&path).unwrap();
    let records = RecordReader::<f32>::open_with(&path, ReadMode::Positioned).unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(100)
        .unwrap();
    let shown = path.display().to_string();
    for (reader, e) in [
        (
            "ArrayReader::read_all",
            array.read_all::<f32>().unwrap_err(),
        ),
        (
            "RecordReader::slice",
            records.slice(..).map(drop).unwrap_err(),
        ),
    ] {
        let msg = e.to_string();
        assert!(msg.starts_with(&format!("{shown}: ")), "{reader}: {msg}");
        // The file it opened held 456 bytes; it holds 100: no read of it mixes the two.
        assert!(
            matches!(e.kind(), rawarray_serde::ErrorKind::Changed { .. })
                && msg.contains("456")
                && msg.contains("100"),
            "{reader}: {msg}"
        );
    }
}

#[test]
fn an_hdf5_file_is_refused_as_hdf5() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("data.h5");
    // An HDF5 superblock's signature, then version bytes and padding.
    let mut bytes = b"\x89HDF\r\n\x1a\n".to_vec();
    bytes.extend_from_slice(&[0, 0, 0, 0, 0, 8, 8, 0]);
    bytes.resize(96, 0);
    std::fs::write(&path, &bytes).unwrap();
    for (reader, e) in assert_named(&path, "it looks like an HDF5 file") {
        assert!(
            matches!(
                e.kind(),
                ErrorKind::BadMagic {
                    looks_like: Some(FileKind::Hdf5),
                    ..
                }
            ),
            "{reader}: {e:?}"
        );
    }
    // Without a path too: the bytes say what they are.
    let e = DynArray::from_bytes(&bytes).unwrap_err();
    assert!(
        e.to_string().contains("bad magic") && e.to_string().contains("HDF5"),
        "{e}"
    );
    let e = DynArray::read_from(&bytes[..]).unwrap_err();
    assert!(e.to_string().contains("HDF5"), "{e}");
}

#[test]
fn a_short_foreign_file_is_bad_magic_not_a_truncated_header() {
    // Shorter than a header, but its first bytes already say it is not `.ra`.
    let e = DynArray::from_bytes(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR").unwrap_err();
    assert!(
        matches!(
            e.kind(),
            ErrorKind::BadMagic {
                looks_like: Some(FileKind::Png),
                ..
            }
        ),
        "{e:?}"
    );
    // A prefix of the magic is a `.ra` file cut short.
    let e = DynArray::from_bytes(b"rawar").unwrap_err();
    assert!(
        matches!(e.kind(), ErrorKind::HeaderTruncated { .. }),
        "{e:?}"
    );
}
