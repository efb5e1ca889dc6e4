//! A record file is read as a Rust type only if its schema describes that type's fields
//! (`Layout::check_against`, the one check every reader and tool makes): renamed or reordered
//! fields of the same size are refused, naming the field; the record's own name may differ
//! (numpy writes none) unless the check is strict; `SchemaCheck::Off` reinterprets the bytes.

use rawarray_serde::{
    DynArray, Element, ErrorKind, Layout, RaRecord, RawArray, ReadMode, RecordOptions,
    RecordReadOptions, RecordReader, SchemaCheck, Trailer,
};
use std::path::Path;

#[derive(RaRecord, Clone, Debug, PartialEq)]
struct Particle {
    t: f64,
    x: f32,
    y: f32,
}

/// Same size, fields renamed.
#[derive(RaRecord, Clone, Debug, PartialEq)]
struct Renamed {
    time: f64,
    x: f32,
    y: f32,
}

/// Same size, the last two fields swapped.
#[derive(RaRecord, Clone, Debug, PartialEq)]
struct Swapped {
    t: f64,
    y: f32,
    x: f32,
}

/// Same fields, another record name.
#[derive(RaRecord, Clone, Debug, PartialEq)]
struct Body {
    t: f64,
    x: f32,
    y: f32,
}

fn particles() -> Vec<Particle> {
    (0..5)
        .map(|i| Particle {
            t: f64::from(i) * 0.5,
            x: i as f32,
            y: -(i as f32),
        })
        .collect()
}

fn write_particles(path: &Path) {
    let mut w = RecordOptions::new().create::<Particle>(path).unwrap();
    w.append_slice(&particles()).unwrap();
    w.finish().unwrap();
}

/// `path` with its schema's record name cleared, as a file written from numpy has it.
fn unnamed(path: &Path) {
    let mut d = DynArray::read_file(path).unwrap();
    let t = d.trailer().unwrap().clone();
    let Some(Layout::Record { fields, .. }) = t.schema.clone() else {
        panic!("a record schema")
    };
    d.set_trailer(&t.with_schema(Layout::Record {
        name: String::new(),
        fields,
    }));
    d.write_file(path).unwrap();
}

fn mismatch_at(e: &rawarray_serde::Error) -> String {
    match e.kind() {
        ErrorKind::SchemaMismatch { at, .. } => at.clone(),
        other => panic!("not a schema mismatch: {other:?} ({e})"),
    }
}

#[test]
fn renamed_and_reordered_fields_are_refused_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.ra");
    write_particles(&path);
    for mode in [ReadMode::Mapped, ReadMode::Positioned] {
        let e = RecordReader::<Renamed>::open_with(&path, mode).unwrap_err();
        assert_eq!(mismatch_at(&e), "field 0", "{e}");
        let msg = e.to_string();
        assert!(
            msg.contains("'t' at offset 0") && msg.contains("'time' at offset 0"),
            "{msg}"
        );
        let e = RecordReader::<Swapped>::open_with(&path, mode).unwrap_err();
        assert_eq!(mismatch_at(&e), "field 1", "{e}");
        assert!(e.to_string().contains("'x' at offset 8"), "{e}");
    }
    // A field of another type at the same place and size.
    #[derive(RaRecord, Clone, Debug, PartialEq)]
    struct Ints {
        t: u64,
        x: f32,
        y: f32,
    }
    let e = RecordReader::<Ints>::open(&path).unwrap_err();
    assert_eq!(mismatch_at(&e), "field 't'", "{e}");
    assert!(e.to_string().contains("float64"), "{e}");
    // Appending with the wrong type is refused the same way.
    let e = RecordOptions::new().open::<Swapped>(&path).err().unwrap();
    assert_eq!(mismatch_at(&e), "field 1", "{e}");
}

#[test]
fn the_check_can_be_turned_off_to_reinterpret_the_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.ra");
    write_particles(&path);
    let r = RecordReadOptions::new()
        .schema_check(SchemaCheck::Off)
        .open::<Swapped>(&path)
        .unwrap();
    assert_eq!(
        r.get(3).unwrap(),
        Some(Swapped {
            t: 1.5,
            y: 3.0,
            x: -3.0
        })
    );
    assert!(r.schema_notes().is_empty());
}

