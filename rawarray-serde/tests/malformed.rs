//! One test per malformed header or data case: each is an error naming what is wrong, on every
//! entry point (slice, stream, file), and none allocates what the input cannot justify.

use rawarray_serde::{DynArray, ErrorKind, Header, RawArray};

/// A header built word by word, then `data` bytes.
fn file(words: &[u64], data: &[u8]) -> Vec<u8> {
    let mut out: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    out.extend_from_slice(data);
    out
}

const MAGIC: u64 = 0x7961727261776172;

/// Every entry point gives the same error kind for `bytes`.
fn errors(bytes: &[u8]) -> Vec<rawarray_serde::Error> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.ra");
    std::fs::write(&path, bytes).unwrap();
    vec![
        DynArray::from_bytes(bytes).unwrap_err(),
        DynArray::read_from(bytes).unwrap_err(),
        DynArray::read_file(&path).unwrap_err(),
        RawArray::<f32>::from_bytes(bytes).unwrap_err(),
        RawArray::<f32>::read_from(bytes).unwrap_err(),
        RawArray::<f32>::read_file(&path).unwrap_err(),
    ]
}

macro_rules! assert_all {
    ($bytes:expr, $pat:pat, $msg:expr) => {{
        for e in errors(&$bytes) {
            assert!(matches!(e.kind(), $pat), "{e:?}");
            assert!(
                e.to_string().contains($msg),
                "message {:?} lacks {:?}",
                e.to_string(),
                $msg
            );
        }
    }};
}

#[test]
fn bad_magic() {
    let b = file(&[0x7961727261776171, 0, 3, 4, 4, 1, 1], &[0; 4]);
    assert_all!(
        b,
        ErrorKind::BadMagic {
            found: 0x7961727261776171,
            looks_like: None,
        },
        "bad magic"
    );
}

#[test]
fn unknown_flag_bits_are_named() {
    // Bit 2 (chunked) is known to these readers since the codec layer: bits 3 and 4 are not.
    let b = file(&[MAGIC, 0b11000, 3, 4, 4, 1, 1], &[0; 4]);
    assert_all!(
        b,
        ErrorKind::UnknownFlags { bits: 0b11000 },
        "unknown flag bits 0x18"
    );
}

#[test]
fn eltype_above_5() {
    let b = file(&[MAGIC, 0, 6, 4, 4, 1, 1], &[0; 4]);
    assert_all!(b, ErrorKind::UnknownElType { code: 6 }, "unknown eltype 6");
}

#[test]
fn elbyte_zero() {
    let b = file(&[MAGIC, 0, 0, 0, 0, 1, 1], &[]);
    assert_all!(b, ErrorKind::ZeroElbyte { .. }, "elbyte is 0");
}

#[test]
fn elbyte_impossible_for_each_eltype() {
    for (eltype, elbyte) in [
        (3u64, 3u64),
        (3, 1),
        (4, 2),
        (4, 12),
        (5, 4),
        (1, 3),
        (2, 32),
    ] {
        let b = file(
            &[MAGIC, 0, eltype, elbyte, elbyte, 1, 1],
            &vec![0; elbyte as usize],
        );
        for e in errors(&b) {
            assert!(
                matches!(e.kind(), ErrorKind::ImpossibleElbyte { elbyte: found, .. } if *found == elbyte),
                "eltype {eltype} elbyte {elbyte}: {e:?}"
            );
            assert!(e
                .to_string()
                .contains(&format!("elbyte {elbyte} is impossible")));
        }
    }
}

#[test]
fn dims_times_elbyte_overflowing_u64() {
    let b = file(&[MAGIC, 0, 3, 8, 0, 2, 1 << 62, 4], &[]);
    assert_all!(b, ErrorKind::DataLenOverflow { .. }, "overflow");
}

#[test]
fn size_disagreeing_with_dims() {
    let b = file(&[MAGIC, 0, 3, 4, 12, 2, 2, 2], &[0; 16]);
    assert_all!(
        b,
        ErrorKind::SizeMismatch {
            size: 12,
            expected: 16
        },
        "size is 12 but dims x elbyte is 16"
    );
}

#[test]
fn compressed_size_that_cannot_hold_the_dims() {
    // 10 compressed bytes can never expand to 2^30 plain bytes.
    let b = file(&[MAGIC, 2, 2, 1, 10, 1, 1 << 30], &[0; 10]);
    assert_all!(
        b,
        ErrorKind::CompressionRatio { .. },
        "LZ4 expands at most 255x"
    );
}

#[test]
fn header_shorter_than_48_bytes() {
    let b = file(&[MAGIC, 0, 3], &[]);
    assert_all!(
        b,
        ErrorKind::HeaderTruncated {
            needed: 48,
            found: 24
        },
        "truncated header"
    );
}

#[test]
fn dims_past_the_end_of_the_input() {
    let b = file(&[MAGIC, 0, 3, 4, 4, 3, 1], &[]);
    assert_all!(
        b,
        ErrorKind::HeaderTruncated { needed: 72, .. },
        "expected 72 header bytes"
    );
}

