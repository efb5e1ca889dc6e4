//! The serde format's fast paths and writers give exactly the bytes (and the errors) of the
//! element-by-element path: elements of one layout reached by different paths, `to_writer`
//! into a `Vec` (built in place) against any other writer (staged in 256 KiB chunks), files
//! whose header can only be written at the end, and arrays read in place. Expected bytes are
//! built by hand.

use rawarray_serde::{from_slice, to_vec, to_writer, ErrorKind};
use serde::{Deserialize, Serialize, Serializer};

/// A file built by hand: header words, then data.
fn file(eltype: u64, elbyte: u64, dims: &[u64], data: &[u8]) -> Vec<u8> {
    let mut out = b"rawarray".to_vec();
    for w in [0, eltype, elbyte, data.len() as u64, dims.len() as u64]
        .iter()
        .chain(dims)
    {
        out.extend_from_slice(&w.to_le_bytes());
    }
    out.extend_from_slice(data);
    out
}

/// A record whose `[f32; 3]` the serializer copies whole.
#[derive(Serialize, Deserialize, Clone, Copy, PartialEq, Debug)]
struct Whole {
    a: [f32; 3],
    b: u16,
}

/// The same layout, reached element by element: a tuple is not an array of plain scalars.
#[derive(Serialize, Deserialize, Clone, Copy, PartialEq, Debug)]
struct ByItem {
    a: (f32, f32, f32),
    b: u16,
}

/// 12 bytes of floats again, but as a pair and a lone float: another layout.
#[derive(Serialize, Clone, Copy, PartialEq, Debug)]
struct PairAndOne {
    a: (f32, f32),
    c: f32,
    b: u16,
}

#[derive(Serialize, Clone, Copy, Debug)]
#[serde(untagged)]
enum Row {
    Whole(Whole),
    ByItem(ByItem),
    PairAndOne(PairAndOne),
}

fn record_bytes(a: [f32; 3], b: u16) -> Vec<u8> {
    let mut out: Vec<u8> = a.iter().flat_map(|x| x.to_le_bytes()).collect();
    out.extend_from_slice(&b.to_le_bytes());
    out
}

#[test]
fn one_layout_by_two_paths_is_one_array() {
    let rows = vec![
        Row::Whole(Whole {
            a: [1.0, 2.0, 3.0],
            b: 4,
        }),
        Row::ByItem(ByItem {
            a: (5.0, 6.0, 7.0),
            b: 8,
        }),
        Row::Whole(Whole {
            a: [9.0, 10.0, 11.0],
            b: 12,
        }),
        Row::ByItem(ByItem {
            a: (13.0, 14.0, 15.0),
            b: 16,
        }),
    ];
    let mut data = Vec::new();
    for (a, b) in [
        ([1.0, 2.0, 3.0], 4),
        ([5.0, 6.0, 7.0], 8),
        ([9.0, 10.0, 11.0], 12),
        ([13.0, 14.0, 15.0], 16),
    ] {
        data.extend(record_bytes(a, b));
    }
    let want = file(0, 14, &[4], &data);
    assert_eq!(to_vec(&rows).unwrap(), want);
    // The first element element by element, every other later one whole.
    let mut reversed = rows.clone();
    reversed.reverse();
    assert!(matches!(reversed[0], Row::ByItem(_)));
    let mut data = Vec::new();
    for chunk in want[56..].chunks(14).rev() {
        data.extend_from_slice(chunk);
    }
    assert_eq!(to_vec(&reversed).unwrap(), file(0, 14, &[4], &data));
    // Both record types read the file.
    let whole: Vec<Whole> = from_slice(&want).unwrap();
    assert_eq!(whole[1].a, [5.0, 6.0, 7.0]);
    let by_item: Vec<ByItem> = from_slice(&want).unwrap();
    assert_eq!(by_item[3].a, (13.0, 14.0, 15.0));
}

