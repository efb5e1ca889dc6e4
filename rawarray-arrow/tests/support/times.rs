//! The table of dates and times that the Arrow tests (`rawarray-arrow/tests/dates.rs`) and the
//! `ra convert` test (`rawarray-cli/tests/tables.rs`) both write: one builder, included by
//! path (`#[path = ...] mod times;`), so that the two crates test one table.

// Each test crate that includes this uses its own part of it.
#![allow(dead_code)]

use std::sync::Arc;

use arrow_array::{
    ArrayRef, Date32Array, DurationMillisecondArray, RecordBatch, TimestampMicrosecondArray,
    TimestampNanosecondArray, UInt32Array,
};
use arrow_schema::{DataType, Field, Schema, TimeUnit};

/// 2020-01-01T12:30:00.250Z in microseconds, and other instants around it.
pub const T0_US: i64 = 1_577_881_800_250_000;

/// 2018-08-19 in days since 1970-01-01.
pub const D0: i32 = 17_762;

/// `n` rows of a step, a zoned timestamp, a timestamp, a duration and a date: row `i` holds
/// `i`, `T0_US` + `i` seconds (Europe/Paris), -1,000,000,007 x `i` nanoseconds (before 1970:
/// negative counts), 250 x `i` - 5,000 milliseconds, and `D0` + `i` days.
pub fn table(n: u32) -> (Arc<Schema>, RecordBatch) {
    let schema = Arc::new(Schema::new(vec![
        Field::new("step", DataType::UInt32, false),
        Field::new(
            "t",
            DataType::Timestamp(TimeUnit::Microsecond, Some("Europe/Paris".into())),
            false,
        ),
        Field::new("tn", DataType::Timestamp(TimeUnit::Nanosecond, None), false),
        Field::new("dt", DataType::Duration(TimeUnit::Millisecond), false),
        Field::new("d", DataType::Date32, false),
    ]));
    let columns: Vec<ArrayRef> = vec![
        Arc::new(UInt32Array::from_iter_values(0..n)),
        Arc::new(
            TimestampMicrosecondArray::from_iter_values(
                (0..n).map(|i| T0_US + i64::from(i) * 1_000_000),
            )
            .with_timezone("Europe/Paris"),
        ),
        Arc::new(TimestampNanosecondArray::from_iter_values(
            (0..n).map(|i| -1_000_000_007 * i64::from(i)),
        )),
        Arc::new(DurationMillisecondArray::from_iter_values(
            (0..n).map(|i| i64::from(i) * 250 - 5_000),
        )),
        Arc::new(Date32Array::from_iter_values(
            (0..n).map(|i| D0 + i32::try_from(i).unwrap()),
        )),
    ];
    let batch = RecordBatch::try_new(schema.clone(), columns).unwrap();
    (schema, batch)
}
