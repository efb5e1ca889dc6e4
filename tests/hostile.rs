//! Mutated files through every reader: bit flips, truncation at every length, random dims and
//! sizes, random flags, eltype and elbyte words. Each reader returns a value or an error, never
//! panics; and the slice, stream and file forms of one reader agree.
//!
//! The fuzz targets (`fuzz/`) search the same space for hours; these run in a second or two.

use std::io::Read;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

use num_complex::Complex;
use proptest::prelude::*;
use rawarray_serde::{
    from_reader, from_slice, recover, to_vec, Durability, DynArray, RaRecord, RawArray,
    RecordOptions, RecordReader, RecordWriter, Trailer, WriteOptions,
};
use serde::{Deserialize, Serialize};

/// A derived record that is not plain old data (its `bool` is checked byte by byte).
#[derive(RaRecord, Serialize, Deserialize, Clone, Copy, Debug, PartialEq)]
struct Sample {
    t: f64,
    ok: bool,
    v: [i16; 2],
}

fn samples(n: usize) -> Vec<Sample> {
    (0..n)
        .map(|i| Sample {
            t: i as f64 * 0.25,
            ok: i % 3 == 0,
            v: [i as i16, -(i as i16)],
        })
        .collect()
}

/// Small valid files of every kind the readers handle.
fn seeds() -> Vec<(&'static str, Vec<u8>)> {
    let written = |a: Vec<u8>, opts: WriteOptions| {
        let d = DynArray::from_bytes(&a).unwrap();
        let mut out = Vec::new();
        d.write_to_with(&mut out, &opts).unwrap();
        out
    };
    let f32s = RawArray::from_shape_vec(vec![3, 2], vec![1.0f32, 2.0, 3.5, -4.0, 5.0, 6.0])
        .unwrap()
        .to_bytes();
    let mut with_trailer = DynArray::from_typed(&RawArray::from_vec(vec![0.5f64, 1.5]));
    with_trailer.set_trailer(&Trailer::for_element::<f64>(serde_json::json!({"k": 1})).unwrap());

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rec.ra");
    let mut w: RecordWriter<Sample> = RecordOptions::new()
        .durability(Durability::NoFsync)
        .params(serde_json::json!({"run": 1}))
        .create(&path)
        .unwrap();
    w.append_slice(&samples(3)).unwrap();
    w.finish().unwrap();
    let records = std::fs::read(&path).unwrap();
    let path = dir.path().join("f32.ra");
    let mut w: RecordWriter<f32> = RecordOptions::new()
        .durability(Durability::NoFsync)
        .create(&path)
        .unwrap();
    w.append_slice(&[0.5, 1.5, 2.5]).unwrap();
    w.finish().unwrap();
    let f32_records = std::fs::read(&path).unwrap();

    vec![
        ("f32", f32s.clone()),
        (
            "f32 big-endian",
            written(f32s.clone(), WriteOptions::new().big_endian(true)),
        ),
        ("f32 LZ4", written(f32s, WriteOptions::new().compress(true))),
        (
            "complex",
            RawArray::from_vec(vec![Complex::new(1.0f32, -1.0), Complex::new(0.5, 2.0)]).to_bytes(),
        ),
        (
            "u16x3",
            RawArray::from_vec(vec![[1u16, 2, 3], [4, 5, 6]]).to_bytes(),
        ),
        (
            "bool",
            RawArray::from_vec(vec![true, false, true]).to_bytes(),
        ),
        ("records", records),
        ("f32 records", f32_records),
        ("serde string", to_vec("hello, world").unwrap()),
        (
            "serde nested",
            to_vec(&vec![vec![1.0f64, 2.0], vec![3.0, 4.0]]).unwrap(),
        ),
        ("serde record", to_vec(&samples(2)).unwrap()),
        ("trailer", with_trailer.to_bytes().unwrap()),
        ("scalar", RawArray::scalar(7u8).to_bytes()),
    ]
}

/// Runs one reader, turning a panic into a test failure that names the reader and the input.
fn no_panic<R>(what: &str, bytes: &[u8], f: impl FnOnce() -> R) -> R {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(_) => panic!(
            "{what} panicked on {} bytes: {}",
            bytes.len(),
            bytes.iter().map(|b| format!("{b:02x}")).collect::<String>()
        ),
    }
}