#[test]
fn data_shorter_than_size() {
    let b = file(&[MAGIC, 0, 3, 4, 16, 1, 4], &[0; 10]);
    assert_all!(
        b,
        ErrorKind::Truncated {
            expected: 16,
            found: 10
        },
        "truncated: expected 16 data bytes, found 10"
    );
}

#[test]
fn corrupt_lz4_block() {
    // A literal run claiming 15 + 255 bytes with none present.
    let b = file(&[MAGIC, 2, 2, 1, 3, 1, 16], &[0xF0, 0xFF, 0x00]);
    for e in errors(&b).into_iter().take(3) {
        assert!(matches!(e.kind(), ErrorKind::Lz4(_)), "{e:?}");
    }
}

#[test]
fn lz4_block_of_the_wrong_plain_length() {
    let block = lz4_flex::block::compress(&[7u8; 10]);
    // dims say 16 bytes, the block holds 10.
    let b = file(&[MAGIC, 2, 2, 1, block.len() as u64, 1, 16], &block);
    let e = DynArray::from_bytes(&b).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::Lz4(_)), "{e:?}");
}

#[test]
fn bool_bytes_other_than_0_or_1() {
    let b = file(&[MAGIC, 0, 2, 1, 4, 1, 4], &[0, 1, 2, 1]);
    let e = RawArray::<bool>::from_bytes(&b).unwrap_err();
    assert!(
        matches!(
            e.kind(),
            ErrorKind::InvalidValue {
                what: "bool",
                index: 2,
                value: 2
            }
        ),
        "{e:?}"
    );
    let e = RawArray::<bool>::read_from(&b[..]).unwrap_err();
    assert!(
        matches!(e.kind(), ErrorKind::InvalidValue { index: 2, .. }),
        "{e:?}"
    );
}

#[test]
fn fixed_array_element_needs_its_leading_dims() {
    let b = RawArray::from_shape_vec(vec![2, 3], vec![0f32; 6])
        .unwrap()
        .to_bytes();
    let e = RawArray::<[f32; 3]>::from_bytes(&b).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::DimsMismatch { .. }), "{e:?}");
    assert!(e.to_string().contains("leading dims [3]"), "{e}");
    let ok = RawArray::<[f32; 2]>::from_bytes(&b).unwrap();
    assert_eq!(ok.dims(), &[3]);
}

/// A 100-byte input whose header claims 2^62 data bytes, or 2^40 dims, is rejected before
/// anything of that size is allocated (an allocation that large would abort the test).
#[test]
fn huge_claims_in_a_small_input_do_not_allocate() {
    let mut claims_data = file(&[MAGIC, 0, 3, 4, 1 << 62, 1, 1 << 60], &[]);
    claims_data.resize(100, 0xAB);
    assert_all!(
        claims_data,
        ErrorKind::Truncated {
            expected: 0x4000_0000_0000_0000,
            found: 44
        },
        "truncated"
    );

    // More dims than any reader needs: refused before they are read (MAX_NDIMS).
    let mut claims_dims = file(&[MAGIC, 0, 3, 4, 4, 1 << 40], &[]);
    claims_dims.resize(100, 1);
    assert_all!(
        claims_dims,
        ErrorKind::TooManyDims {
            ndims: 0x100_0000_0000,
            max: 1024
        },
        "ndims is 1099511627776: at most 1024 dims"
    );
    // Within the limit, dims past the end are a truncated header.
    let mut claims_dims = file(&[MAGIC, 0, 3, 4, 4, 1024], &[]);
    claims_dims.resize(100, 1);
    assert_all!(
        claims_dims,
        ErrorKind::HeaderTruncated { found: 100, .. },
        "truncated header"
    );
    let e = Header::decode(&claims_dims).unwrap_err();
    assert!(
        e.to_string()
            .contains(&format!("expected {} header bytes", 48 + 8 * 1024)),
        "{e}"
    );
}

/// Bytes after the data are not an error, and the dynamic reader writes them back.
#[test]
fn trailing_bytes_survive_a_dynamic_round_trip() {
    let mut b = RawArray::from_vec(vec![1.5f64, 2.5]).to_bytes();
    b.extend_from_slice(b"volatile metadata \x00\x01\x02");
    let typed = RawArray::<f64>::from_bytes(&b).unwrap();
    assert_eq!(typed.as_slice(), &[1.5, 2.5]);
    let d = DynArray::from_bytes(&b).unwrap();
    assert_eq!(d.trailer_bytes(), b"volatile metadata \x00\x01\x02");
    assert_eq!(d.to_bytes().unwrap(), b);
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("t.ra");
    std::fs::write(&p, &b).unwrap();
    let d = DynArray::read_file(&p).unwrap();
    d.write_file(&p).unwrap();
    assert_eq!(std::fs::read(&p).unwrap(), b);
}
