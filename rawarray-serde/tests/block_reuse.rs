//! Decoded-block buffers are reused from one reader to the next (a read of one element opens a
//! file, decodes one block and drops the reader). A reused buffer holds the bytes of the block
//! decoded into it before; these tests read element by element, alternating between files with
//! the same block length but different values and pipelines, each reader opened and dropped
//! per read, so that every buffer a read is given was another file's block. Every element must
//! be its own file's value, computed here; a damaged block is an error, never the old bytes.

use rawarray_serde::codec::{Codec, Filter};
use rawarray_serde::{ArrayReader, Header, RawArray, WriteOptions};

const N: u64 = 64;

fn value(file: u64, i: u64) -> f32 {
    (file * 1_000_000 + i) as f32 * 0.5
}

fn write(dir: &std::path::Path, file: u64, opts: &WriteOptions) -> std::path::PathBuf {
    let path = dir.join(format!("f{file}.ra"));
    let data: Vec<f32> = (0..N * N).map(|i| value(file, i)).collect();
    RawArray::from_shape_vec(vec![N, N], data)
        .unwrap()
        .write_file_with(&path, opts)
        .unwrap();
    path
}

#[test]
fn elements_read_through_reused_block_buffers_are_their_own_files_values() {
    let dir = tempfile::tempdir().unwrap();
    // Coded pipelines only: a chunk stored raw (codec `none` without a gain) is read whole
    // through another path, not through the block buffers.
    let pipelines = [
        WriteOptions::new().codec(Codec::Zstd),
        WriteOptions::new()
            .codec(Codec::Lz4)
            .filters([Filter::Shuffle]),
        WriteOptions::new()
            .codec(Codec::Zstd)
            .filters([Filter::Shuffle, Filter::ByteDelta]),
        WriteOptions::new()
            .codec(Codec::Lz4)
            .filters([Filter::BitShuffle]),
        WriteOptions::new()
            .codec(Codec::Zstd)
            .filters([Filter::Delta]),
        WriteOptions::new().codec(Codec::Pco),
        WriteOptions::new().codec(Codec::Zstd).filters([]),
    ];
    let paths: Vec<_> = pipelines
        .iter()
        .enumerate()
        .map(|(k, o)| write(dir.path(), k as u64, &o.clone().chunks(vec![N, N / 2])))
        .collect();
    for i in (0..N * N).step_by(61) {
        let (x, y) = (i % N, i / N);
        for (k, path) in paths.iter().enumerate() {
            let r = ArrayReader::open(path).unwrap();
            let got = r.read_subset::<f32>(&[x..x + 1, y..y + 1]).unwrap();
            assert_eq!(
                got.as_slice(),
                [value(k as u64, i)],
                "file {k}, element {i}"
            );
        }
    }
}

#[test]
fn a_damaged_block_after_a_good_one_is_an_error_not_the_old_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let opts = WriteOptions::new().codec(Codec::Zstd).chunks(vec![N, N]);
    let good = write(dir.path(), 0, &opts);
    let bad = write(dir.path(), 1, &opts);
    // The one chunk's payload ends the data section: its last byte flipped, the block's CRC
    // refuses it after the good file's block went back to the pool.
    let mut bytes = std::fs::read(&bad).unwrap();
    let h = Header::decode_any(&bytes).unwrap();
    let end = h.encoded_len() + h.size as usize;
    bytes[end - 1] ^= 0xFF;
    std::fs::write(&bad, &bytes).unwrap();
    for _ in 0..3 {
        let r = ArrayReader::open(&good).unwrap();
        let got = r.read_subset::<f32>(&[5..6, 7..8]).unwrap();
        assert_eq!(got.as_slice(), [value(0, 7 * N + 5)]);
        drop(r);
        let err = ArrayReader::open(&bad)
            .and_then(|r| r.read_subset::<f32>(&[5..6, 7..8]))
            .unwrap_err();
        assert!(err.to_string().contains("crc32"), "{err}");
    }
}
