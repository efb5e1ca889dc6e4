//! Record files as Arrow tables, Parquet and Arrow IPC: every scalar type, complex, bool,
//! fixed arrays, text in `u8` arrays, nested records and big-endian input; round trips that
//! give the same bytes back; columns refused by name.

use std::path::Path;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Float16Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type, UInt16Type,
    UInt32Type, UInt64Type, UInt8Type,
};
use arrow_array::{ArrayRef, Float64Array, Int64Array, RecordBatch, StringArray, UInt32Array};
use arrow_schema::{DataType, Field, Schema};
use rawarray_arrow::{ConvertOptions, RaTable, RecordFileWriter};
use rawarray_serde::{bf16, f16, Complex, Element, Flags, Header, RaRecord, RecordOptions};

#[derive(RaRecord, Clone, Debug, PartialEq)]
struct Inner {
    id: u16,
    w: [f64; 2],
}

/// Every scalar the format has a Rust type for, and the shapes around them.
#[derive(RaRecord, Clone, Debug, PartialEq)]
struct Everything {
    a_i8: i8,
    a_i16: i16,
    a_i32: i32,
    a_i64: i64,
    a_i128: i128,
    a_u8: u8,
    a_u16: u16,
    a_u32: u32,
    a_u64: u64,
    a_u128: u128,
    a_f16: f16,
    a_f32: f32,
    a_f64: f64,
    a_bf16: bf16,
    a_c32: Complex<f16>,
    a_c64: Complex<f32>,
    a_c128: Complex<f64>,
    ok: bool,
    pos: [f32; 3],
    grid: [[i16; 2]; 3],
    name: [u8; 8],
    inner: Inner,
}

fn everything(i: usize) -> Everything {
    let k = i as i64;
    let mut name = [0u8; 8];
    let text = format!("b{i}");
    name[..text.len()].copy_from_slice(text.as_bytes());
    Everything {
        a_i8: (k % 100 - 50) as i8,
        a_i16: (k * 300 - 7000) as i16,
        a_i32: (k * 100_000 - 3) as i32,
        a_i64: -k * 1_000_000_007,
        a_i128: i128::from(k) * -(1i128 << 100) + 5,
        a_u8: (i % 256) as u8,
        a_u16: (i * 257 % 65536) as u16,
        a_u32: (i as u32).wrapping_mul(2_654_435_761),
        a_u64: (i as u64) << 40 | 7,
        a_u128: (i as u128) << 90 | 1,
        a_f16: f16::from_f32(i as f32 * 0.25),
        a_f32: i as f32 * 1.5,
        a_f64: k as f64 * -0.125,
        a_bf16: bf16::from_f32(i as f32 * 2.0 - 3.0),
        a_c32: Complex::new(f16::from_f32(i as f32), f16::from_f32(-0.5)),
        a_c64: Complex::new(i as f32, -(i as f32)),
        a_c128: Complex::new(0.5 * k as f64, 2.0),
        ok: i.is_multiple_of(3),
        pos: [i as f32, 0.5, -(i as f32)],
        grid: [[1, i as i16], [2, -(i as i16)], [3, 4]],
        name,
        inner: Inner {
            id: (i * 3) as u16,
            w: [i as f64, -1.0],
        },
    }
}

fn write_everything(path: &Path, n: usize, opts: &RecordOptions) -> Vec<Everything> {
    let records: Vec<Everything> = (0..n).map(everything).collect();
    let mut w = opts.create::<Everything>(path).unwrap();
    w.append_slice(&records).unwrap();
    w.finish().unwrap();
    records
}

