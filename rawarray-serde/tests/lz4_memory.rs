//! A whole read of an LZ4-compressed file (flag bit 1) holds the decoded array and a window of
//! the block, never the block and the decoded copy at once: the block is decoded as it is read.
//! Measured with a counting global allocator (peak of live bytes during the call).

mod common;

use rawarray_serde::{ArrayReader, DynArray, RawArray, WriteOptions};

#[global_allocator]
static ALLOC: common::counting::Counting = common::counting::Counting;

/// 16 MiB of `u32` that LZ4 barely shrinks (a xorshift stream), so the block is about as large
/// as the decoded array: holding both would show as twice the array.
fn noisy(n: usize) -> Vec<u32> {
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u32
        })
        .collect()
}

#[test]
fn a_whole_lz4_read_holds_one_copy_of_the_data() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("z.ra");
    let values = noisy(4 << 20);
    let bytes = values.len() * 4;
    RawArray::from_vec(values.clone())
        .write_file_with(&path, &WriteOptions::new().compress(true))
        .unwrap();
    let packed = std::fs::metadata(&path).unwrap().len() as usize;
    assert!(
        packed > bytes * 9 / 10,
        "the block must be about the array's size: {packed}"
    );
    // Slack for the window (64 KiB), the path and the error-free bookkeeping.
    let limit = bytes + (256 << 10);

    let peak = common::counting::peak(|| RawArray::<u32>::read_file(&path).unwrap());
    assert!(
        peak <= limit,
        "RawArray::read_file peaked at {peak} bytes for {bytes}"
    );
    assert_eq!(
        RawArray::<u32>::read_file(&path).unwrap().as_slice(),
        values
    );

    let peak = common::counting::peak(|| DynArray::read_file(&path).unwrap());
    assert!(
        peak <= limit,
        "DynArray::read_file peaked at {peak} bytes for {bytes}"
    );

    // serde builds its value from the decoded section, which it holds whole for an LZ4 file
    // (the streaming one-copy path is for plain files): the decoded bytes and the value, never
    // the block as well.
    let peak = common::counting::peak(|| rawarray_serde::from_file::<Vec<u32>>(&path).unwrap());
    assert!(
        peak <= bytes + limit,
        "from_file peaked at {peak} bytes for {bytes}"
    );

    // ArrayReader keeps the decoded section for later subsets, and copies out of it.
    let peak = common::counting::peak(|| {
        let r = ArrayReader::open(&path).unwrap();
        r.read_all::<u32>().unwrap()
    });
    assert!(
        peak <= bytes + limit,
        "ArrayReader peaked at {peak} bytes for {bytes}"
    );

    // A stream of unknown length is another matter: its block is read first, so that a header
    // claiming a huge array costs memory only as the stream's bytes arrive (alloc_bound.rs),
    // then decoded: the block and the array, never more.
    let peak = common::counting::peak(|| {
        let f = std::io::BufReader::new(std::fs::File::open(&path).unwrap());
        RawArray::<u32>::read_from(f).unwrap()
    });
    assert!(
        peak <= packed + limit + (8 << 10),
        "read_from peaked at {peak} bytes for {bytes}"
    );
}