#[test]
fn another_layout_of_the_same_size_is_an_error() {
    let whole = Row::Whole(Whole {
        a: [1.0, 2.0, 3.0],
        b: 4,
    });
    let other = Row::PairAndOne(PairAndOne {
        a: (1.0, 2.0),
        c: 3.0,
        b: 4,
    });
    for rows in [vec![whole, other], vec![other, whole]] {
        let e = to_vec(&rows).unwrap_err();
        assert!(differs_at(&e, &[1]), "{e:?}");
    }
    // Dims differ, bytes do not: [f32; 4] against [[f32; 2]; 2].
    #[derive(Serialize)]
    #[serde(untagged)]
    enum Grid {
        Flat([f32; 4]),
        Square([[f32; 2]; 2]),
    }
    let e = to_vec(&vec![Grid::Flat([0.0; 4]), Grid::Square([[0.0; 2]; 2])]).unwrap_err();
    assert!(differs_at(&e, &[1]), "{e:?}");
}

/// Serializes its items as a sequence of unknown length (a filtering iterator gives no exact
/// size), so the header can only be written at the end.
struct Unsized<T>(Vec<T>);

impl<T: Serialize> Serialize for Unsized<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().filter(|_| true))
    }
}

#[derive(Serialize, Deserialize, Clone, PartialEq, Debug)]
struct Foo {
    info: [u8; 12],
    index: u32,
    v: [f64; 8],
}

fn foo(i: u32) -> Foo {
    Foo {
        info: [i as u8; 12],
        index: i,
        v: std::array::from_fn(|k| f64::from(i) + k as f64 / 8.0),
    }
}

fn foo_file(foos: &[Foo]) -> Vec<u8> {
    let mut data = Vec::new();
    for f in foos {
        data.extend_from_slice(&f.info);
        data.extend_from_slice(&f.index.to_le_bytes());
        for x in f.v {
            data.extend_from_slice(&x.to_le_bytes());
        }
    }
    file(0, 80, &[foos.len() as u64], &data)
}