/// The columns hold the values written, each checked against the Rust value it came from.
fn check_batch(batch: &RecordBatch, records: &[Everything]) {
    let names: Vec<&str> = batch
        .schema_ref()
        .fields()
        .iter()
        .map(|f| f.name().as_str())
        .collect();
    assert_eq!(
        names,
        [
            "a_i8", "a_i16", "a_i32", "a_i64", "a_i128", "a_u8", "a_u16", "a_u32", "a_u64",
            "a_u128", "a_f16", "a_f32", "a_f64", "a_bf16", "a_c32", "a_c64", "a_c128", "ok", "pos",
            "grid", "name", "inner"
        ]
    );
    let col = |name: &str| batch.column_by_name(name).unwrap().clone();
    for (r, e) in records.iter().enumerate() {
        assert_eq!(col("a_i8").as_primitive::<Int8Type>().value(r), e.a_i8);
        assert_eq!(col("a_i16").as_primitive::<Int16Type>().value(r), e.a_i16);
        assert_eq!(col("a_i32").as_primitive::<Int32Type>().value(r), e.a_i32);
        assert_eq!(col("a_i64").as_primitive::<Int64Type>().value(r), e.a_i64);
        let i128_bytes = col("a_i128").as_fixed_size_binary().value(r).to_vec();
        assert_eq!(
            i128::from_le_bytes(i128_bytes.try_into().unwrap()),
            e.a_i128
        );
        assert_eq!(col("a_u8").as_primitive::<UInt8Type>().value(r), e.a_u8);
        assert_eq!(col("a_u16").as_primitive::<UInt16Type>().value(r), e.a_u16);
        assert_eq!(col("a_u32").as_primitive::<UInt32Type>().value(r), e.a_u32);
        assert_eq!(col("a_u64").as_primitive::<UInt64Type>().value(r), e.a_u64);
        let u128_bytes = col("a_u128").as_fixed_size_binary().value(r).to_vec();
        assert_eq!(
            u128::from_le_bytes(u128_bytes.try_into().unwrap()),
            e.a_u128
        );
        assert_eq!(col("a_f16").as_primitive::<Float16Type>().value(r), e.a_f16);
        assert_eq!(col("a_f32").as_primitive::<Float32Type>().value(r), e.a_f32);
        assert_eq!(col("a_f64").as_primitive::<Float64Type>().value(r), e.a_f64);
        assert_eq!(
            col("a_bf16").as_primitive::<Float32Type>().value(r),
            e.a_bf16.to_f32()
        );
        let c32 = col("a_c32");
        let c32 = c32.as_struct();
        assert_eq!(
            c32.column(0).as_primitive::<Float16Type>().value(r),
            e.a_c32.re
        );
        assert_eq!(
            c32.column(1).as_primitive::<Float16Type>().value(r),
            e.a_c32.im
        );
        let c64 = col("a_c64");
        assert_eq!(
            c64.as_struct()
                .column(1)
                .as_primitive::<Float32Type>()
                .value(r),
            e.a_c64.im
        );
        let c128 = col("a_c128");
        assert_eq!(
            c128.as_struct()
                .column(0)
                .as_primitive::<Float64Type>()
                .value(r),
            e.a_c128.re
        );
        assert_eq!(col("ok").as_boolean().value(r), e.ok);
        let pos = col("pos");
        let pos = pos.as_fixed_size_list().value(r);
        assert_eq!(pos.as_primitive::<Float32Type>().values(), &e.pos);
        let grid = col("grid");
        let row = grid.as_fixed_size_list().value(r);
        for (j, pair) in e.grid.iter().enumerate() {
            let inner = row.as_fixed_size_list().value(j);
            assert_eq!(inner.as_primitive::<Int16Type>().values(), pair);
        }
        assert_eq!(col("name").as_fixed_size_binary().value(r), &e.name);
        let inner = col("inner");
        let inner = inner.as_struct();
        assert_eq!(
            inner.column(0).as_primitive::<UInt16Type>().value(r),
            e.inner.id
        );
        let w = inner.column(1).as_fixed_size_list().value(r);
        assert_eq!(w.as_primitive::<Float64Type>().values(), &e.inner.w);
    }
}

