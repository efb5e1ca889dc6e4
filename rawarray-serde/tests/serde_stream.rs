//! The serde read path through a stream: the same values as from a slice, whatever the stream's
//! read sizes and wherever its 64 KiB window ends (values here are larger than one window);
//! a stream that ends early is an error naming the bytes expected and found; a `Vec` of plain
//! scalars is read into memory that is the value's, and nothing else of its size.

use std::io::Read;

use num_complex::Complex;
use proptest::prelude::*;
use rawarray_serde::{from_file, from_reader, from_slice, to_vec, ErrorKind, WriteOptions};
use serde::{Deserialize, Serialize};

mod common;
use common::Trickle;

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
struct Foo {
    info: [u8; 12],
    index: u32,
    v: [f64; 8],
}

fn foo(i: usize) -> Foo {
    Foo {
        info: [i as u8; 12],
        index: i as u32,
        v: std::array::from_fn(|k| (i * 8 + k) as f64 * 0.5),
    }
}

/// `value` read back from a slice, a whole stream, a trickling stream and a file, all equal.
fn every_input<T>(value: &T)
where
    T: Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug,
{
    let bytes = to_vec(value).unwrap();
    let name = std::any::type_name::<T>();
    assert_eq!(
        &from_slice::<T>(&bytes).unwrap(),
        value,
        "{name}: from_slice"
    );
    assert_eq!(
        &from_reader::<T>(&bytes[..]).unwrap(),
        value,
        "{name}: from_reader"
    );
    for phase in [0, 3] {
        let got: T = from_reader(Trickle {
            bytes: &bytes,
            phase,
        })
        .unwrap();
        assert_eq!(&got, value, "{name}: trickled from phase {phase}");
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v.ra");
    std::fs::write(&path, &bytes).unwrap();
    assert_eq!(&from_file::<T>(&path).unwrap(), value, "{name}: from_file");
}

#[test]
fn values_larger_than_the_window_read_the_same_from_every_input() {
    // 80-byte records: the window's 64 KiB end inside one of them.
    every_input(&(0..3000).map(foo).collect::<Vec<_>>());
    // Plain scalars straight into the Vec, read in pieces across refills.
    every_input(&(0..70_000).map(|i| i as f32).collect::<Vec<_>>());
    every_input(&(0..20_000).map(|i| i as u128 * 3).collect::<Vec<_>>());
    // Arrays that straddle the window's end (12 bytes do not divide 64 KiB).
    every_input(
        &(0..10_000)
            .map(|i| [i, i + 1, i + 2])
            .collect::<Vec<[u32; 3]>>(),
    );
    // Rows: each a Vec read whole, some from the window, some straight from the stream.
    every_input(
        &(0..40)
            .map(|r| vec![r as f64; 1000 + r])
            .map(|mut v| {
                v.truncate(1000);
                v
            })
            .collect::<Vec<_>>(),
    );
    // Rows of an odd length: the window's end falls inside a row, whose start is copied from
    // the window and the rest read straight into it.
    every_input(&(0..100).map(|r| vec![r as u8; 1001]).collect::<Vec<_>>());
    // Complex elements, read half by half.
    every_input(
        &(0..20_000)
            .map(|i| Complex::new(f64::from(i), -f64::from(i)))
            .collect::<Vec<_>>(),
    );
    // Strings and byte runs, one longer than the window.
    every_input(&"x".repeat(200_000));
    every_input(
        &(0..100)
            .map(|i| format!("{i:0>1000}"))
            .collect::<Vec<String>>(),
    );
}

#[test]
fn big_endian_and_compressed_streams_read_the_same() {
    let values: Vec<f64> = (0..50_000).map(f64::from).collect();
    let a = rawarray_serde::RawArray::from_vec(values.clone());
    for opts in [
        WriteOptions::new().big_endian(true),
        WriteOptions::new().compress(true),
        WriteOptions::new().compress(true).big_endian(true),
    ] {
        let mut bytes = Vec::new();
        a.write_to_with(&mut bytes, &opts).unwrap();
        let got: Vec<f64> = from_reader(Trickle {
            bytes: &bytes,
            phase: 1,
        })
        .unwrap();
        assert_eq!(got, values);
        assert_eq!(from_slice::<Vec<f64>>(&bytes).unwrap(), values);
    }
}

/// A stream cut at `at` bytes: the error is `Truncated`, naming the size field and the data
/// bytes that arrived.
fn cut<T: serde::de::DeserializeOwned>(bytes: &[u8], at: usize) -> (u64, u64) {
    let header = rawarray_serde::Header::decode(bytes).unwrap();
    let Err(e) = from_reader::<T>(Trickle {
        bytes: &bytes[..at],
        phase: at,
    }) else {
        panic!("cut at {at}: read without an error");
    };
    match e.kind() {
        ErrorKind::Truncated { expected, found } => {
            assert_eq!(*expected, header.size, "{e}");
            (*expected, *found)
        }
        other => panic!("cut at {at}: expected Truncated, got {other:?}: {e}"),
    }
}

#[test]
fn a_stream_that_ends_early_names_the_bytes_missing() {
    let floats = to_vec(&(0..100_000).map(|i| i as f32).collect::<Vec<_>>()).unwrap();
    let hl = 56;
    for at in [hl, hl + 1, hl + 4096, hl + 65_536 + 3, floats.len() - 1] {
        assert_eq!(
            cut::<Vec<f32>>(&floats, at),
            (400_000, (at - hl) as u64),
            "Vec<f32> cut at {at}"
        );
    }
    let foos = to_vec(&(0..2000).map(foo).collect::<Vec<_>>()).unwrap();
    for at in [hl + 79, hl + 70_000, foos.len() - 1] {
        let (expected, found) = cut::<Vec<Foo>>(&foos, at);
        assert_eq!(expected, 160_000);
        // The window reads ahead: all that arrived is counted.
        assert_eq!(found, (at - hl) as u64, "Vec<Foo> cut at {at}");
    }
    let s = to_vec(&"y".repeat(100_000)).unwrap();
    assert_eq!(cut::<String>(&s, hl + 99_999), (100_000, 99_999));
}

/// A record of 64 KiB and 4 bytes: longer than the window, and too long for the one comparison
/// that begins shorter records.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
struct Wide {
    a: [[[u8; 32]; 32]; 32],
    b: [[[u8; 32]; 32]; 32],
    tail: u32,
}

#[test]
fn records_longer_than_the_window_read_the_same_from_every_input() {
    let wide = |i: usize| Wide {
        a: std::array::from_fn(|j| std::array::from_fn(|k| [(i + j + k) as u8; 32])),
        b: std::array::from_fn(|j| std::array::from_fn(|k| [(i * 3 + j * k) as u8; 32])),
        tail: i as u32,
    };
    // Unoptimised builds hold several 64 KiB copies of a record on the stack.
    std::thread::Builder::new()
        .stack_size(64 << 20)
        .spawn(move || every_input(&(0..3).map(wide).collect::<Vec<_>>()))
        .unwrap()
        .join()
        .unwrap();
}

/// A stream that hands out as much as each `read` asks for, and counts the calls.
struct Counted<'a> {
    bytes: &'a [u8],
    calls: usize,
}

