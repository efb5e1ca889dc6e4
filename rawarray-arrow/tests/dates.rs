//! Dates and times (doc/format.md section 7): Arrow's `Timestamp` (with and without a time
//! zone), `Duration` and `Date32` columns become integer record fields with a logical marker,
//! and come back as the same Arrow types and values from the `.ra` file, from Parquet and from
//! Arrow IPC. The expected schema is written out by hand, as the spec words it.

use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use rawarray_arrow::{ConvertOptions, RaTable, RecordFileWriter};
use rawarray_serde::codec::stats::Value;
use rawarray_serde::codec::Codec;
use rawarray_serde::query::FileStats;
use rawarray_serde::{ArrayReader, WriteOptions};

#[path = "support/times.rs"]
mod times;

use times::{D0, T0_US};

/// The table of 1000 rows every test here writes.
fn table() -> (std::sync::Arc<Schema>, RecordBatch) {
    times::table(1000)
}

/// The record schema the spec gives these columns, by hand.
const SCHEMA_JSON: &str = r#"{"kind":"record","name":"","fields":[{"name":"step","offset":0,"layout":{"kind":"scalar","eltype":"uint","elbyte":4}},{"name":"t","offset":4,"layout":{"kind":"scalar","eltype":"int","elbyte":8,"logical":"timestamp[us, tz=Europe/Paris]"}},{"name":"tn","offset":12,"layout":{"kind":"scalar","eltype":"int","elbyte":8,"logical":"timestamp[ns]"}},{"name":"dt","offset":20,"layout":{"kind":"scalar","eltype":"int","elbyte":8,"logical":"duration[ms]"}},{"name":"d","offset":28,"layout":{"kind":"scalar","eltype":"int","elbyte":4,"logical":"date"}}]}"#;

fn all_batches(table: &RaTable) -> Vec<RecordBatch> {
    table.batches(256).map(Result::unwrap).collect()
}

/// `column` with its bytes as they are, as an array of `to` (a timestamp's zone, a duration as
/// its int64): what a reader that lost the Arrow type reads.
fn arrow_cast_same_bytes(column: &ArrayRef, to: &DataType) -> ArrayRef {
    let data = column
        .to_data()
        .into_builder()
        .data_type(to.clone())
        .build()
        .unwrap();
    arrow_array::make_array(data)
}

/// Asserts that `batches`, in order, hold the rows of `whole`: the same fields (types, time
/// zones) and values.
fn assert_rows(batches: &[RecordBatch], whole: &RecordBatch, what: &str) {
    let mut at = 0;
    for b in batches {
        assert_eq!(b.schema().fields(), whole.schema().fields(), "{what}");
        let want = whole.slice(at, b.num_rows());
        assert_eq!(b.columns(), want.columns(), "{what}: rows from {at}");
        at += b.num_rows();
    }
    assert_eq!(at, whole.num_rows(), "{what}");
}

#[test]
fn time_columns_are_marked_integers_and_come_back_as_their_arrow_types() {
    let dir = tempfile::tempdir().unwrap();
    let (schema, batch) = table();
    let ra = dir.path().join("times.ra");
    let mut w = RecordFileWriter::create(&ra, &schema, None).unwrap();
    w.write(&batch).unwrap();
    w.finish().unwrap();

    // The schema in the trailer is the spec's, by hand; the records are the integers.
    let reader = ArrayReader::open(&ra).unwrap();
    let stored = serde_json::to_string(reader.trailer().unwrap().schema.as_ref().unwrap()).unwrap();
    assert_eq!(stored, SCHEMA_JSON);
    assert_eq!(reader.header().elbyte, 32);
    let record_1 = [std::ops::Range { start: 1, end: 2 }];
    let (_, bytes) = reader.read_subset_bytes(&record_1).unwrap();
    let rec = |at: usize, n: usize| &bytes[at..at + n];
    assert_eq!(rec(0, 4), 1u32.to_le_bytes());
    assert_eq!(rec(4, 8), (T0_US + 1_000_000).to_le_bytes());
    assert_eq!(rec(12, 8), (-1_000_000_007i64).to_le_bytes());
    assert_eq!(rec(20, 8), (-4_750i64).to_le_bytes());
    assert_eq!(rec(28, 4), (D0 + 1).to_le_bytes());

    // Back as the same Arrow types (the zone too) and values.
    assert_rows(
        &all_batches(&RaTable::open(&ra).unwrap()),
        &batch,
        "the .ra file",
    );

    // Through Parquet and Arrow IPC, both ways.
    for ext in ["parquet", "arrow"] {
        let out = dir.path().join(format!("times.{ext}"));
        let again = dir.path().join(format!("times.{ext}.ra"));
        let o = ConvertOptions::new().batch_rows(300);
        if ext == "parquet" {
            rawarray_arrow::ra_to_parquet(&ra, &out, &o, |_, _| {}).unwrap();
            let file = std::fs::File::open(&out).unwrap();
            let pq = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
                .unwrap()
                .build()
                .unwrap();
            let read: Vec<RecordBatch> = pq.map(Result::unwrap).collect();
            assert_rows(&read, &batch, "Parquet");
            rawarray_arrow::parquet_to_ra(&out, &again, &o, |_, _| {}).unwrap();
        } else {
            rawarray_arrow::ra_to_ipc(&ra, &out, &o, |_, _| {}).unwrap();
            rawarray_arrow::ipc_to_ra(&out, &again, &o, |_, _| {}).unwrap();
        }
        assert_eq!(
            std::fs::read(&again).unwrap(),
            std::fs::read(&ra).unwrap(),
            "{ext}"
        );
    }
}