#[test]
fn every_type_becomes_its_documented_column() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("all.ra");
    let records = write_everything(&path, 37, &RecordOptions::new());
    let table = RaTable::open(&path).unwrap();
    assert_eq!(table.rows(), 37);
    check_batch(&table.read_all().unwrap(), &records);
    // Streamed in batches of 10: the same rows, in order.
    let mut at = 0;
    for batch in table.batches(10) {
        let batch = batch.unwrap();
        check_batch(&batch, &records[at..at + batch.num_rows()]);
        at += batch.num_rows();
    }
    assert_eq!(at, 37);
    let schema = table.schema();
    let mark =
        |name: &str| schema.field_with_name(name).unwrap().metadata()["rawarray.eltype"].clone();
    assert_eq!(mark("a_i128"), "int128");
    assert_eq!(mark("a_bf16"), "bfloat16");
    assert_eq!(mark("a_c64"), "complex64");
    assert_eq!(
        schema.field_with_name("name").unwrap().data_type(),
        &DataType::FixedSizeBinary(8)
    );
}

/// A big-endian file of the same records: its bytes swapped field by field by hand (the
/// layout's scalars, complex numbers part by part) and its header flagged, its trailer kept.
fn big_endian_copy(le: &Path, be: &Path) {
    let bytes = std::fs::read(le).unwrap();
    let header = Header::decode(&bytes).unwrap();
    let start = header.encoded_len();
    let end = start + header.size as usize;
    let mut out = bytes.clone();
    let mut h = header.clone();
    h.flags = h.flags.with(Flags::BIG_ENDIAN, true);
    out[..start].copy_from_slice(&h.encode());
    let layout = Everything::layout();
    let size = layout.size() as usize;
    for rec in out[start..end].chunks_exact_mut(size) {
        swap_by_hand(&layout, rec);
    }
    assert_ne!(out[start..end], bytes[start..end]);
    std::fs::write(be, out).unwrap();
}

fn swap_by_hand(layout: &rawarray_serde::Layout, b: &mut [u8]) {
    use rawarray_serde::{ElType, Layout};
    match layout {
        Layout::Scalar { eltype, elbyte, .. } => {
            let w = if *eltype == ElType::Complex {
                elbyte / 2
            } else {
                *elbyte
            } as usize;
            for part in b[..*elbyte as usize].chunks_exact_mut(w) {
                part.reverse();
            }
        }
        Layout::Array { len, item } => {
            let s = item.size() as usize;
            for i in 0..*len as usize {
                swap_by_hand(item, &mut b[i * s..]);
            }
        }
        Layout::Record { fields, .. } => {
            for f in fields {
                swap_by_hand(&f.layout, &mut b[f.offset as usize..]);
            }
        }
    }
}

#[test]
fn big_endian_records_give_the_same_table() {
    let dir = tempfile::tempdir().unwrap();
    let (le, be) = (dir.path().join("le.ra"), dir.path().join("be.ra"));
    let records = write_everything(&le, 21, &RecordOptions::new());
    big_endian_copy(&le, &be);
    let table = RaTable::open(&be).unwrap();
    assert!(table.header().is_big_endian());
    check_batch(&table.read_all().unwrap(), &records);
    assert_eq!(
        table.read_all().unwrap(),
        RaTable::open(&le).unwrap().read_all().unwrap()
    );
    // And through Parquet, back to the little-endian file's bytes.
    let (pq, back) = (dir.path().join("be.parquet"), dir.path().join("back.ra"));
    rawarray_arrow::ra_to_parquet(&be, &pq, &ConvertOptions::new(), |_, _| {}).unwrap();
    rawarray_arrow::parquet_to_ra(&pq, &back, &ConvertOptions::new(), |_, _| {}).unwrap();
    assert_eq!(std::fs::read(&back).unwrap(), std::fs::read(&le).unwrap());
}

