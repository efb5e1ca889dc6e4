//! `ra` against concurrent writers, hostile metadata and small inputs with large costs
//! (issue 14, cases 3, 4, 6 and 8). Every command runs as a user runs it, under a 256 MiB
//! address-space limit (`ulimit -v`) and a 5-second timeout: a panic (exit 101), a hang or an
//! allocation beyond the bound fails the test. Inputs are hand-built bytes.
#![cfg(unix)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use rawarray_serde::{ElType, Field, Header, Layout, RecordWriter, Trailer};

/// 256 MiB of address space, in KiB for `ulimit -v`.
const MEMORY_KIB: u64 = 256 << 10;

/// Runs `ra ARGS` under the memory limit and a 5-second timeout; returns (exit code, stdout,
/// stderr).
fn ra_bounded(args: &[&dyn AsRef<std::ffi::OsStr>]) -> (i32, String, String) {
    ra_limited(args, Duration::from_secs(5))
}

/// [`ra_bounded`] with another timeout.
fn ra_limited(args: &[&dyn AsRef<std::ffi::OsStr>], timeout: Duration) -> (i32, String, String) {
    let mut cmd = std::process::Command::new("sh");
    cmd.arg("-c")
        .arg(format!("ulimit -v {MEMORY_KIB} && exec \"$0\" \"$@\""))
        .arg(assert_cmd::cargo::cargo_bin("ra"));
    for a in args {
        cmd.arg(a);
    }
    // glibc reserves 64 MiB of address space per thread arena; the limit is about the heap.
    cmd.env("MALLOC_ARENA_MAX", "2");
    let out = assert_cmd::Command::from_std(cmd)
        .timeout(timeout)
        .output()
        .unwrap();
    let code = out.status.code().unwrap_or_else(|| {
        panic!(
            "ra {:?} was killed (timeout or signal): {}",
            args.iter()
                .map(|a| a.as_ref().to_owned())
                .collect::<Vec<_>>(),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let text = |b: Vec<u8>| String::from_utf8_lossy(&b).into_owned();
    (code, text(out.stdout), text(out.stderr))
}

/// Exit 0 or 1 with at most one line per problem: never a panic (101) or a crash.
fn no_panic(args: &[&dyn AsRef<std::ffi::OsStr>]) -> (i32, String, String) {
    let (code, out, err) = ra_bounded(args);
    assert!(
        code == 0 || code == 1,
        "exit {code} for {:?}: {err}",
        args.iter()
            .map(|a| a.as_ref().to_owned())
            .collect::<Vec<_>>()
    );
    assert!(!err.contains("panicked"), "{err}");
    (code, out, err)
}

fn le_header(eltype: u64, elbyte: u64, dims: &[u64], flags: u64, size: u64) -> Vec<u8> {
    let mut words = vec![
        u64::from_le_bytes(*b"rawarray"),
        flags,
        eltype,
        elbyte,
        size,
        dims.len() as u64,
    ];
    words.extend_from_slice(dims);
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

fn scalar(eltype: ElType, elbyte: u64) -> Layout {
    Layout::scalar(eltype, elbyte)
}

fn field(name: &str, offset: u64, layout: Layout) -> Field {
    Field {
        name: name.into(),
        offset,
        layout,
    }
}

fn record(fields: Vec<Field>) -> Layout {
    Layout::Record {
        name: "Hostile".into(),
        fields,
    }
}

/// The schemas that broke the tool, each over 20-byte user-defined elements.
fn hostile_schemas() -> Vec<(&'static str, Layout)> {
    let mut deep = scalar(ElType::Uint, 1);
    for _ in 0..100 {
        deep = Layout::Array {
            len: 1,
            item: Box::new(deep),
        };
    }
    vec![
        (
            "offset past the element",
            record(vec![
                field("t", 0, scalar(ElType::Float, 8)),
                field("x", 30, scalar(ElType::Float, 4)),
            ]),
        ),
        (
            "scalar wider than the element",
            record(vec![field("big", 0, scalar(ElType::Uint, 64))]),
        ),
        (
            "scalar of an impossible width",
            record(vec![
                field("odd", 0, scalar(ElType::Float, 3)),
                field("rest", 3, scalar(ElType::Uint, 16)),
            ]),
        ),
        (
            "2^40 zero-size items",
            record(vec![field(
                "many",
                0,
                Layout::Array {
                    len: 1 << 40,
                    item: Box::new(Layout::Array {
                        len: 0,
                        item: Box::new(scalar(ElType::Uint, 1)),
                    }),
                },
            )]),
        ),
        (
            "wider than the element",
            record(vec![
                field("a", 0, scalar(ElType::Float, 8)),
                field("b", 8, scalar(ElType::Float, 8)),
                field("c", 16, scalar(ElType::Float, 8)),
            ]),
        ),
        ("nested 100 deep", deep),
        (
            "two fields of one name",
            record(vec![
                field("a", 0, scalar(ElType::Float, 8)),
                field(
                    "a",
                    8,
                    Layout::Array {
                        len: 12,
                        item: Box::new(scalar(ElType::Uint, 1)),
                    },
                ),
            ]),
        ),
        (
            "a quote in a name",
            record(vec![
                field("a'b", 0, scalar(ElType::Float, 8)),
                field("c", 8, scalar(ElType::Uint, 8)),
                field("d", 16, scalar(ElType::Float, 4)),
            ]),
        ),
    ]
}

/// Two 20-byte elements (bytes 0..40), then a trailer block holding `schema`.
fn hostile_file(dir: &Path, i: usize, schema: Layout) -> (PathBuf, Vec<u8>) {
    let data: Vec<u8> = (0..40u8).collect();
    let mut bytes = le_header(0, 20, &[2], 0, 40);
    bytes.extend_from_slice(&data);
    let mut trailer = Trailer::new(serde_json::json!({"case": i})).unwrap();
    trailer.schema = Some(schema);
    let at = bytes.len() as u64;
    bytes.extend(trailer.encode_block(at));
    let path = dir.join(format!("hostile{i}.ra"));
    std::fs::write(&path, &bytes).unwrap();
    (path, data)
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[test]
fn hostile_schemas_are_damaged_metadata_in_every_command_and_the_data_is_shown_as_bytes() {
    let dir = tempfile::tempdir().unwrap();
    for (i, (what, schema)) in hostile_schemas().into_iter().enumerate() {
        let (path, data) = hostile_file(dir.path(), i, schema);
        let out = |ext: &str| dir.path().join(format!("out{i}.{ext}"));

        let (_, info, _) = no_panic(&[&"info", &path]);
        assert!(
            info.contains("damaged") && info.contains("record schema"),
            "{what}: {info}"
        );
        let (_, json, _) = no_panic(&[&"info", &"--json", &path]);
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert!(
            v["trailer_error"].is_string() || v["schema_error"].is_string(),
            "{what}: {json}"
        );

        // The elements, as the bytes they are.
        let (code, cat, _) = no_panic(&[&"cat", &path]);
        assert_eq!(code, 0, "{what}");
        assert_eq!(
            cat,
            format!("[0]\t{}\n[1]\t{}\n", hex(&data[..20]), hex(&data[20..])),
            "{what}"
        );
        let (_, head, _) = no_panic(&[&"cat", &"--head", &"1", &"--json", &path]);
        assert_eq!(
            head,
            format!("{{\"index\":[0],\"value\":\"{}\"}}\n", hex(&data[..20])),
            "{what}"
        );

        // No dtype numpy could load: refused, not a broken .npy with exit 0.
        let (code, _, err) = no_panic(&[&"convert", &path, &out("npy")]);
        assert_eq!(code, 1, "{what}");
        assert!(err.contains("no .npy for user(20 bytes)"), "{what}: {err}");
        assert!(!out("npy").exists());
        for ext in ["csv", "png"] {
            let (code, _, _) = no_panic(&[&"convert", &path, &out(ext)]);
            assert_eq!(code, 1, "{what} -> {ext}");
        }
        for cmd in [
            vec![
                &"compress" as &dyn AsRef<std::ffi::OsStr>,
                &path,
                &"-o",
                &out("z.ra"),
            ],
            vec![&"reshape", &path, &"1", &"2", &"-o", &out("r.ra")],
            vec![&"checksum", &path],
            vec![&"recover", &path],
        ] {
            no_panic(&cmd);
        }
        if out("z.ra").exists() {
            let (_, cat, _) = no_panic(&[&"cat", &out("z.ra")]);
            assert!(
                cat.starts_with(&format!("[0]\t{}", hex(&data[..20]))),
                "{what}"
            );
        }
    }
}

#[test]
fn in_place_commands_during_a_live_writer_are_refused_and_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("live.ra");
    let mut w = RecordWriter::<u64>::create(&path, serde_json::json!({"dt": 1})).unwrap();
    w.append_slice(&(0..1000).collect::<Vec<_>>()).unwrap();
    w.flush().unwrap();
    w.append_slice(&(1000..1001).collect::<Vec<_>>()).unwrap();
    let before = std::fs::read(&path).unwrap();
    for cmd in [
        vec![&"compress" as &dyn AsRef<std::ffi::OsStr>, &path],
        vec![&"decompress", &path],
        vec![&"reshape", &path, &"1000"],
        vec![&"recover", &path],
        vec![&"recover", &"--force", &path],
    ] {
        let (code, _, err) = no_panic(&cmd);
        assert_eq!(code, 1, "{err}");
        assert!(err.contains("is being written by another writer"), "{err}");
        assert_eq!(std::fs::read(&path).unwrap(), before);
    }
    // Readers are never blocked.
    let (code, info, _) = no_panic(&[&"info", &path]);
    assert_eq!(code, 0);
    assert!(info.contains("[1000]"), "{info}");
    w.flush().unwrap();
    w.finish().unwrap();
    let (code, cat, _) = no_panic(&[&"cat", &"--head", &"2000", &path]);
    assert_eq!(code, 0);
    let want: String = (0..1001).map(|i| format!("[{i}]\t{i}\n")).collect();
    assert_eq!(cat, want);
}

/// An f64 array of `dims` holding zeros, as one LZ4 block built by hand: a literal zero, one
/// match repeating it (offset 1) to five bytes from the end, five literal zeros. The match
/// length takes a byte per 255, so the file is about 1/255 of the plain size.
fn lz4_zeros(dir: &Path, dims: [u64; 2]) -> PathBuf {
    let plain = dims[0] * dims[1] * 8;
    let mut block = vec![0x1f, 0, 1, 0];
    let mut extra = plain - 1 - 5 - 4 - 15;
    while extra >= 255 {
        block.push(255);
        extra -= 255;
    }
    block.push(extra as u8);
    block.extend_from_slice(&[0x50, 0, 0, 0, 0, 0]);
    let mut bytes = le_header(3, 8, &dims, 2, block.len() as u64);
    bytes.extend_from_slice(&block);
    assert!(bytes.len() < 1 << 20, "{}", bytes.len());
    let path = dir.join(format!("zeros_{}x{}.ra", dims[0], dims[1]));
    std::fs::write(&path, bytes).unwrap();
    if plain <= 1 << 20 {
        // The builder itself, checked against another decoder where that is cheap.
        assert_eq!(
            lz4_flex::block::decompress(&block, plain as usize).unwrap(),
            vec![0; plain as usize]
        );
    }
    path
}

#[test]
fn small_inputs_cost_bounded_memory_and_time_in_every_command() {
    let dir = tempfile::tempdir().unwrap();
    // Under 1 MiB, 250 MiB of plain data: printing one value, the header and the digests stay
    // within 256 MiB and 5 s (decompressing it whole would not fit).
    lz4_zeros(dir.path(), [16, 1000]);
    let big = lz4_zeros(dir.path(), [4096, 8000]);
    let (code, head, _) = no_panic(&[&"cat", &"--head", &"1", &big]);
    assert_eq!((code, head.as_str()), (0, "[0, 0]\t0.0\n"));
    let (code, head, _) = no_panic(&[&"cat", &"--head", &"3", &"--json", &big]);
    assert_eq!(code, 0);
    assert_eq!(head.lines().count(), 3);
    assert_eq!(no_panic(&[&"info", &big]).0, 0);
    assert_eq!(no_panic(&[&"checksum", &big]).0, 0);
    // And 128 MiB of it to a PNG of 16 MiB of pixels.
    let z = lz4_zeros(dir.path(), [4096, 4096]);
    // 16 Mi elements decoded twice, scaled and PNG-encoded take more than 5 s in a debug build
    // (not in release): the bound checked here is memory, now that neither a float per element
    // (128 MiB) nor the plain block (128 MiB) is held.
    let png = dir.path().join("zeros.png");
    let (code, _, err) = ra_limited(&[&"convert", &z, &png], Duration::from_secs(120));
    assert_eq!(code, 0, "{err}");
    assert!(png.exists());

    // A 3-byte array before a 2 GiB hole: the trailing bytes are found from the end.
    let holey = dir.path().join("hole.ra");
    std::fs::write(
        &holey,
        le_header(2, 1, &[3], 0, 3)
            .into_iter()
            .chain([1, 2, 3])
            .collect::<Vec<u8>>(),
    )
    .unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&holey)
        .unwrap()
        .set_len(2 << 30)
        .unwrap();
    let (code, info, _) = no_panic(&[&"info", &"--json", &holey]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&info).unwrap();
    assert_eq!(v["trailer_bytes"], (2u64 << 30) - 59);
    let (code, cat, _) = no_panic(&[&"cat", &holey]);
    assert_eq!((code, cat.as_str()), (0, "[0]\t1\n[1]\t2\n[2]\t3\n"));

    // A small PNG claiming 81 MB of pixels: refused before decoding, unless allowed.
    let bomb = dir.path().join("bomb.png");
    {
        let f = std::io::BufWriter::new(std::fs::File::create(&bomb).unwrap());
        let mut enc = png::Encoder::new(f, 9000, 9000);
        enc.set_color(png::ColorType::Grayscale);
        enc.set_depth(png::BitDepth::Eight);
        enc.set_compression(png::Compression::Fast);
        let mut w = enc.write_header().unwrap();
        w.write_image_data(&vec![0u8; 9000 * 9000]).unwrap();
        w.finish().unwrap();
    }
    assert!(std::fs::metadata(&bomb).unwrap().len() < 1 << 20);
    let out = dir.path().join("bomb.ra");
    let (code, _, err) = no_panic(&[&"convert", &bomb, &out]);
    assert_eq!(code, 1);
    assert!(err.contains("--max-image-bytes"), "{err}");
    assert!(!out.exists());
    let (code, _, err) = no_panic(&[&"convert", &"--max-image-bytes", &"100000000", &bomb, &out]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        Header::decode(&std::fs::read(&out).unwrap()[..64])
            .unwrap()
            .dims,
        [9000, 9000]
    );
}

#[test]
fn a_killed_conversion_leaves_no_temporary_file() {
    use std::os::unix::process::ExitStatusExt;
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.ra");
    // 64 MiB of data: compressing it takes long enough to be killed half-way.
    let n = 8u64 << 20;
    let mut bytes = le_header(2, 8, &[n], 0, 8 * n);
    bytes.extend((0..n).flat_map(|i| (i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40).to_le_bytes()));
    std::fs::write(&input, &bytes).unwrap();
    let out = dir.path().join("out.ra");
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("ra"))
        .args(["compress", "-o"])
        .arg(&out)
        .arg(&input)
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(150));
    child.kill().unwrap();
    let status = child.wait().unwrap();
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    if status.signal() == Some(9) {
        assert_eq!(names, ["in.ra"], "killed at work: nothing but the input");
    } else {
        eprintln!("ra finished before it was killed ({status}): nothing to check");
        assert_eq!(names, ["in.ra", "out.ra"]);
    }
}

#[test]
fn a_structured_npy_whose_dtype_is_no_valid_schema_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    // numpy itself refuses duplicate field names; a hand-made file need not.
    let dict = "{'descr': [('a', '<f8'), ('a', '<f8')], 'fortran_order': False, 'shape': (1,), }";
    let mut header = dict.to_string();
    while !(10 + header.len() + 1).is_multiple_of(64) {
        header.push(' ');
    }
    header.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend((header.len() as u16).to_le_bytes());
    bytes.extend(header.as_bytes());
    bytes.extend([0u8; 16]);
    let npy = dir.path().join("dup.npy");
    std::fs::write(&npy, bytes).unwrap();
    let out = dir.path().join("dup.ra");
    let (code, _, err) = no_panic(&[&"convert", &npy, &out]);
    assert_eq!(code, 1);
    assert!(err.contains("two fields named 'a'"), "{err}");
    assert!(!out.exists());
}