impl Read for Counted<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.calls += 1;
        self.bytes.read(buf)
    }
}

#[test]
fn records_are_read_through_one_read_call_per_window() {
    // 80-byte records, 64 KiB windows: each refill asks the stream for the whole window at
    // once (an earlier `read_to_end` asked for 8, 16, 32 KiB, then the rest: four calls).
    let foos: Vec<Foo> = (0..20_000).map(foo).collect();
    let bytes = to_vec(&foos).unwrap();
    let mut stream = Counted {
        bytes: &bytes,
        calls: 0,
    };
    let got: Vec<Foo> = from_reader(&mut stream).unwrap();
    assert_eq!(got, foos);
    let windows = (foos.len() * 80).div_ceil(64 << 10);
    // The header takes a call or two, the end of the stream one more.
    assert!(
        stream.calls <= windows + 4,
        "{} read calls for {windows} windows",
        stream.calls
    );
}

#[test]
fn the_stream_is_left_just_after_the_data_section() {
    let mut bytes = to_vec(&(0..30_000).map(|i| i as u16).collect::<Vec<_>>()).unwrap();
    bytes.extend_from_slice(b"after");
    let mut stream = Trickle {
        bytes: &bytes,
        phase: 0,
    };
    let mut de = rawarray_serde::Deserializer::from_reader(&mut stream).unwrap();
    let v = <Vec<u16>>::deserialize(&mut de).unwrap();
    de.end().unwrap();
    assert_eq!(v.len(), 30_000);
    let mut rest = String::new();
    stream.read_to_string(&mut rest).unwrap();
    assert_eq!(rest, "after");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Any shape of rows and records, any read sizes: a stream reads what a slice reads.
    #[test]
    fn p_streams_read_what_slices_read(
        rows in 1usize..40,
        cols in 1usize..3000,
        records in 0usize..2000,
        phase in 0usize..7,
    ) {
        let grid: Vec<Vec<i16>> = (0..rows).map(|r| (0..cols).map(|c| (r * cols + c) as i16).collect()).collect();
        let bytes = to_vec(&grid).unwrap();
        let got: Vec<Vec<i16>> = from_reader(Trickle { bytes: &bytes, phase }).unwrap();
        prop_assert_eq!(got, from_slice::<Vec<Vec<i16>>>(&bytes).unwrap());
        let tiles: Vec<[f32; 5]> = (0..rows * cols).map(|i| [i as f32; 5]).collect();
        let bytes = to_vec(&tiles).unwrap();
        let got: Vec<[f32; 5]> = from_reader(Trickle { bytes: &bytes, phase }).unwrap();
        prop_assert_eq!(got, tiles);
        if records > 0 {
            let foos: Vec<Foo> = (0..records).map(foo).collect();
            let bytes = to_vec(&foos).unwrap();
            let got: Vec<Foo> = from_reader(Trickle { bytes: &bytes, phase }).unwrap();
            prop_assert_eq!(got, foos);
        }
    }
}