/// `batches_of` gathers only the columns asked for, in their order: each batch is the full
/// batch's projection, for a mapped little-endian file and a swapped big-endian one alike.
#[test]
fn batches_of_some_columns_are_the_projection_of_the_full_batches() {
    let dir = tempfile::tempdir().unwrap();
    let (le, be) = (dir.path().join("le.ra"), dir.path().join("be.ra"));
    write_everything(&le, 23, &RecordOptions::new());
    big_endian_copy(&le, &be);
    for path in [&le, &be] {
        let t = RaTable::open(path).unwrap();
        let wanted = [17, 2, 21, 2];
        let full: Vec<RecordBatch> = t.batches(5).map(Result::unwrap).collect();
        let some: Vec<RecordBatch> = t
            .batches_of(&wanted, 5)
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(some.len(), full.len());
        for (s, f) in some.iter().zip(&full) {
            assert_eq!(s, &f.project(&wanted).unwrap());
        }
        // No column at all still counts the rows (`count(*)`).
        let rows: Vec<usize> = t
            .batches_of(&[], 5)
            .unwrap()
            .map(|b| b.unwrap().num_rows())
            .collect();
        assert_eq!(rows, [5, 5, 5, 5, 3]);
        let err = t.batches_of(&[22], 5).err().unwrap().to_string();
        assert!(err.contains("22") && err.contains("of 22 columns"), "{err}");
    }
}

#[test]
fn parquet_round_trip_is_byte_identical() {
    let dir = tempfile::tempdir().unwrap();
    for (name, opts, batch) in [
        (
            "plain",
            RecordOptions::new().params(serde_json::json!({"dt": 0.5, "run": "a"})),
            7,
        ),
        // Record dims (bodies per step): they come back from the dims in the metadata, also
        // when the batches cut steps apart, from Parquet and from Arrow IPC alike.
        ("bodies", RecordOptions::new().record_dims([4]), 10),
    ] {
        let ra = dir.path().join(format!("{name}.ra"));
        write_everything(&ra, 40, &opts);
        for (ext, zstd) in [("parquet", false), ("zstd.parquet", true), ("arrow", false)] {
            let out = dir.path().join(format!("{name}.{ext}"));
            let back = dir.path().join(format!("{name}.{ext}.ra"));
            let mut o = ConvertOptions::new().batch_rows(batch);
            if zstd {
                o = o.compression(rawarray_arrow::ParquetCompression::Zstd(3));
            }
            if ext == "arrow" {
                // The record dims come back from Arrow IPC too (its row count is read from the
                // footer and the batches' metadata before the records are written).
                rawarray_arrow::ra_to_ipc(&ra, &out, &o, |_, _| {}).unwrap();
                rawarray_arrow::ipc_to_ra(&out, &back, &o, |_, _| {}).unwrap();
            } else {
                rawarray_arrow::ra_to_parquet(&ra, &out, &o, |_, _| {}).unwrap();
                rawarray_arrow::parquet_to_ra(&out, &back, &o, |_, _| {}).unwrap();
            }
            assert_eq!(
                std::fs::read(&back).unwrap(),
                std::fs::read(&ra).unwrap(),
                "{name}.{ext}"
            );
        }
    }
}

#[test]
fn parquet_keeps_params_as_key_value_metadata() {
    let dir = tempfile::tempdir().unwrap();
    let (ra, pq) = (dir.path().join("p.ra"), dir.path().join("p.parquet"));
    write_everything(
        &ra,
        3,
        &RecordOptions::new().params(serde_json::json!({"dt": 0.25})),
    );
    rawarray_arrow::ra_to_parquet(&ra, &pq, &ConvertOptions::new(), |_, _| {}).unwrap();
    let reader =
        parquet::file::reader::SerializedFileReader::new(std::fs::File::open(&pq).unwrap())
            .unwrap();
    use parquet::file::reader::FileReader;
    let kv = reader
        .metadata()
        .file_metadata()
        .key_value_metadata()
        .unwrap();
    let params = kv.iter().find(|kv| kv.key == "rawarray.params").unwrap();
    assert_eq!(params.value.as_deref(), Some(r#"{"dt":0.25}"#));
}

fn strings_table() -> (Arc<Schema>, RecordBatch) {
    let schema = Arc::new(Schema::new(vec![
        Field::new("step", DataType::UInt32, false),
        Field::new("label", DataType::Utf8, false),
    ]));
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(UInt32Array::from(vec![1, 2])),
            Arc::new(StringArray::from(vec!["a", "b"])),
        ],
    )
    .unwrap();
    (schema, batch)
}