#[test]
fn staged_writers_get_the_header_then_chunks_of_256_kib() {
    // Each chunk is a `write` call through a `BufWriter<File>` (whose buffer it bypasses):
    // 256 KiB chunks, not 64 KiB ones, made records measurably faster to write.
    struct Calls(Vec<usize>);
    impl std::io::Write for Calls {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.push(b.len());
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let foos: Vec<Foo> = (0..10_000).map(foo).collect(); // 800 000 bytes of records
    let mut calls = Calls(Vec::new());
    to_writer(&mut calls, &foos).unwrap();
    // A chunk is flushed after the record that takes it to 256 KiB: 3277 records, 262 160
    // bytes. The header (48 bytes and one dim) goes first, the rest last.
    let chunk = 262_160;
    assert_eq!(calls.0, [56, chunk, chunk, chunk, 800_000 - 3 * chunk]);
}

#[test]
fn to_writer_into_a_vec_appends_the_file_in_place() {
    // Past the 256 KiB chunks of the staged writers.
    let foos: Vec<Foo> = (0..4000).map(foo).collect();
    let want = foo_file(&foos);
    let mut out = b"kept".to_vec();
    to_writer(&mut out, &foos).unwrap();
    assert_eq!(&out[..4], b"kept");
    assert_eq!(&out[4..], want);
    // Any other writer gets the same bytes.
    let mut cursor = std::io::Cursor::new(Vec::new());
    to_writer(&mut cursor, &foos).unwrap();
    assert_eq!(cursor.into_inner(), want);
    assert_eq!(to_vec(&foos).unwrap(), want);

    // A header known only at the end goes in front of the file, after the caller's bytes.
    let mut out = b"kept".to_vec();
    to_writer(&mut out, &Unsized(foos.clone())).unwrap();
    assert_eq!(&out[4..], want);
    assert_eq!(to_vec(&Unsized(foos.clone())).unwrap(), want);
    let mut cursor = std::io::Cursor::new(Vec::new());
    to_writer(&mut cursor, &Unsized(foos)).unwrap();
    assert_eq!(cursor.into_inner(), want);

    // A lone value, and a whole slice of plain scalars.
    let mut out = b"kept".to_vec();
    to_writer(&mut out, &7u32).unwrap();
    assert_eq!(
        out,
        [b"kept".as_slice(), &file(2, 4, &[], &[7, 0, 0, 0])].concat()
    );
    let mut out = b"kept".to_vec();
    to_writer(&mut out, &[1u16, 2, 3][..]).unwrap();
    assert_eq!(
        out,
        [b"kept".as_slice(), &file(2, 2, &[3], &[1, 0, 2, 0, 3, 0])].concat()
    );
}

#[test]
fn a_failed_write_into_a_vec_leaves_it_as_it_was() {
    // Ragged below the top level (top-level rows of different lengths are a ragged file).
    let mut ragged = vec![vec![vec![1u32; 4]]; 50_000];
    ragged[49_999][0].pop();
    let mut out = b"kept".to_vec();
    let e = to_writer(&mut out, &ragged).unwrap_err();
    assert!(
        matches!(e.kind(), ErrorKind::NotRectangular { index, found, expected: 4, .. }
            if index == &[49999, 0] && found == "3"),
        "{e:?}"
    );
    assert_eq!(out, b"kept");
    // Unknown length: the error comes before any header.
    let mut out = b"kept".to_vec();
    assert!(to_writer(&mut out, &Unsized(ragged)).is_err());
    assert_eq!(out, b"kept");
    // Nothing serializable at all.
    let mut out = b"kept".to_vec();
    assert!(to_writer(&mut out, &Some(1u8)).is_err());
    assert_eq!(out, b"kept");
}

#[test]
fn arrays_read_in_place_check_what_the_item_path_checks() {
    // Vec<[f32; 3]> over dims [3, 2]: each item is one innermost dim.
    let data: Vec<u8> = (1..=6).flat_map(|i| (i as f32).to_le_bytes()).collect();
    let f = file(3, 4, &[3, 2], &data);
    let v: Vec<[f32; 3]> = from_slice(&f).unwrap();
    assert_eq!(v, [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]);
    // The wrong length, the wrong scalar type: the item path's errors.
    let e = from_slice::<Vec<[f32; 2]>>(&f).unwrap_err();
    assert!(
        matches!(e.kind(), ErrorKind::DimsMismatch { found, .. } if found == &[3, 2]),
        "{e:?}"
    );
    let e = from_slice::<Vec<[u32; 3]>>(&f).unwrap_err();
    assert!(
        matches!(e.kind(), ErrorKind::TypeMismatch { requested, file_elbyte: 4, .. } if requested == "u32"),
        "{e:?}"
    );
    // Arrays of a scalar that is not plain (bool: only 0 and 1) go item by item.
    let f = file(2, 1, &[3, 2], &[1, 0, 1, 0, 0, 1]);
    let v: Vec<[bool; 3]> = from_slice(&f).unwrap();
    assert_eq!(v, [[true, false, true], [false, false, true]]);
    let e = from_slice::<Vec<[bool; 3]>>(&file(2, 1, &[3, 1], &[1, 2, 0])).unwrap_err();
    assert!(
        matches!(
            e.kind(),
            ErrorKind::InvalidValue {
                what: "bool",
                index: 1,
                value: 2
            }
        ),
        "{e:?}"
    );
    // A record's array field that runs past the record: the record's error.
    #[derive(Deserialize, Debug)]
    #[allow(dead_code)]
    struct Short {
        a: [f64; 2],
    }
    let e = from_slice::<Vec<Short>>(&file(0, 12, &[1], &[0; 12])).unwrap_err();
    assert!(
        matches!(e.kind(), ErrorKind::RecordSize { record, elbyte: 12, .. } if record == "Short"),
        "{e:?}"
    );
}

#[test]
fn struct_boundaries_are_part_of_the_layout() {
    // The same floats, in one record of two or two records of one: element 1 differs.
    #[derive(Serialize)]
    struct One {
        x: f32,
    }
    #[derive(Serialize)]
    struct Two {
        x: f32,
        y: f32,
    }
    #[derive(Serialize)]
    #[serde(untagged)]
    enum R {
        One(One),
        Two(Two),
    }
    let e = to_vec(&vec![
        vec![R::One(One { x: 1.0 }), R::One(One { x: 2.0 })],
        vec![R::Two(Two { x: 3.0, y: 4.0 })],
    ])
    .unwrap_err();
    assert!(differs_at(&e, &[1]), "{e:?}");
    // One Rust type whose fields may be skipped.
    #[derive(Serialize)]
    struct P {
        x: f32,
        #[serde(skip_serializing_if = "is_zero")]
        y: f32,
    }
    fn is_zero(y: &f32) -> bool {
        *y == 0.0
    }
    let rows = vec![
        vec![P { x: 1.0, y: 0.0 }, P { x: 2.0, y: 0.0 }],
        vec![P { x: 3.0, y: 4.0 }],
    ];
    assert!(to_vec(&rows).is_err());
    let mut out = b"kept".to_vec();
    assert!(to_writer(&mut out, &rows).is_err());
    assert_eq!(out, b"kept");
}

/// A sequence whose stated length is `said`, holding `items`.
struct Lying {
    said: usize,
    items: Vec<u32>,
}

impl Serialize for Lying {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let mut seq = s.serialize_seq(Some(self.said))?;
        for i in &self.items {
            seq.serialize_element(i)?;
        }
        seq.end()
    }
}