/// A stream handing out three bytes per read, so partial reads are exercised.
struct Trickle<'a>(&'a [u8]);

impl Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf.len().min(self.0.len()).min(3);
        buf[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        Ok(n)
    }
}

/// The slice, stream and file reads of one type agree: equal values (by `key`), or errors of
/// the same kind.
fn typed<T: rawarray_serde::Element>(bytes: &[u8], path: &Path) {
    let name = std::any::type_name::<T>();
    let key = |r: &rawarray_serde::Result<RawArray<T>>| match r {
        Ok(a) => Ok(a.to_bytes()),
        Err(e) => Err(std::mem::discriminant(e.kind())),
    };
    let a = no_panic(name, bytes, || RawArray::<T>::from_bytes(bytes));
    let b = no_panic(name, bytes, || RawArray::<T>::read_from(Trickle(bytes)));
    let c = no_panic(name, bytes, || RawArray::<T>::read_file(path));
    assert_eq!(key(&a), key(&b), "{name}: from_bytes and read_from differ");
    assert_eq!(key(&a), key(&c), "{name}: from_bytes and read_file differ");
}

fn serde_read<T: serde::de::DeserializeOwned>(bytes: &[u8]) {
    let name = std::any::type_name::<T>();
    let a = no_panic(name, bytes, || from_slice::<T>(bytes).is_ok());
    let b = no_panic(name, bytes, || from_reader::<T>(Trickle(bytes)).is_ok());
    assert_eq!(a, b, "{name}: from_slice and from_reader differ");
}

fn records<T: rawarray_serde::Element + Clone>(bytes: &[u8], path: &Path) {
    let name = std::any::type_name::<T>();
    no_panic(name, bytes, || {
        if let Ok(r) = RecordReader::<T>::open(path) {
            let n = r.len();
            for rec in r.iter().take(64) {
                let _ = rec;
            }
            let _ = (
                r.get(n),
                r.slice(..n.min(64)),
                r.slice(n / 2..),
                r.trailer(),
            );
        }
    });
}

/// Every reader on `bytes`: no panic, and the forms of each reader agree.
fn every_reader(bytes: &[u8]) {
    let dir = tempfile::tempdir_in(scratch_root()).unwrap();
    let path = dir.path().join("in.ra");
    std::fs::write(&path, bytes).unwrap();

    let d = no_panic("DynArray::from_bytes", bytes, || {
        DynArray::from_bytes(bytes)
    });
    let s = no_panic("DynArray::read_from", bytes, || {
        DynArray::read_from(Trickle(bytes))
    });
    let f = no_panic("DynArray::read_file", bytes, || DynArray::read_file(&path));
    let key = |r: &rawarray_serde::Result<DynArray>| match r {
        Ok(d) => Ok(d.clone()),
        Err(e) => Err(std::mem::discriminant(e.kind())),
    };
    assert_eq!(
        key(&d),
        key(&s),
        "DynArray::from_bytes and read_from differ"
    );
    assert_eq!(
        key(&d),
        key(&f),
        "DynArray::from_bytes and read_file differ"
    );
    if let Ok(d) = d {
        no_panic("DynArray::trailer", bytes, || {
            d.trailer().is_some() || d.trailer_error().is_some()
        });
    }

    typed::<f32>(bytes, &path);
    typed::<f64>(bytes, &path);
    typed::<u8>(bytes, &path);
    typed::<bool>(bytes, &path);
    typed::<[u16; 3]>(bytes, &path);
    typed::<Complex<f32>>(bytes, &path);
    typed::<Sample>(bytes, &path);

    serde_read::<f64>(bytes);
    serde_read::<Vec<f32>>(bytes);
    serde_read::<Vec<Vec<f64>>>(bytes);
    serde_read::<String>(bytes);
    serde_read::<Sample>(bytes);
    serde_read::<Vec<Sample>>(bytes);
    serde_read::<serde::de::IgnoredAny>(bytes);
    no_panic("from_slice::<&str>", bytes, || {
        from_slice::<&str>(bytes).is_ok()
    });

    no_panic("Trailer::from_file_bytes", bytes, || {
        Trailer::from_file_bytes(bytes).is_ok()
    });
    no_panic("Trailer::from_trailing_bytes", bytes, || {
        Trailer::from_trailing_bytes(bytes).is_ok()
    });
    no_panic("Trailer::read_file", bytes, || {
        Trailer::read_file(&path).is_ok()
    });

    records::<f32>(bytes, &path);
    records::<Sample>(bytes, &path);
    records::<[u16; 3]>(bytes, &path);

    // The appending writer reads the file it opens: on a copy, and one more record appends.
    let append = dir.path().join("append.ra");
    std::fs::write(&append, bytes).unwrap();
    let opened = no_panic("RecordOptions::open", bytes, || {
        RecordOptions::new()
            .durability(Durability::NoFsync)
            .open::<f32>(&append)
    });
    if let Ok(mut w) = opened {
        let before = w.len();
        no_panic("append and finish", bytes, || {
            w.append(&1.5).unwrap();
            w.finish().unwrap()
        });
        let r = RecordReader::<f32>::open(&append).unwrap();
        assert_eq!(r.len() as u64, before + 1);
        assert_eq!(r.slice(before as usize..).unwrap()[0], 1.5);
    }

    // recover rewrites the file: on a copy, and what it leaves is a valid file.
    let copy = dir.path().join("copy.ra");
    std::fs::write(&copy, bytes).unwrap();
    if no_panic("recover", bytes, || recover(&copy)).is_ok() {
        no_panic("read after recover", bytes, || {
            DynArray::read_file(&copy).expect("a recovered file reads")
        });
    }
}