#[test]
fn a_parquet_file_written_elsewhere_converts_with_its_time_columns() {
    // A Parquet file as other writers make it: no embedded Arrow schema, so the columns are
    // read by their Parquet logical types alone. TIMESTAMP(us, adjusted to UTC) keeps the
    // instant but not the zone's name (Parquet has none: arrow-rs reads it as "UTC"),
    // TIMESTAMP(ns) and DATE come back as they were, and a duration, which Parquet has no
    // type for, is its INT64.
    let dir = tempfile::tempdir().unwrap();
    let (schema, batch) = table();
    let pq = dir.path().join("foreign.parquet");
    let mut w = parquet::arrow::ArrowWriter::try_new_with_options(
        std::fs::File::create(&pq).unwrap(),
        schema.clone(),
        parquet::arrow::arrow_writer::ArrowWriterOptions::new().with_skip_arrow_metadata(true),
    )
    .unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
    let ra = dir.path().join("foreign.ra");
    let o = ConvertOptions::new().storage(WriteOptions::new().codec(Codec::Zstd).statistics(true));
    rawarray_arrow::parquet_to_ra(&pq, &ra, &o, |_, _| {}).unwrap();
    let reader = ArrayReader::open(&ra).unwrap();
    let stored = serde_json::to_string(reader.trailer().unwrap().schema.as_ref().unwrap()).unwrap();
    let want = SCHEMA_JSON
        .replace("tz=Europe/Paris", "tz=UTC")
        .replace(r#","logical":"duration[ms]""#, "");
    assert_eq!(stored, want);
    let back = all_batches(&RaTable::open(&ra).unwrap());
    let whole = RecordBatch::try_new(
        back[0].schema(),
        batch
            .columns()
            .iter()
            .zip(back[0].schema().fields())
            .map(|(c, f)| arrow_cast_same_bytes(c, f.data_type()))
            .collect(),
    )
    .unwrap();
    assert_rows(&back, &whole, "from Parquet");
    // Statistics keep the integers' minimum and maximum (doc/chunked.md 5.4).
    let schema_of_file = reader.trailer().and_then(|t| t.schema.as_ref());
    let stats = FileStats::of(reader.section().chunk_map().unwrap(), schema_of_file).unwrap();
    let k = stats.names().iter().position(|n| n == "t").unwrap();
    assert_eq!(
        stats.whole(k).unwrap().min_max,
        Some((
            Value::Int(i128::from(T0_US)),
            Value::Int(i128::from(T0_US + 999_000_000))
        ))
    );
}

#[test]
fn temporal_types_without_a_marker_are_refused_by_column() {
    let dir = tempfile::tempdir().unwrap();
    let schema = Schema::new(vec![Field::new("day", DataType::Date64, false)]);
    let err = RecordFileWriter::create(dir.path().join("d.ra"), &schema, None)
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.starts_with("column 'day': type Date64 has no .ra form") && err.contains("date32"),
        "{err}"
    );
}