/// Found by review: a void field of 2^64 - 1 bytes overflowed the offset arithmetic that names
/// padding (a panic in a debug build, nonsense offsets in a release one).
#[test]
fn a_structured_npy_with_a_huge_void_field_is_refused_without_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let dict = "{'descr': [('a', '<i4'), ('', '|V18446744073709551615'), ('b', '<f8')], \
                'fortran_order': False, 'shape': (1,), }";
    let mut header = dict.to_string();
    while !(10 + header.len() + 1).is_multiple_of(64) {
        header.push(' ');
    }
    header.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend((header.len() as u16).to_le_bytes());
    bytes.extend(header.as_bytes());
    bytes.extend([0u8; 12]);
    let npy = dir.path().join("huge.npy");
    std::fs::write(&npy, bytes).unwrap();
    let out = dir.path().join("huge.ra");
    let (code, _, err) = no_panic(&[&"convert", &npy, &out]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("huge.npy: ") && err.contains("18446744073709551615 bytes after field 'a'"),
        "{err}"
    );
    assert!(!out.exists());
}

/// A FIFO at `path`, through `mkfifo(1)` (coreutils, on every Linux these tests run on).
fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo").arg(path).status();
    assert!(
        status.as_ref().is_ok_and(std::process::ExitStatus::success),
        "mkfifo {} failed: {status:?}",
        path.display()
    );
}

