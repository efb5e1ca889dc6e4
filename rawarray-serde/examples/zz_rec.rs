use rawarray_serde::codec::{self, Codec, Filter};
use rawarray_serde::section::Section;
use rawarray_serde::{ElType, Header, WriteOptions};
use std::time::Instant;
fn main() {
    let n: usize = 1 << 20;
    let mut raw = Vec::with_capacity(n * 76);
    let mut s = 7u64;
    for k in 0..n {
        let (step, i) = ((k / 64) as u64, (k % 64) as u64);
        let t = step as f64 * 1e-3;
        raw.extend_from_slice(&step.to_le_bytes());
        raw.extend_from_slice(&t.to_le_bytes());
        raw.extend_from_slice(&(i as u32).to_le_bytes());
        for c in 0..3 {
            raw.extend_from_slice(
                &((t + i as f64 + c as f64).cos() * (1.0 + i as f64 / 64.0)).to_le_bytes(),
            );
        }
        for c in 0..3 {
            raw.extend_from_slice(
                &(-(t + i as f64 + c as f64).sin() * (1.0 + i as f64 / 64.0)).to_le_bytes(),
            );
        }
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        raw.extend_from_slice(
            &(-0.5 + 1e-6 * ((s >> 11) as f64 / (1u64 << 53) as f64 - 0.5)).to_le_bytes(),
        );
    }
    let h = Header::new(ElType::User, 76, vec![64, (n / 64) as u64]).unwrap();
    let cases: Vec<(&str, WriteOptions)> = vec![
        ("default", WriteOptions::chunked().codec(Codec::Zstd)),
        (
            "split 128K",
            WriteOptions::chunked().codec(Codec::Zstd).split(true),
        ),
        (
            "split blocks=chunk",
            WriteOptions::chunked()
                .codec(Codec::Zstd)
                .split(true)
                .block_bytes(1 << 24),
        ),
        (
            "split 512K",
            WriteOptions::chunked()
                .codec(Codec::Zstd)
                .split(true)
                .block_bytes(512 << 10),
        ),
        (
            "split bd blocks=chunk",
            WriteOptions::chunked()
                .codec(Codec::Zstd)
                .filters(vec![Filter::Shuffle, Filter::ByteDelta])
                .split(true)
                .block_bytes(1 << 24),
        ),
    ];
    let dims = [0..64u64, 0..(n / 64) as u64];
    for (name, o) in cases {
        let t = Instant::now();
        let (h2, sec) = codec::encode(&h, &raw, &o).unwrap();
        let enc = t.elapsed().as_secs_f64();
        let mut file = h2.encode();
        file.extend_from_slice(&sec);
        let mut best = (f64::MAX, f64::MAX);
        for _ in 0..5 {
            let s = Section::open(&h2, &file[..]).unwrap();
            let t = Instant::now();
            let v = s.read_all().unwrap();
            best.0 = best.0.min(t.elapsed().as_secs_f64());
            std::hint::black_box(v);
            let s = Section::open(&h2, &file[..]).unwrap();
            let t = Instant::now();
            let f = s.read_box_fields(&dims, &[(0, 8), (68, 8)]).unwrap();
            if f.is_some() {
                best.1 = best.1.min(t.elapsed().as_secs_f64());
            }
            std::hint::black_box(f);
        }
        let gb = raw.len() as f64 / 1e9;
        println!("{name:24} ratio {:.3} enc {:.2} GB/s dec {:.2} GB/s fields(step,energy) {:.1} ms (whole {:.1} ms) blocks {:?}", raw.len() as f64 / sec.len() as f64, gb / enc, gb / best.0, best.1 * 1e3, best.0 * 1e3, rawarray_serde::section::Section::open(&h2, &file[..]).unwrap().describe().blocks);
    }
}