#[test]
fn columns_without_a_fixed_width_are_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let (schema, batch) = strings_table();
    let pq = dir.path().join("s.parquet");
    let mut w = parquet::arrow::ArrowWriter::try_new(
        std::fs::File::create(&pq).unwrap(),
        schema.clone(),
        None,
    )
    .unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
    let out = dir.path().join("s.ra");
    std::fs::write(&out, b"kept").unwrap();
    let err =
        rawarray_arrow::parquet_to_ra(&pq, &out, &ConvertOptions::new(), |_, _| {}).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("column 'label': type Utf8 has no fixed width"),
        "{err}"
    );
    // Nothing was written over the file that was there, and no temporary file is left.
    assert_eq!(std::fs::read(&out).unwrap(), b"kept");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);

    // A nested column is named by its path.
    let nested = Schema::new(vec![Field::new(
        "body",
        DataType::Struct(
            vec![Field::new(
                "tags",
                DataType::new_list(DataType::UInt8, false),
                false,
            )]
            .into(),
        ),
        false,
    )]);
    let err = RecordFileWriter::create(dir.path().join("n.ra"), &nested, None)
        .err()
        .unwrap();
    assert!(
        err.to_string()
            .starts_with("column 'body.tags': type List("),
        "{err}"
    );
}

#[test]
fn missing_values_are_refused_by_column() {
    let dir = tempfile::tempdir().unwrap();
    let schema = Arc::new(Schema::new(vec![Field::new("x", DataType::UInt32, true)]));
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![Arc::new(UInt32Array::from(vec![Some(1), None]))],
    )
    .unwrap();
    let mut w = RecordFileWriter::create(dir.path().join("n.ra"), &schema, None).unwrap();
    let err = w.write(&batch).unwrap_err();
    assert_eq!(
        err.to_string(),
        "column 'x': 1 of its values are missing (null): a record has no place for a missing value"
    );
}

#[test]
fn a_plain_little_endian_array_is_the_map_not_a_copy() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.ra");
    let values: Vec<f64> = (0..1000).map(f64::from).collect();
    rawarray_serde::RawArray::from_vec(values.clone())
        .write_file(&path)
        .unwrap();
    let table = RaTable::open(&path).unwrap();
    let batch = table.read_all().unwrap();
    let col = batch.column(0).as_primitive::<Float64Type>();
    assert_eq!(col.values(), &values[..]);
    // The buffer is the file's map: a second read hands out the same memory (a copy would be
    // a new allocation), 8 bytes after the first 8-aligned header word of the page.
    let again = table.read_all().unwrap();
    let again = again.column(0).as_primitive::<Float64Type>();
    assert_eq!(again.values().as_ptr(), col.values().as_ptr());
    assert_eq!(col.values().as_ptr() as usize % 4096, 56);
    // A batch in the middle is a slice of the same map.
    let third = table.batches(100).nth(2).unwrap().unwrap();
    let third = third.column(0).as_primitive::<Float64Type>();
    assert_eq!(third.values().as_ptr(), col.values()[200..].as_ptr());

    // A 2-D plain array: one row per element, in file order, its dims in the metadata.
    let m =
        rawarray_serde::RawArray::from_shape_vec(vec![3, 2], vec![1u16, 2, 3, 4, 5, 6]).unwrap();
    let mpath = dir.path().join("m.ra");
    m.write_file(&mpath).unwrap();
    let t = RaTable::open(&mpath).unwrap();
    assert_eq!(t.schema().metadata()["rawarray.dims"], "[3,2]");
    let b = t.read_all().unwrap();
    assert_eq!(
        b.column(0).as_primitive::<UInt16Type>().values(),
        &[1, 2, 3, 4, 5, 6]
    );
}

