//! Inputs the fuzz targets (`fuzz/`) found, and the ones review found beside them, each pinned
//! by a test named after what it pins. The bytes are inline: a header as its little-endian
//! words, then the data.

use std::time::{Duration, Instant};

use num_complex::Complex;
use rawarray_serde::{
    from_reader, from_slice, to_vec, DynArray, ErrorKind, RawArray, RecordReader,
};

const MAGIC: u64 = 0x7961727261776172;

/// A header built word by word, then `data` bytes.
fn file(words: &[u64], data: &[u8]) -> Vec<u8> {
    let mut out: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    out.extend_from_slice(data);
    out
}

/// Runs `f` and checks it took less than a second (the fuzzers' `-timeout` is 10 s; these took
/// minutes or never ended before their fix).
fn quick<R>(what: &str, f: impl FnOnce() -> R) -> R {
    let t = Instant::now();
    let r = f();
    assert!(
        t.elapsed() < Duration::from_secs(1),
        "{what} took {:?}",
        t.elapsed()
    );
    r
}

/// fuzz target `from_slice`, a timeout: a compressed f64 file of 69 bytes whose dims
/// `[0, 50331648]` hold no element (an empty LZ4 block) asked `Vec<Vec<f64>>` to build 50
/// million empty vectors (and `[0, 2^40]` would have asked for 2^40, 24 TiB). Sequences of
/// empty items are now limited to 1024 per level.
#[test]
fn empty_dims_do_not_build_unbounded_empty_sequences() {
    let timeout = file(
        &[MAGIC, 2, 3, 8, 1, 2, 0, 0x0300_0000],
        &[0x00, 0x00, 0x00, 0x00],
    );
    let err = quick("Vec<Vec<f64>>", || {
        from_slice::<Vec<Vec<f64>>>(&timeout).unwrap_err()
    });
    assert!(err.to_string().contains("50331648 empty"), "{err}");
    let err = quick("from_reader", || {
        from_reader::<Vec<Vec<f64>>>(&timeout[..]).unwrap_err()
    });
    assert!(err.to_string().contains("no data"), "{err}");

    // Uncompressed, 2^40 empty strings and a self-describing read of them.
    let strings = file(&[MAGIC, 0, 2, 1, 0, 2, 0, 1 << 40], &[]);
    quick("Vec<String>", || {
        from_slice::<Vec<String>>(&strings).unwrap_err()
    });
    quick("IgnoredAny", || {
        from_slice::<serde::de::IgnoredAny>(&strings).unwrap_err()
    });

    // The limit is per level and leaves ordinary empty values alone, in both directions.
    let ok = vec![Vec::<f64>::new(); 1024];
    assert_eq!(
        from_slice::<Vec<Vec<f64>>>(&to_vec(&ok).unwrap()).unwrap(),
        ok
    );
    let too_many = to_vec(&vec![Vec::<f64>::new(); 1025]).unwrap();
    assert!(from_slice::<Vec<Vec<f64>>>(&too_many).is_err());
    // Typed reads of the same file need no values per empty item and are not limited.
    let a = RawArray::<f64>::from_bytes(&too_many[..]);
    assert!(a.is_err(), "the file is uint8, the array f64");
    let u8s = RawArray::<u8>::from_bytes(&too_many).unwrap();
    assert_eq!(u8s.dims(), [0, 1025]);
}

/// Review, beside the timeout above: a self-describing read (`IgnoredAny`, or a generic value)
/// recursed once per dim, so a header of 200 000 dims of 1 (1.6 MB) overflowed the stack; 1000
/// dims (the most a header may now have is 1024) overflow a small one.
#[test]
fn self_describing_reads_refuse_deeply_nested_dims() {
    let ndims = 1000u64;
    let mut words = vec![MAGIC, 0, 2, 1, 1, ndims];
    words.extend(std::iter::repeat_n(1, ndims as usize));
    let deep = file(&words, &[7]);
    // A thread with a small stack: without the limit this overflows it.
    let err = std::thread::Builder::new()
        .stack_size(256 << 10)
        .spawn(move || {
            from_slice::<serde::de::IgnoredAny>(&deep)
                .unwrap_err()
                .to_string()
        })
        .unwrap()
        .join()
        .unwrap();
    assert!(err.contains("too deep"), "{err}");
    // 128 nested dims still read.
    let mut words = vec![MAGIC, 0, 2, 1, 1, 128];
    words.extend([1; 128]);
    from_slice::<serde::de::IgnoredAny>(&file(&words, &[7])).unwrap();
}

