//! The examples run: each is included as a module and its work called with a scratch folder,
//! then what it wrote is checked from the file's own bytes.

#[allow(dead_code)] // its `main`, which `cargo run --example chunked` runs
#[path = "../examples/chunked.rs"]
mod chunked;

#[test]
fn the_chunked_example_compresses_and_reads_a_plane_from_one_chunk() {
    let dir = tempfile::tempdir().unwrap();
    let o = chunked::run(dir.path()).unwrap();
    let bytes = std::fs::read(dir.path().join("field_z.ra")).unwrap();
    let word = |i: usize| u64::from_le_bytes(bytes[8 * i..8 * i + 8].try_into().unwrap());
    // The header (doc/format.md section 2): magic, flags, eltype, elbyte, size, ndims, dims.
    assert_eq!(&bytes[..8], b"rawarray");
    assert_eq!(word(1), 4, "flags: the chunked layout (bit 2) alone");
    assert_eq!((word(2), word(3)), (3, 4), "float32");
    assert_eq!(word(5), 3);
    assert_eq!([word(6), word(7), word(8)], chunked::DIMS);
    assert_eq!(o.file_bytes, bytes.len() as u64);
    assert_eq!(o.plain_bytes, 4 * chunked::DIMS.iter().product::<u64>());
    // A smooth field compresses: the chunked section is well under its plain bytes.
    assert!(
        o.file_bytes * 2 < o.plain_bytes,
        "{} bytes for {} plain",
        o.file_bytes,
        o.plain_bytes
    );
    assert_eq!(o.plane_reads, 1, "a plane lies in one chunk of 16 planes");
}