// The counts below do not fit a 32-bit usize, nor does the overflow message.
#[cfg(target_pointer_width = "64")]
#[test]
fn a_wrong_length_hint_is_an_error_not_an_allocation() {
    let want = |said: usize, e: &rawarray_serde::Error| match e.kind() {
        ErrorKind::BrokenLength {
            what: "the sequence",
            unit: "items",
            said: s,
            gave: 1,
        } => *s == said as u64,
        // No header can hold that count.
        ErrorKind::DataLenOverflow { elbyte: 4, dims } => {
            said == usize::MAX && dims == &[said as u64]
        }
        _ => false,
    };
    for said in [0, 2, 1 << 40, usize::MAX] {
        let lying = Lying {
            said,
            items: vec![7],
        };
        let e = to_vec(&lying).unwrap_err();
        assert!(want(said, &e), "{said}: {e:?}");
        let mut out = b"kept".to_vec();
        let e = to_writer(&mut out, &lying).unwrap_err();
        assert!(want(said, &e), "{said}: {e:?}");
        assert_eq!(out, b"kept");
        let mut cursor = std::io::Cursor::new(Vec::new());
        let e = to_writer(&mut cursor, &lying).unwrap_err();
        assert!(want(said, &e), "{said}: {e:?}");
    }
}

/// Ten `u32`s, but serializing the one at index `.0` panics; `.1`: the sequence tells its
/// length (else the header waits for the end).
struct PanicsAt(u32, bool);

impl Serialize for PanicsAt {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let mut seq = s.serialize_seq(self.1.then_some(10))?;
        for i in 0..10u32 {
            assert!(i != self.0, "a Serialize impl that panics");
            seq.serialize_element(&i)?;
        }
        seq.end()
    }
}

#[test]
fn a_panic_while_writing_into_a_vec_keeps_its_bytes() {
    // Before the first element, and after the header went in (or, for a sequence that does
    // not tell its length, while it waits for the end).
    for sized in [true, false] {
        for at in [0, 5] {
            let mut out = b"kept".to_vec();
            let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let _ = to_writer(&mut out, &PanicsAt(at, sized));
            }));
            assert!(caught.is_err());
            assert_eq!(out, b"kept");
        }
        let mut out = b"kept".to_vec();
        to_writer(&mut out, &PanicsAt(10, sized)).unwrap();
        let data: Vec<u8> = (0..10u32).flat_map(u32::to_le_bytes).collect();
        assert_eq!(
            out,
            [b"kept".as_slice(), &file(2, 4, &[10], &data)].concat()
        );
    }
}

#[test]
fn other_paths_are_replayed_in_place_and_past_the_chunks() {
    // 20 000 records of 14 bytes (past the 256 KiB chunks of staged writers), the paths mixed.
    let rows: Vec<Row> = (0..20_000u16)
        .map(|i| {
            let a = [f32::from(i), 0.5, -1.0];
            if i % 3 == 0 {
                Row::ByItem(ByItem {
                    a: (a[0], a[1], a[2]),
                    b: i,
                })
            } else {
                Row::Whole(Whole { a, b: i })
            }
        })
        .collect();
    let data: Vec<u8> = (0..20_000u16)
        .flat_map(|i| record_bytes([f32::from(i), 0.5, -1.0], i))
        .collect();
    let want = file(0, 14, &[20_000], &data);
    assert_eq!(to_vec(&rows).unwrap(), want);
    let mut out = b"kept".to_vec();
    to_writer(&mut out, &rows).unwrap();
    assert_eq!(out, [b"kept".as_slice(), &want].concat());
    let mut cursor = std::io::Cursor::new(Vec::new());
    to_writer(&mut cursor, &rows).unwrap();
    assert_eq!(cursor.into_inner(), want);
}