/// A tmpfs folder where there is one: the readers' temporary files cost nothing there.
fn scratch_root() -> std::path::PathBuf {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    }
}

#[test]
fn the_seeds_are_valid_files() {
    for (name, bytes) in seeds() {
        DynArray::from_bytes(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        every_reader(&bytes);
    }
}

/// Every prefix of every seed (the seeds are 50 to 300 bytes).
#[test]
fn truncation_at_every_length() {
    let mut tried = 0;
    for (name, bytes) in seeds() {
        for len in 0..bytes.len() {
            every_reader(&bytes[..len]);
            // Cut inside the header or the data (not in trailing bytes), a file is an error.
            let h = rawarray_serde::Header::decode(&bytes).unwrap();
            if len < h.encoded_len() + h.size as usize {
                assert!(
                    DynArray::from_bytes(&bytes[..len]).is_err(),
                    "{name} cut at {len}"
                );
            }
            tried += 1;
        }
    }
    assert!(tried > 1000, "{tried}");
    println!("{tried} prefixes through every reader");
}

fn seed_index() -> impl Strategy<Value = usize> {
    0..seeds().len()
}

/// Word values that make headers interesting: small, powers of two, the extremes.
fn word() -> impl Strategy<Value = u64> {
    prop_oneof![
        0u64..8,
        0u64..4096,
        (0u32..64).prop_map(|k| 1u64 << k),
        Just(u64::MAX),
        any::<u64>(),
    ]
}

fn set_word(bytes: &mut Vec<u8>, index: usize, value: u64) {
    let at = index * 8;
    if bytes.len() < at + 8 {
        bytes.resize(at + 8, 0);
    }
    bytes[at..at + 8].copy_from_slice(&value.to_le_bytes());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn bit_flips(seed in seed_index(), flips in proptest::collection::vec((any::<usize>(), 0u8..8), 1..8)) {
        let mut bytes = seeds().swap_remove(seed).1;
        for (at, bit) in flips {
            let i = at % bytes.len();
            bytes[i] ^= 1 << bit;
        }
        every_reader(&bytes);
    }

    /// Random dims and size words (and ndims) over a valid file's data.
    #[test]
    fn random_dims_and_sizes(
        seed in seed_index(),
        size in word(),
        dims in proptest::collection::vec(word(), 0..6),
        keep_ndims in any::<bool>(),
    ) {
        let mut bytes = seeds().swap_remove(seed).1;
        let data = bytes.split_off(48 + 8 * rawarray_serde::Header::decode(&bytes).unwrap().dims.len());
        bytes.truncate(48);
        set_word(&mut bytes, 4, size);
        set_word(&mut bytes, 5, if keep_ndims { dims.len() as u64 } else { dims.len() as u64 + 1 });
        for (i, d) in dims.iter().enumerate() {
            set_word(&mut bytes, 6 + i, *d);
        }
        bytes.extend(data);
        every_reader(&bytes);
    }

    /// Random flags, eltype and elbyte words on a valid file.
    #[test]
    fn random_flags_eltype_elbyte(
        seed in seed_index(),
        flags in prop_oneof![0u64..4, word()],
        eltype in prop_oneof![0u64..6, word()],
        elbyte in prop_oneof![Just(1u64), Just(2), Just(4), Just(8), Just(16), Just(32), word()],
    ) {
        let mut bytes = seeds().swap_remove(seed).1;
        set_word(&mut bytes, 1, flags);
        set_word(&mut bytes, 2, eltype);
        set_word(&mut bytes, 3, elbyte);
        every_reader(&bytes);
    }
}

/// The `ra` binary beside this test's folder, if the workspace build made it.
fn ra_binary() -> Option<std::path::PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let ra = exe.parent()?.parent()?.join("ra");
    ra.is_file().then_some(ra)
}