/// fuzz target `typed`: an f32 file cut short, read as `Complex<f64>`. `from_bytes` and
/// `read_from` said the type was wrong, `read_file` that the data was truncated: the file
/// reader checked the length before the element type. One file now gives one error.
#[test]
fn read_file_checks_the_element_type_before_the_length() {
    let cut = file(
        &[MAGIC, 0, 3, 4, 64, 2, 4, 4],
        &[
            0xd8, 0x91, 0xa3, 0x3e, 0x80, 0xb4, 0x88, 0x07, 0x3f, 0xce, 0xc5, 0x09, 0x3f, 0x58,
            0x7b, 0x72, 0x3e, 0x14, 0xdc, 0xbb, 0x3e, 0xdc, 0xc8, 0x6c, 0x3f, 0x74, 0x4b, 0x8e,
            0x3e,
        ],
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cut.ra");
    std::fs::write(&path, &cut).unwrap();
    for e in [
        RawArray::<Complex<f64>>::from_bytes(&cut).unwrap_err(),
        RawArray::<Complex<f64>>::read_from(&cut[..]).unwrap_err(),
        RawArray::<Complex<f64>>::read_file(&path).unwrap_err(),
    ] {
        assert!(matches!(e.kind(), ErrorKind::TypeMismatch { .. }), "{e}");
    }
    // Read as what it is, every way says truncated.
    for e in [
        RawArray::<f32>::from_bytes(&cut).unwrap_err(),
        RawArray::<f32>::read_file(&path).unwrap_err(),
        DynArray::read_file(&path).unwrap_err(),
    ] {
        assert!(
            matches!(
                e.kind(),
                ErrorKind::Truncated {
                    expected: 64,
                    found: 29
                }
            ),
            "{e}"
        );
    }
}

/// fuzz target `records`: a file of empty records (a record dim is 0) whose record count, the
/// last dim, is `u64::MAX`. `get(usize::MAX)` saturated `index + 1` into the empty range
/// `MAX..MAX` and returned a record that does not exist; `slice(..=usize::MAX)` likewise.
#[test]
fn record_index_past_the_last_is_out_of_bounds_even_at_usize_max() {
    let bytes = file(&[MAGIC, 0, 2, 1, 0, 2, 0, u64::MAX], &[]);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("empty-records.ra");
    std::fs::write(&path, &bytes).unwrap();
    let r = RecordReader::<u8>::open(&path).unwrap();
    assert_eq!(r.len(), usize::MAX);
    assert_eq!(r.record_len(), 0);
    assert!(r.slice(usize::MAX - 1..usize::MAX).unwrap().is_empty());
    assert!(r.get_bytes(usize::MAX - 1).unwrap().is_empty());
    let e = r.slice(usize::MAX..=usize::MAX).unwrap_err();
    assert!(
        matches!(e.kind(), ErrorKind::OutOfBounds { start, len, .. } if *start == u64::MAX && *len == u64::MAX),
        "{e}"
    );
    assert!(r.slice(..=usize::MAX).is_err());
    assert!(r.slice(usize::MAX..).unwrap().is_empty());
    assert!(r.slice(..).unwrap().is_empty());
}

/// Review of `ra convert x.npy` (the `.npy` header's structured dtype goes through
/// `Layout::from_numpy_descr_json`): a field shape of 200 000 dims nested the layout 200 000
/// `Box`es deep, and building, measuring or dropping it overflowed the stack (the tool
/// aborted). Sub-arrays are limited to numpy's 64 dims.
#[test]
fn numpy_sub_array_shapes_deeper_than_numpy_allows_are_refused() {
    let deep = serde_json::json!([["a", "<f4", vec![1u64; 200_000]]]);
    let err = std::thread::Builder::new()
        .stack_size(256 << 10)
        .spawn(move || {
            rawarray_serde::Layout::from_numpy_descr_json(&deep)
                .unwrap_err()
                .to_string()
        })
        .unwrap()
        .join()
        .unwrap();
    assert!(err.contains("200000 dims"), "{err}");
    // Nested sub-arrays count together; numpy's own limit still reads.
    let nested = serde_json::json!([[["<f4", vec![1u64; 40]], vec![2u64; 30]]]);
    let nested = serde_json::json!([["a", nested[0][0], nested[0][1]]]);
    assert!(rawarray_serde::Layout::from_numpy_descr_json(&nested).is_err());
    let ok = serde_json::json!([["a", "<f4", vec![1u64; 64]]]);
    let l = rawarray_serde::Layout::from_numpy_descr_json(&ok).unwrap();
    assert_eq!(l.size(), 4);
}