#[test]
fn field_steps_do_not_decide_whether_an_element_is_accepted() {
    // A tuple struct (no field steps) and a named struct (field steps): one layout.
    #[derive(Serialize, Clone, Copy)]
    struct P(f32, f32);
    #[derive(Serialize, Clone, Copy)]
    struct Q {
        x: f32,
        y: f32,
    }
    #[derive(Serialize, Clone, Copy)]
    #[serde(untagged)]
    enum E {
        P(P),
        Q(Q),
    }
    // A struct field `[f32; 2]` is copied whole, `(f32, f32)` item by item: another path, so
    // an element with `G::ByItem` after one with `G::Whole` is replayed.
    #[derive(Serialize, Clone, Copy)]
    struct Whole2 {
        v: [f32; 2],
    }
    #[derive(Serialize, Clone, Copy)]
    struct ByItem2 {
        v: (f32, f32),
    }
    #[derive(Serialize, Clone, Copy)]
    #[serde(untagged)]
    enum G {
        Whole(Whole2),
        ByItem(ByItem2),
    }
    let data: Vec<u8> = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    let want = file(0, 16, &[2], &data);
    let first = (E::P(P(1.0, 2.0)), G::Whole(Whole2 { v: [3.0, 4.0] }));
    let p = E::P(P(5.0, 6.0));
    let q = E::Q(Q { x: 5.0, y: 6.0 });
    let whole = G::Whole(Whole2 { v: [7.0, 8.0] });
    let by_item = G::ByItem(ByItem2 { v: (7.0, 8.0) });
    // Replayed or not, the named struct's field steps must not matter.
    for second in [(p, whole), (q, whole), (p, by_item), (q, by_item)] {
        assert_eq!(to_vec(&vec![first, second]).unwrap(), want);
    }
}

/// Says a tuple of `said` items, then gives references to the floats of `gives` (what a
/// `Complex` half looks like to the serializer).
struct LyingTuple {
    said: usize,
    gives: Vec<f32>,
}

impl Serialize for LyingTuple {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeTuple;
        let mut t = s.serialize_tuple(self.said)?;
        for x in &self.gives {
            // `&x` is `&&f32`: items of type `&f32`, as `Complex` hands them over.
            t.serialize_element(&x)?;
        }
        t.end()
    }
}

#[derive(Serialize)]
struct WithTuple {
    a: LyingTuple,
    b: u16,
}

#[test]
fn float_references_that_are_not_a_complex_number_keep_their_bytes_counted() {
    // One item, or three, where two were said: no complex number, and the header counts
    // every byte written.
    for gives in [vec![1.5f32], vec![1.5, 2.5, 3.5]] {
        let rows: Vec<WithTuple> = (0..3)
            .map(|i| WithTuple {
                a: LyingTuple {
                    said: 2,
                    gives: gives.clone(),
                },
                b: i,
            })
            .collect();
        let mut data = Vec::new();
        for i in 0..3u16 {
            data.extend(gives.iter().flat_map(|x| x.to_le_bytes()));
            data.extend_from_slice(&i.to_le_bytes());
        }
        let elbyte = 4 * gives.len() as u64 + 2;
        assert_eq!(to_vec(&rows).unwrap(), file(0, elbyte, &[3], &data));
    }
    // Two: a complex number, as `Complex<f32>` writes it.
    let two = vec![LyingTuple {
        said: 2,
        gives: vec![1.0, -1.0],
    }];
    let data: Vec<u8> = [1.0f32, -1.0]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    assert_eq!(to_vec(&two).unwrap(), file(4, 8, &[1], &data));
}