#[test]
fn a_record_name_that_differs_is_a_note_and_strict_refuses_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.ra");
    write_particles(&path);
    let r = RecordReader::<Body>::open(&path).unwrap();
    assert_eq!(r.get(4).unwrap().unwrap().x, 4.0);
    assert_eq!(
        r.schema_notes(),
        ["the record's name: the file's is 'Particle', Body's 'Body' (not compared)"]
    );
    let e = RecordReadOptions::new()
        .schema_check(SchemaCheck::Strict)
        .open::<Body>(&path)
        .unwrap_err();
    assert_eq!(mismatch_at(&e), "the record's name", "{e}");
    let strict = RecordReadOptions::new().schema_check(SchemaCheck::Strict);
    assert_eq!(strict.open::<Particle>(&path).unwrap().len(), 5);
}

#[test]
fn an_unnamed_record_file_as_numpy_writes_it_reads_into_the_derived_struct() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.ra");
    write_particles(&path);
    unnamed(&path);
    let r = RecordReader::<Particle>::open(&path).unwrap();
    let all: Vec<Particle> = (0..r.len()).map(|i| r.get(i).unwrap().unwrap()).collect();
    assert_eq!(all, particles());
    assert_eq!(r.schema_notes().len(), 1);
    // Renamed fields are still refused in such a file.
    assert!(RecordReader::<Renamed>::open(&path).is_err());
    // And a writer appends to it, keeping the file's schema.
    let before = Trailer::read_file(&path).unwrap().unwrap().schema;
    let mut w = RecordOptions::new().open::<Particle>(&path).unwrap();
    w.append(&particles()[0]).unwrap();
    w.finish().unwrap();
    assert_eq!(Trailer::read_file(&path).unwrap().unwrap().schema, before);
    assert_eq!(RecordReader::<Particle>::open(&path).unwrap().len(), 6);
}

#[test]
fn a_file_without_a_schema_is_read_by_its_header_alone() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.ra");
    RawArray::from_vec(particles()).write_file(&path).unwrap();
    assert_eq!(Trailer::read_file(&path).unwrap(), None);
    // Nothing to check against: the bytes are read as the type, whatever its field names.
    let r = RecordReader::<Swapped>::open(&path).unwrap();
    assert_eq!(r.get(1).unwrap().unwrap().y, 1.0);
}

#[test]
fn a_damaged_trailer_hides_the_schema_so_only_an_unchecked_reader_opens() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.ra");
    write_particles(&path);
    let mut bytes = std::fs::read(&path).unwrap();
    let n = bytes.len();
    bytes[n - 40] ^= 0xff;
    std::fs::write(&path, &bytes).unwrap();
    assert!(RecordReader::<Particle>::open(&path).is_err());
    let r = RecordReadOptions::new()
        .schema_check(SchemaCheck::Off)
        .open::<Particle>(&path)
        .unwrap();
    assert_eq!(r.trailer(), None);
    assert!(
        r.trailer_error().unwrap().contains("CRC"),
        "{:?}",
        r.trailer_error()
    );
    assert_eq!(r.get(2).unwrap(), Some(particles()[2].clone()));
}

#[test]
fn a_bool_marker_on_one_side_is_a_note_and_strict_refuses_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("b.ra");
    RawArray::from_vec(vec![true, false, true])
        .write_file(&path)
        .unwrap();
    let r = RecordReader::<u8>::open(&path).unwrap();
    assert_eq!(r.get(2).unwrap(), Some(1));
    assert_eq!(
        r.schema_notes(),
        ["the element: the file has bool, the type read has uint8"]
    );
    assert!(RecordReader::<bool>::open(&path)
        .unwrap()
        .schema_notes()
        .is_empty());
    let e = RecordReadOptions::new()
        .schema_check(SchemaCheck::Strict)
        .open::<u8>(&path)
        .unwrap_err();
    assert_eq!(mismatch_at(&e), "the element", "{e}");
    // A scalar of another type over the same bytes is refused.
    assert_eq!(
        i8::layout()
            .check_against(&bool::layout(), SchemaCheck::Fields)
            .map_err(|e| mismatch_at(&e)),
        Err("the element".into())
    );
}
