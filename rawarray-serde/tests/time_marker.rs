//! The date and time markers (doc/format.md section 7): `timestamp[UNIT]`,
//! `timestamp[UNIT, tz=ZONE]`, `duration[UNIT]` and `date`, checked against the spec's strings
//! written by hand: what a trailer may say, what it may not (each refusal naming what is
//! wrong), the `numpy_descr` readers accept, and the dtypes numpy names.

use rawarray_serde::time::TimeUnit;
use rawarray_serde::{ElType, Layout, Logical, Trailer};

fn trailer_json(schema: &str, numpy_descr: &str) -> String {
    format!(r#"{{"version":1,"params":null,"schema":{schema},"numpy_descr":{numpy_descr}}}"#)
}

#[test]
fn every_marker_reads_and_writes_as_the_spec_spells_it() {
    let cases = [
        (
            r#""timestamp[ns]""#,
            8,
            Logical::Timestamp {
                unit: TimeUnit::Nanosecond,
                tz: None,
            },
            "<M8[ns]",
        ),
        (
            r#""timestamp[ms, tz=+05:30]""#,
            8,
            Logical::Timestamp {
                unit: TimeUnit::Millisecond,
                tz: Some("+05:30".into()),
            },
            "<M8[ms]",
        ),
        (
            r#""duration[s]""#,
            8,
            Logical::Duration {
                unit: TimeUnit::Second,
            },
            "<m8[s]",
        ),
        (r#""date""#, 4, Logical::Date, "<i4"),
    ];
    for (logical_json, elbyte, logical, numpy_dtype) in cases {
        let schema = format!(
            r#"{{"kind":"scalar","eltype":"int","elbyte":{elbyte},"logical":{logical_json}}}"#
        );
        let stored = format!(r#""<i{elbyte}""#);
        let t = Trailer::from_json(trailer_json(&schema, &stored).as_bytes()).unwrap();
        let want = Layout::Scalar {
            eltype: ElType::Int,
            elbyte,
            logical: Some(logical.clone()),
        };
        assert_eq!(t.schema.as_ref(), Some(&want), "{schema}");
        // Written back exactly as read: the schema, and the stored numbers' numpy_descr.
        let written = String::from_utf8(
            Trailer::new(())
                .unwrap()
                .with_schema(want.clone())
                .to_json(),
        )
        .unwrap();
        assert!(
            written.contains(&format!(r#""schema":{schema}"#)),
            "{written}"
        );
        assert!(
            written.contains(&format!(r#""numpy_descr":{stored}"#)),
            "{written}"
        );
        // numpy readers of this package use the logical dtype, and a trailer saying it is
        // accepted too (as "|b1" for bool).
        assert_eq!(want.numpy_descr_json(), serde_json::json!(numpy_dtype));
        let logical_descr = serde_json::to_string(numpy_dtype).unwrap();
        assert!(Trailer::from_json(trailer_json(&schema, &logical_descr).as_bytes()).is_ok());
    }
}

#[test]
fn a_marker_on_the_wrong_number_or_with_a_bad_unit_or_zone_is_refused_naming_it() {
    let cases = [
        // (schema, what the error must say)
        (
            r#"{"kind":"scalar","eltype":"int","elbyte":4,"logical":"timestamp[ns]"}"#,
            "an int of 8 bytes",
        ),
        (
            r#"{"kind":"scalar","eltype":"uint","elbyte":8,"logical":"duration[ns]"}"#,
            "an int of 8 bytes",
        ),
        (
            r#"{"kind":"scalar","eltype":"int","elbyte":8,"logical":"date"}"#,
            "an int of 4 bytes",
        ),
        (
            r#"{"kind":"scalar","eltype":"int","elbyte":8,"logical":"timestamp[D]"}"#,
            "time unit \"D\" is not one of s, ms, us, ns",
        ),
        (
            r#"{"kind":"scalar","eltype":"int","elbyte":8,"logical":"timestamp"}"#,
            "expected [UNIT]",
        ),
        (
            r#"{"kind":"scalar","eltype":"int","elbyte":8,"logical":"timestamp[ns, tz=Mars Base]"}"#,
            "not an IANA name",
        ),
        (
            r#"{"kind":"scalar","eltype":"int","elbyte":8,"logical":"timestamp[ns,tz=UTC]"}"#,
            "\", tz=ZONE\" (a comma, one space)",
        ),
        (
            r#"{"kind":"scalar","eltype":"int","elbyte":8,"logical":"duration[s, tz=UTC]"}"#,
            "a duration has no time zone",
        ),
        (
            r#"{"kind":"scalar","eltype":"int","elbyte":8,"logical":"datetime"}"#,
            "is not one of bool, text, timestamp[UNIT], duration[UNIT], date",
        ),
    ];
    for (schema, says) in cases {
        let err = Trailer::from_json(trailer_json(schema, "null").as_bytes())
            .unwrap_err()
            .to_string();
        assert!(err.contains(says), "{schema}: {err}");
    }
    // In a record, the field is named.
    let record = r#"{"kind":"record","name":"","fields":[{"name":"when","offset":0,"layout":{"kind":"scalar","eltype":"int","elbyte":4,"logical":"timestamp[s]"}}]}"#;
    let err = Trailer::from_json(trailer_json(record, "null").as_bytes())
        .unwrap_err()
        .to_string();
    assert!(err.contains("when"), "{err}");
    // The stored numbers' dtype is "<i8", the logical one "<M8[ns]"; another unit is damage.
    let ts = r#"{"kind":"scalar","eltype":"int","elbyte":8,"logical":"timestamp[ns]"}"#;
    assert!(Trailer::from_json(trailer_json(ts, r#""<M8[us]""#).as_bytes()).is_err());
}

#[test]
fn numpy_time_dtypes_map_to_markers_and_other_units_are_refused() {
    let l = Layout::from_numpy_descr_json(&serde_json::json!([["t", "<M8[us]"], ["d", "<m8[ns]"]]))
        .unwrap();
    let Layout::Record { fields, .. } = &l else {
        panic!("{l:?}")
    };
    assert_eq!(
        fields[0].layout,
        Layout::Scalar {
            eltype: ElType::Int,
            elbyte: 8,
            logical: Some(Logical::Timestamp {
                unit: TimeUnit::Microsecond,
                tz: None
            })
        }
    );
    assert_eq!((fields[1].offset, l.size()), (8, 16));
    for bad in ["<M8[D]", "<M8", "<m8[ps]"] {
        assert!(Logical::of_numpy_dtype(bad).unwrap().is_err(), "{bad}");
        assert!(
            Layout::from_numpy_descr_json(&serde_json::json!(bad)).is_err(),
            "{bad}"
        );
    }
    // A big-endian dtype marks the same values (whoever copies them swaps them), but a
    // layout holds little-endian scalars: refused there, naming the byte order.
    assert_eq!(
        Logical::of_numpy_dtype(">M8[ns]"),
        Some(Ok(Logical::Timestamp {
            unit: TimeUnit::Nanosecond,
            tz: None
        }))
    );
    assert_eq!(
        Logical::of_numpy_dtype(">m8[s]"),
        Some(Ok(Logical::Duration {
            unit: TimeUnit::Second
        }))
    );
    let err = Layout::from_numpy_descr_json(&serde_json::json!(">M8[ns]")).unwrap_err();
    assert!(err.to_string().contains("big-endian"), "{err}");
}