#[test]
fn large_plain_slices_are_copied_whole_into_new_and_reused_vecs() {
    // 400 KB: past the size copied 64 KiB at a time into a new allocation.
    let v: Vec<f32> = (0..100_000).map(|i| i as f32 * 0.5).collect();
    let data: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
    let want = file(3, 4, &[100_000], &data);
    assert_eq!(to_vec(&v).unwrap(), want);
    // A VecDeque whose items wrap around its buffer: two halves.
    let mut d = std::collections::VecDeque::with_capacity(100_000);
    d.extend(&v[50_000..]);
    for x in v[..50_000].iter().rev() {
        d.push_front(*x);
    }
    let (front, back) = d.as_slices();
    assert!(!front.is_empty() && !back.is_empty());
    assert_eq!(to_vec(&d).unwrap(), want);
    // After the caller's bytes: with no room (a new allocation), and with room (reused).
    for room in [0, want.len() + 64] {
        for value in [to_vec(&v), to_vec(&d)] {
            assert_eq!(value.unwrap(), want);
        }
        let mut out = Vec::with_capacity(4 + room);
        out.extend_from_slice(b"kept");
        to_writer(&mut out, &v).unwrap();
        assert_eq!(&out[..4], b"kept");
        assert!(out[4..] == want);
        let mut out = Vec::with_capacity(4 + room);
        out.extend_from_slice(b"kept");
        to_writer(&mut out, &d).unwrap();
        assert!(out[4..] == want);
    }
}

/// Whether `e` says element `index` (outermost first) differs from element 0: another length
/// or another layout.
fn differs_at(e: &rawarray_serde::Error, index: &[u64]) -> bool {
    match e.kind() {
        ErrorKind::NotRectangular { index: i, .. } | ErrorKind::MixedElements { index: i, .. } => {
            i.starts_with(index)
        }
        _ => false,
    }
}

/// Every refusal of the deserializer is a kind, in the category that says how to react:
/// `Usage` for a Rust type that cannot be read at all, `Data` for a file that does not hold
/// what the type reads.
#[test]
fn read_refusals_are_kinds() {
    use rawarray_serde::Category;
    let bytes = to_vec(&vec![1u8, 2, 3]).unwrap();
    let e = from_slice::<Option<u8>>(&bytes).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::Unreadable { .. }), "{e:?}");
    assert_eq!(e.category(), Category::Usage);
    let e = from_slice::<std::collections::BTreeMap<u8, u8>>(&bytes).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::Unreadable { .. }), "{e:?}");
    // A pair cannot be read from a dim of 3: the dims are checked before any element.
    let e = from_slice::<(u8, u8)>(&bytes).unwrap_err();
    assert!(
        matches!(e.kind(), ErrorKind::DimsMismatch { found, .. } if found == &[3]),
        "{e:?}"
    );
    assert_eq!(e.category(), Category::Data);
    // Not UTF-8: where the valid prefix ends.
    let e = from_slice::<String>(&file(2, 1, &[3], &[b'a', 0xff, b'b'])).unwrap_err();
    assert!(
        matches!(e.kind(), ErrorKind::InvalidUtf8 { valid_up_to: 1 }),
        "{e:?}"
    );
    // 129 nested dims of 1: too deep for a self-describing read.
    let e = from_slice::<serde::de::IgnoredAny>(&file(2, 1, &[1; 129], &[7])).unwrap_err();
    assert!(
        matches!(
            e.kind(),
            ErrorKind::TooDeep {
                depth: 129,
                max: 128
            }
        ),
        "{e:?}"
    );
    // No data, and 2^20 empty sequences asked for.
    let e = from_slice::<Vec<Vec<u8>>>(&file(2, 1, &[0, 1 << 20], &[])).unwrap_err();
    assert!(
        matches!(e.kind(), ErrorKind::TooManyEmpty { items, max: 1024, .. } if *items == 1 << 20),
        "{e:?}"
    );
    // A string read from floats.
    let floats = to_vec(&vec![1.0f32]).unwrap();
    let e = from_slice::<String>(&floats).unwrap_err();
    assert!(
        matches!(e.kind(), ErrorKind::WrongShape { rust, .. } if rust == "string"),
        "{e:?}"
    );
}