#[test]
fn compressed_and_chunked_files_stream_in_whole_steps() {
    use rawarray_serde::{Codec, RawArray, WriteOptions};
    let dir = tempfile::tempdir().unwrap();
    let values: Vec<u32> = (0..4 * 50).collect();
    let a = RawArray::from_shape_vec(vec![4, 50], values.clone()).unwrap();
    for (name, opts) in [
        ("lz4", WriteOptions::new().compress(true)),
        (
            "zstd",
            WriteOptions::new().codec(Codec::Zstd).chunks(vec![4, 8]),
        ),
        ("be", WriteOptions::new().big_endian(true)),
    ] {
        let path = dir.path().join(format!("{name}.ra"));
        a.write_file_with(&path, &opts).unwrap();
        let t = RaTable::open(&path).unwrap();
        let mut got = Vec::new();
        for b in t.batches(10) {
            let b = b.unwrap();
            got.extend_from_slice(b.column(0).as_primitive::<UInt32Type>().values());
        }
        assert_eq!(got, values, "{name}");
    }
}

#[test]
fn a_file_of_records_without_a_schema_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("u.ra");
    let h = Header::new(rawarray_serde::ElType::User, 8, vec![2]).unwrap();
    let mut bytes = h.encode();
    bytes.extend_from_slice(&[0; 16]);
    std::fs::write(&path, bytes).unwrap();
    let err = RaTable::open(&path).err().unwrap();
    assert!(
        err.to_string().contains("without a valid record schema"),
        "{err}"
    );
}

#[test]
fn a_bad_input_is_an_error_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("short.ra");
    let h = Header::new(rawarray_serde::ElType::Float, 8, vec![100]).unwrap();
    let mut bytes = h.encode();
    bytes.extend_from_slice(&[0; 16]);
    std::fs::write(&path, bytes).unwrap();
    let err = RaTable::open(&path).err().unwrap();
    assert!(
        err.to_string().starts_with(&path.display().to_string()),
        "{err}"
    );
}