/// A FIFO is read as an input wherever `-` is (it is copied first: tests/stdin.rs), but never
/// written as an output, nor taken by a command that needs a file it can seek in or rewrite:
/// those refuse it at once, never waiting for a writer or a reader (the timeout fails a hang).
#[test]
fn a_fifo_as_output_or_as_a_file_to_rewrite_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe.npy");
    mkfifo(&fifo);
    let input = dir.path().join("in.ra");
    rawarray_serde::RawArray::from_shape_vec(vec![4, 4], vec![1.5f32; 16])
        .unwrap()
        .write_file(&input)
        .unwrap();
    for cmd in [
        vec![&"convert" as &dyn AsRef<std::ffi::OsStr>, &input, &fifo],
        vec![&"slice", &input, &fifo, &":,:"],
        vec![&"compress", &input, &"-o", &fifo],
        vec![&"reshape", &input, &"16", &"-o", &fifo],
    ] {
        let (code, _, err) = ra_bounded(&cmd);
        assert!(!err.contains("panicked"), "{err}");
        assert_eq!(code, 1, "{err}");
        assert!(err.contains("pipe.npy") && err.contains("FIFO"), "{err}");
    }
    for cmd in [
        vec![&"compress" as &dyn AsRef<std::ffi::OsStr>, &fifo],
        vec![&"decompress", &fifo],
        vec![&"reshape", &fifo, &"16"],
        vec![&"recover", &fifo],
        vec![&"watch", &fifo],
    ] {
        let (code, _, err) = ra_bounded(&cmd);
        assert_eq!(code, 2, "{err}");
        assert!(
            err.contains("needs a seekable file, not a pipe") && err.contains("pipe.npy"),
            "{err}"
        );
    }
}
