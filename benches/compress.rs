//! Compression: ratio and throughput of the old whole-section LZ4 block, zstd over the whole
//! buffer, and the chunked layout with each filter and codec on one thread and on all cores,
//! on a smooth 3-D f32 field with noise, random normal f32 and 76-byte N-body records; then
//! the time to read one element and one plane of a compressed field file against the same
//! file uncompressed; and a `RecordWriter` appending the N-body records with and without
//! compression. Prints markdown tables (best of a few runs).
//!
//! Run: `cargo bench --bench compress` (RA_BENCH_MB=256 for 256 MiB per array; default 32).
// The old names (ChunkOptions, SectionReader, the ArrayWriter constructors) are kept
// one release as deprecated re-exports; these tests still use them.
#![allow(deprecated)]

use std::time::{Duration, Instant};

use rawarray_serde::codec::{self, ChunkOptions, Codec, SectionReader, Shuffle};
use rawarray_serde::{
    ArrayReader, DynArray, ElType, ElementSpec, Header, Layout, RawArray, RecordOptions,
    WriteOptions,
};

fn best<R>(runs: usize, mut f: impl FnMut() -> R) -> (Duration, R) {
    let mut best = Duration::MAX;
    let mut last = None;
    for _ in 0..runs {
        let t = Instant::now();
        let r = f();
        best = best.min(t.elapsed());
        last = Some(std::hint::black_box(r));
    }
    (best, last.expect("runs > 0"))
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn uniform(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    fn normal(&mut self) -> f64 {
        let (u, v) = (self.uniform().max(1e-300), self.uniform());
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }
}

/// A smooth field plus noise, `n^3` f32.
fn field(n: u64) -> (Header, Vec<u8>) {
    let mut rng = Rng(7);
    let mut out = Vec::with_capacity((n * n * n * 4) as usize);
    for z in 0..n {
        for y in 0..n {
            for x in 0..n {
                let v = (x as f64 / 17.0).sin() * (y as f64 / 23.0).cos()
                    + z as f64 / n as f64
                    + 1e-3 * rng.normal();
                out.extend_from_slice(&(v as f32).to_le_bytes());
            }
        }
    }
    (Header::new(ElType::Float, 4, vec![n, n, n]).unwrap(), out)
}

fn random(len: u64) -> (Header, Vec<u8>) {
    let mut rng = Rng(11);
    let out = (0..len)
        .flat_map(|_| (rng.normal() as f32).to_le_bytes())
        .collect();
    (Header::new(ElType::Float, 4, vec![len]).unwrap(), out)
}

/// N-body records: position, velocity (f64 x 3 each), mass f64, id u64, acceleration f32 x 3.
fn nbody(len: u64) -> (Header, Vec<u8>) {
    let mut rng = Rng(13);
    let mut out = Vec::with_capacity((len * 76) as usize);
    for i in 0..len {
        let r = 10.0 * rng.uniform().cbrt();
        for k in 0..3 {
            out.extend_from_slice(&(r * (f64::from(k) + rng.uniform()).cos()).to_le_bytes());
        }
        for _ in 0..3 {
            out.extend_from_slice(&(0.1 * rng.normal()).to_le_bytes());
        }
        out.extend_from_slice(&(1.0f64 + (i % 4) as f64).to_le_bytes());
        out.extend_from_slice(&i.to_le_bytes());
        for _ in 0..3 {
            out.extend_from_slice(&((0.01 * rng.normal()) as f32).to_le_bytes());
        }
    }
    (Header::new(ElType::User, 76, vec![len]).unwrap(), out)
}

fn gbs(bytes: usize, t: Duration) -> f64 {
    bytes as f64 / t.as_secs_f64() / 1e9
}

fn main() {
    let mb: u64 = std::env::var("RA_BENCH_MB")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(32);
    let bytes = mb << 20;
    let n = ((bytes / 4) as f64).cbrt() as u64;
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    let sets = [
        ("field f32", field(n)),
        ("random f32", random(bytes / 4)),
        ("N-body 76 B", nbody(bytes / 76)),
    ];
    println!("# compression, {mb} MiB per array, {cores} cores\n");
    println!("| array | method | threads | ratio | compress GB/s | decompress GB/s |");
    println!("|---|---|---|---|---|---|");
    for (name, (header, raw)) in &sets {
        let (tc, packed) = best(2, || lz4_flex::block::compress(raw));
        let (td, _) = best(2, || {
            lz4_flex::block::decompress(&packed, raw.len()).unwrap()
        });
        println!(
            "| {name} | lz4 whole (flag 1) | 1 | {:.3} | {:.2} | {:.2} |",
            raw.len() as f64 / packed.len() as f64,
            gbs(raw.len(), tc),
            gbs(raw.len(), td)
        );
        let (tc, packed) = best(2, || zstd::bulk::compress(raw, 3).unwrap());
        let (td, _) = best(2, || zstd::bulk::decompress(&packed, raw.len()).unwrap());
        println!(
            "| {name} | zstd 3 whole | 1 | {:.3} | {:.2} | {:.2} |",
            raw.len() as f64 / packed.len() as f64,
            gbs(raw.len(), tc),
            gbs(raw.len(), td)
        );
        for shuffle in [Shuffle::None, Shuffle::Byte, Shuffle::Bit] {
            for c in [Codec::Lz4, Codec::Zstd] {
                for threads in [1, cores] {
                    let opts = ChunkOptions::new()
                        .shuffle(shuffle)
                        .codec(c)
                        .threads(threads);
                    let (tc, (h, section)) = best(2, || codec::encode(header, raw, &opts).unwrap());
                    let mut file = h.encode();
                    file.extend_from_slice(&section);
                    let (td, back) = best(2, || {
                        SectionReader::open(&h, &file[..])
                            .unwrap()
                            .with_threads(threads)
                            .read_all()
                            .unwrap()
                    });
                    assert!(back == *raw);
                    println!(
                        "| {name} | chunked {} + {} | {threads} | {:.3} | {:.2} | {:.2} |",
                        shuffle.name(),
                        c.name(),
                        raw.len() as f64 / section.len() as f64,
                        gbs(raw.len(), tc),
                        gbs(raw.len(), td)
                    );
                }
            }
        }
    }

    // The filters alone against a memcpy of the same bytes.
    println!("\n# filters, 8 MiB, one thread\n");
    println!("| elbyte | memcpy GB/s | shuffle | unshuffle | bitshuffle | bitunshuffle |");
    println!("|---|---|---|---|---|---|");
    let src: Vec<u8> = sets[0].1 .1.iter().copied().cycle().take(8 << 20).collect();
    for w in [2usize, 4, 8, 16, 76] {
        let len = src.len() / w * w;
        let (s, mut d) = (&src[..len], vec![0u8; len]);
        let (tm, ()) = best(5, || d.copy_from_slice(s));
        let (ts, ()) = best(5, || codec::shuffle::shuffle(s, w, &mut d));
        let (tu, ()) = best(5, || codec::shuffle::unshuffle(s, w, &mut d));
        let (tb, ()) = best(3, || codec::bitshuffle::bitshuffle(s, w, &mut d));
        let (tbu, ()) = best(3, || codec::bitshuffle::bitunshuffle(s, w, &mut d));
        println!(
            "| {w} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} |",
            gbs(len, tm),
            gbs(len, ts),
            gbs(len, tu),
            gbs(len, tb),
            gbs(len, tbu)
        );
    }

    // Partial reads of the field, zstd 3 + byte shuffle, default chunks, files in the page cache.
    let (header, raw) = &sets[0].1;
    let dir = tempfile::tempdir().unwrap();
    let (plain, chunked) = (dir.path().join("plain.ra"), dir.path().join("chunked.ra"));
    let values: Vec<f32> = raw
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
        .collect();
    let a = RawArray::from_shape_vec(header.dims.clone(), values).unwrap();
    a.write_file(&plain).unwrap();
    a.write_file_with(&chunked, &WriteOptions::new().codec(Codec::Zstd))
        .unwrap();
    let f = std::fs::File::open(&chunked).unwrap();
    let h = Header::read_from_any(&mut &f).unwrap();
    println!("\n# partial reads of the {n}^3 f32 field (zstd 3, byte shuffle, default chunks)\n");
    println!("| read | uncompressed | chunked (open + read) | chunked (open reader, cold cache) |");
    println!("|---|---|---|---|");
    let reads: [(&str, Vec<std::ops::Range<u64>>); 3] = [
        (
            "one element",
            vec![n / 2..n / 2 + 1, n / 3..n / 3 + 1, n / 5..n / 5 + 1],
        ),
        ("plane [.., .., k]", vec![0..n, 0..n, n / 2..n / 2 + 1]),
        ("plane [i, .., ..]", vec![n / 2..n / 2 + 1, 0..n, 0..n]),
    ];
    for (what, ranges) in &reads {
        let len: u64 = ranges.iter().map(|r| r.end - r.start).product::<u64>() * 4;
        let (tu, _) = best(5, || {
            ArrayReader::open(&plain)
                .unwrap()
                .read_subset_bytes(ranges)
                .unwrap()
        });
        let (tc, _) = best(5, || {
            let mut out = vec![0u8; len as usize];
            codec::decode_subset(&h, &f, ranges, &mut out).unwrap();
            out
        });
        let mut open_only = Duration::MAX;
        for _ in 0..5 {
            let r = SectionReader::open(&h, &f).unwrap();
            let t = Instant::now();
            let mut out = vec![0u8; len as usize];
            r.read_subset(ranges, &mut out).unwrap();
            open_only = open_only.min(t.elapsed());
        }
        println!(
            "| {what} | {:.3} ms | {:.3} ms | {:.3} ms |",
            tu.as_secs_f64() * 1e3,
            tc.as_secs_f64() * 1e3,
            open_only.as_secs_f64() * 1e3
        );
    }

    // A record file written as a simulation writes it: N-body records appended 4096 at a time,
    // a flush after each batch, uncompressed and compressed (whole-record shuffle).
    let (_, raw) = &sets[2].1;
    let descr = serde_json::json!([
        ["pos", "<f8", [3]],
        ["vel", "<f8", [3]],
        ["mass", "<f8"],
        ["id", "<u8"],
        ["acc", "<f4", [3]]
    ]);
    let spec = ElementSpec::from_layout(Layout::from_numpy_descr_json(&descr).unwrap()).unwrap();
    let batch = 4096 * 76;
    println!(
        "\n# RecordWriter, {} N-body records of 76 B, a flush every 4096\n",
        raw.len() / 76
    );
    // Records per chunk: the default (the first flush's records, here one flush's worth), or
    // about 1 MiB of them. A flush inside a chunk writes a new version of it (the old one
    // stays as dead bytes), so the ratio and the append rate depend on how chunks and flushes
    // line up.
    println!("| layout | chunk records | threads | ratio | append + flush GB/s | read back GB/s |");
    println!("|---|---|---|---|---|---|");
    let z = Some((Codec::Zstd, Shuffle::Byte));
    let l = Some((Codec::Lz4, Shuffle::Byte));
    // (layout, codec and filter, records per chunk, threads)
    type Setting = (&'static str, Option<(Codec, Shuffle)>, Option<u64>, usize);
    let settings: [Setting; 7] = [
        ("uncompressed", None, None, 1),
        ("chunked byte + lz4", l, None, 1),
        ("chunked byte + zstd 3", z, None, 1),
        ("chunked byte + lz4", l, None, cores),
        ("chunked byte + zstd 3", z, None, cores),
        ("chunked byte + lz4", l, Some((1 << 20) / 76), cores),
        ("chunked byte + zstd 3", z, Some((1 << 20) / 76), cores),
    ];
    for (what, chunked, per, threads) in settings {
        let path = dir.path().join("records.ra");
        let opts = match (chunked, per) {
            (Some((c, s)), None) => RecordOptions::new().codec(c).shuffle(s).threads(threads),
            (Some((c, s)), Some(p)) => RecordOptions::new()
                .codec(c)
                .shuffle(s)
                .threads(threads)
                .chunk_records(p),
            (None, _) => RecordOptions::new(),
        };
        let (tw, ()) = best(2, || {
            let mut w = opts.create_dyn(&path, &spec).unwrap();
            for part in raw.chunks(batch) {
                w.append_bytes(part).unwrap();
                w.flush().unwrap();
            }
            w.finish().unwrap();
        });
        let (tr, back) = best(2, || DynArray::read_file(&path).unwrap());
        assert!(back.data() == &raw[..]);
        let len = std::fs::metadata(&path).unwrap().len();
        let per = per.map_or_else(|| "default".to_string(), |p| p.to_string());
        println!(
            "| {what} | {per} | {threads} | {:.3} | {:.2} | {:.2} |",
            raw.len() as f64 / len as f64,
            gbs(raw.len(), tw),
            gbs(raw.len(), tr)
        );
    }
}