#[test]
fn ragged_rows_become_large_lists_and_text_large_strings() {
    use arrow_array::Array;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.ra");
    let rows: Vec<Vec<f64>> = vec![vec![1.0, 2.0], vec![], vec![3.5], vec![4.0, 5.0, 6.0]];
    rawarray_serde::Ragged::from_rows(rows.iter())
        .write_file(&path)
        .unwrap();
    let table = RaTable::open(&path).unwrap();
    assert_eq!(table.rows(), 4);
    let mut got: Vec<Vec<f64>> = Vec::new();
    for batch in table.batches(3) {
        let batch = batch.unwrap();
        let list = batch.column(0).as_list::<i64>();
        for r in 0..list.len() {
            got.push(
                list.value(r)
                    .as_primitive::<Float64Type>()
                    .values()
                    .to_vec(),
            );
        }
    }
    assert_eq!(got, rows);
    // Through Parquet, as every Parquet reader sees it: a list column.
    let pq = dir.path().join("r.parquet");
    rawarray_arrow::ra_to_parquet(&path, &pq, &ConvertOptions::new(), |_, _| {}).unwrap();
    let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(
        std::fs::File::open(&pq).unwrap(),
    )
    .unwrap()
    .build()
    .unwrap();
    let back: Vec<RecordBatch> = reader.collect::<Result<_, _>>().unwrap();
    let list = back[0].column(0).as_list::<i64>();
    assert_eq!(
        list.value(3).as_primitive::<Float64Type>().values(),
        &[4.0, 5.0, 6.0]
    );
    // And back to .ra: a list has no fixed width, refused by name.
    let err = rawarray_arrow::parquet_to_ra(
        &pq,
        &dir.path().join("x.ra"),
        &ConvertOptions::new(),
        |_, _| {},
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("column 'values': type LargeList("),
        "{err}"
    );

    // Rows with no values at all: an empty values buffer, still aligned for Arrow's i32.
    let empty = dir.path().join("e.ra");
    let rows: Vec<Vec<i32>> = vec![vec![], vec![]];
    rawarray_serde::Ragged::from_rows(rows.iter())
        .write_file(&empty)
        .unwrap();
    let batch = RaTable::open(&empty).unwrap().read_all().unwrap();
    let list = batch.column(0).as_list::<i64>();
    assert_eq!((list.len(), list.value(1).len()), (2, 0));
    rawarray_arrow::ra_to_parquet(&empty, &pq, &ConvertOptions::new(), |_, _| {}).unwrap();

    let text = dir.path().join("t.ra");
    rawarray_serde::Ragged::from_strs(["alpha", "", "γ"])
        .write_file(&text)
        .unwrap();
    let batch = RaTable::open(&text).unwrap().read_all().unwrap();
    let s = batch.column(0).as_string::<i64>();
    assert_eq!((s.value(0), s.value(1), s.value(2)), ("alpha", "", "γ"));
}

/// An Arrow IPC file whose rows are no longer whole steps of the record dims in its metadata
/// (rows dropped after the conversion) comes back as records of one dim, as Parquet does.
#[test]
fn ipc_rows_that_are_not_whole_steps_come_back_as_one_dim() {
    let dir = tempfile::tempdir().unwrap();
    let ra = dir.path().join("bodies.ra");
    write_everything(&ra, 8, &RecordOptions::new().record_dims([4]));
    let whole = dir.path().join("whole.arrow");
    rawarray_arrow::ra_to_ipc(&ra, &whole, &ConvertOptions::new(), |_, _| {}).unwrap();
    let reader =
        arrow_ipc::reader::FileReader::try_new(std::fs::File::open(&whole).unwrap(), None).unwrap();
    let schema = reader.schema();
    let batch = reader.into_iter().next().unwrap().unwrap();
    let cut = dir.path().join("cut.arrow");
    {
        let mut w =
            arrow_ipc::writer::FileWriter::try_new(std::fs::File::create(&cut).unwrap(), &schema)
                .unwrap();
        w.write(&batch.slice(0, 3)).unwrap();
        w.write(&batch.slice(3, 2)).unwrap();
        w.finish().unwrap();
    }
    let back = dir.path().join("back.ra");
    rawarray_arrow::ipc_to_ra(&cut, &back, &ConvertOptions::new(), |_, _| {}).unwrap();
    let h = Header::read_from_any(&mut std::fs::File::open(&back).unwrap()).unwrap();
    assert_eq!(h.dims, [5]);
    // Whole steps again (8 rows in two batches): the record dims are back.
    rawarray_arrow::ipc_to_ra(&whole, &back, &ConvertOptions::new(), |_, _| {}).unwrap();
    let h = Header::read_from_any(&mut std::fs::File::open(&back).unwrap()).unwrap();
    assert_eq!(h.dims, [4, 2]);
}

/// Two record types of the same width (16 bytes) whose fields differ: names swapped with
/// their types (`Reading`'s `t` is an i64, `Swapped`'s a f64), so that every column of a
/// batch of one is as wide as the other's field at its place.
#[derive(RaRecord, Clone, Debug, PartialEq)]
struct Reading {
    t: i64,
    v: f64,
}

#[derive(RaRecord, Clone, Debug, PartialEq)]
struct Swapped {
    v: f64,
    t: i64,
}

