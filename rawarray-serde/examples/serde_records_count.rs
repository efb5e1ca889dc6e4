//! A small driver for counting instructions per record of the serde path on records, under
//! `valgrind --tool=cachegrind` (wall-clock times on a shared machine are too noisy to steer
//! by): `cargo build --release -p rawarray-serde --example serde_records_count`, then
//! `valgrind --tool=cachegrind target/release/examples/serde_records_count MODE`, where MODE is
//! `setup` (building the input only: subtract it), `write` (`to_writer` into a sink), `read`
//! (`from_reader` of a byte slice), or `hand-write` / `hand-read` (a loop over the fields by
//! hand, the least a record format can do).

use std::io::{Read, Write};

use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Clone, PartialEq, Debug)]
struct Foo {
    info: [u8; 12],
    index: u32,
    v: [f64; 8],
}

const RECORDS: usize = 256 << 10;

fn foo(i: usize) -> Foo {
    Foo {
        info: [i as u8; 12],
        index: i as u32,
        v: std::array::from_fn(|k| (i + k) as f64),
    }
}

fn main() {
    let mode = std::env::args().nth(1).unwrap_or_default();
    let foos: Vec<Foo> = (0..RECORDS).map(foo).collect();
    let file = rawarray_serde::to_vec(&foos).unwrap();
    match mode.as_str() {
        "setup" => {}
        "write" => rawarray_serde::to_writer(std::io::sink(), &foos).unwrap(),
        "read" => {
            let back: Vec<Foo> = rawarray_serde::from_reader(&file[..]).unwrap();
            assert_eq!(back.len(), RECORDS);
            std::hint::black_box(back);
        }
        "hand-write" => {
            let mut out = std::io::sink();
            let mut buf = Vec::with_capacity(64 << 10);
            out.write_all(&file[..file.len() - RECORDS * 80]).unwrap();
            for f in &foos {
                let mut rec = [0u8; 80];
                rec[..12].copy_from_slice(&f.info);
                rec[12..16].copy_from_slice(&f.index.to_le_bytes());
                for (k, x) in f.v.iter().enumerate() {
                    rec[16 + 8 * k..24 + 8 * k].copy_from_slice(&x.to_le_bytes());
                }
                buf.extend_from_slice(&rec);
                if buf.len() >= 64 << 10 {
                    out.write_all(&buf).unwrap();
                    buf.clear();
                }
            }
            out.write_all(&buf).unwrap();
        }
        "hand-read" => {
            let mut input = &file[file.len() - RECORDS * 80..];
            let mut back = Vec::new();
            let mut rec = [0u8; 80];
            while input.read_exact(&mut rec).is_ok() {
                back.push(Foo {
                    info: rec[..12].try_into().unwrap(),
                    index: u32::from_le_bytes(rec[12..16].try_into().unwrap()),
                    v: std::array::from_fn(|k| {
                        f64::from_le_bytes(rec[16 + 8 * k..24 + 8 * k].try_into().unwrap())
                    }),
                });
            }
            assert_eq!(back.len(), RECORDS);
            std::hint::black_box(back);
        }
        other => panic!("unknown mode {other:?}"),
    }
}