/// The `ra` tool on mutated files (every 7th prefix and a bit flip per byte of each seed, and
/// the file that made `ra cat` abort): it answers with exit status 0 or 1, never a crash.
#[test]
fn the_ra_tool_answers_hostile_files() {
    // `cargo test --workspace` builds it before any test runs.
    let ra = ra_binary().expect(
        "the ra binary is not built: run cargo test --workspace (or cargo build -p rawarray-cli)",
    );
    let dir = tempfile::tempdir_in(scratch_root()).unwrap();
    let mut inputs: Vec<Vec<u8>> = Vec::new();
    for (_, bytes) in seeds().into_iter().take(6) {
        inputs.extend((0..bytes.len()).step_by(7).map(|n| bytes[..n].to_vec()));
        let mut flipped = bytes.clone();
        for i in (0..flipped.len()).step_by(5) {
            flipped[i] ^= 0x80;
        }
        inputs.push(flipped);
    }
    // A user-defined element of 2^56 bytes in a file with a 0 dim.
    let words = [u64::from_le_bytes(*b"rawarray"), 0, 0, 1 << 56, 0, 2, 0, 5];
    inputs.push(words.iter().flat_map(|w| w.to_le_bytes()).collect());
    let path = dir.path().join("in.ra");
    let mut runs = 0;
    for bytes in &inputs {
        std::fs::write(&path, bytes).unwrap();
        for args in [&["info"][..], &["cat", "--head", "5"], &["checksum"]] {
            let out = std::process::Command::new(&ra)
                .args(args)
                .arg(&path)
                .output()
                .unwrap();
            let code = out.status.code();
            assert!(
                matches!(code, Some(0 | 1)),
                "ra {args:?} exited {code:?} on {} bytes: {}",
                bytes.len(),
                String::from_utf8_lossy(&out.stderr)
            );
            runs += 1;
        }
    }
    assert!(runs > 100, "{runs}");

    // A .npy whose structured dtype has a field of 200 000 dims: refused, not a stack overflow.
    let shape = format!("({},)", vec!["1"; 200_000].join(", "));
    let dict =
        format!("{{'descr': [('a', '<f4', {shape})], 'fortran_order': False, 'shape': (1,), }}");
    let mut header = dict.into_bytes();
    header.resize((12 + header.len() + 1).next_multiple_of(64) - 12 - 1, b' ');
    header.push(b'\n');
    let mut npy = b"\x93NUMPY\x02\x00".to_vec();
    npy.extend((header.len() as u32).to_le_bytes());
    npy.extend(header);
    npy.extend([0u8; 4]);
    let npy_path = dir.path().join("deep.npy");
    std::fs::write(&npy_path, npy).unwrap();
    let out = std::process::Command::new(&ra)
        .arg("convert")
        .arg(&npy_path)
        .arg(dir.path().join("deep.ra"))
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