/// Same names, other types: `t` and `v` at the same offsets as `Reading`'s, each of the other
/// type of the same width.
#[derive(RaRecord, Clone, Debug, PartialEq)]
struct Retyped {
    t: f64,
    v: i64,
}

fn batch_of(layout: &rawarray_serde::Layout, first: ArrayRef, second: ArrayRef) -> RecordBatch {
    let schema = Arc::new(rawarray_arrow::arrow_schema(layout).unwrap());
    RecordBatch::try_new(schema, vec![first, second]).unwrap()
}

#[test]
fn a_batch_of_another_record_type_of_the_same_width_is_refused() {
    assert_eq!(Reading::layout().size(), Swapped::layout().size());
    assert_eq!(Reading::layout().size(), Retyped::layout().size());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.ra");
    let schema = rawarray_arrow::arrow_schema(&Reading::layout()).unwrap();
    let mut w = RecordFileWriter::create(&path, &schema, None).unwrap();
    let ours = batch_of(
        &Reading::layout(),
        Arc::new(Int64Array::from(vec![7])),
        Arc::new(Float64Array::from(vec![0.5])),
    );
    w.write(&ours).unwrap();

    // Fields in another order: refused at field 0, by name.
    let swapped = batch_of(
        &Swapped::layout(),
        Arc::new(Float64Array::from(vec![1.5])),
        Arc::new(Int64Array::from(vec![8])),
    );
    let err = w.write(&swapped).unwrap_err().to_string();
    assert!(
        err.starts_with("a batch whose columns are not the table's: at field 0 the batch has 'v'")
            && err.contains("the records have 't'"),
        "{err}"
    );
    // The same names, each of another type of the same width: refused naming the field.
    let retyped = batch_of(
        &Retyped::layout(),
        Arc::new(Float64Array::from(vec![2.5])),
        Arc::new(Int64Array::from(vec![9])),
    );
    let err = w.write(&retyped).unwrap_err().to_string();
    assert!(
        err.contains("at field 't' the batch has float64, the records have int64"),
        "{err}"
    );
    // Nothing of the refused batches was written: the file holds the one record of `ours`.
    assert_eq!(w.finish().unwrap(), 1);
    let back = rawarray_serde::RawArray::<Reading>::read_file(&path).unwrap();
    assert_eq!(back.as_slice(), &[Reading { t: 7, v: 0.5 }]);
}

/// A batch whose schema lost the table's metadata (a projection, a batch built by hand) is
/// still the table's when its columns are: compared as columns, not as recorded layouts (here
/// the recorded layout names its record `Reading`, which bare columns cannot say).
#[test]
fn a_batch_without_the_tables_metadata_is_still_the_tables() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.ra");
    let recorded = rawarray_arrow::arrow_schema(&Reading::layout())
        .unwrap()
        .with_metadata(
            [(
                rawarray_arrow::schema::SCHEMA_KEY.to_string(),
                serde_json::to_string(&Reading::layout()).unwrap(),
            )]
            .into(),
        );
    let mut w = RecordFileWriter::create(&path, &recorded, None).unwrap();
    let batch = batch_of(
        &Reading::layout(),
        Arc::new(Int64Array::from(vec![1, 2])),
        Arc::new(Float64Array::from(vec![0.25, 0.75])),
    );
    assert!(batch.schema().metadata().is_empty());
    w.write(&batch).unwrap();
    assert_eq!(w.finish().unwrap(), 2);
    // The file keeps the recorded layout, name and all, and the two records.
    let r = rawarray_serde::ArrayReader::open(&path).unwrap();
    assert_eq!(
        r.trailer().unwrap().schema.as_ref(),
        Some(&Reading::layout())
    );
    let back = rawarray_serde::RawArray::<Reading>::read_file(&path).unwrap();
    assert_eq!(
        back.as_slice(),
        &[Reading { t: 1, v: 0.25 }, Reading { t: 2, v: 0.75 }]
    );
}
