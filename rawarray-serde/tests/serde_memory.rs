//! `to_writer` streams: serializing a large value into a writer holds a buffer of a few
//! hundred KiB plus the first element, never a copy of the data. `from_reader` and `from_file`
//! hold the value and a window of 64 KiB, never a copy of the data. Measured with a counting
//! global allocator (peak of live bytes during the call).

mod common;

#[global_allocator]
static ALLOC: common::counting::Counting = common::counting::Counting;

/// Peak bytes this thread allocated while `f` ran, beyond what was live when it started.
fn peak_during(f: impl FnOnce()) -> usize {
    common::counting::peak(f)
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Foo {
    info: [u8; 12],
    index: u32,
    v: [f64; 8],
}

/// One test, so no other test thread allocates while a peak is measured.
#[test]
fn serde_streams_hold_a_bounded_buffer_whatever_the_data_size() {
    to_writer_holds_a_bounded_buffer();
    reads_hold_the_value_and_a_window();
}

/// The peak of `read` beyond the heap the value it returns holds (`held`, from its capacity).
fn peak_beyond_value<T>(read: impl FnOnce() -> T, held: impl Fn(&T) -> usize) -> usize {
    let mut value = None;
    let peak = peak_during(|| value = Some(read()));
    peak - held(value.as_ref().unwrap())
}

fn reads_hold_the_value_and_a_window() {
    use std::io::BufReader;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("floats.ra");
    let floats: Vec<f32> = (0..16 << 20).map(|i| i as f32).collect(); // 64 MiB
    rawarray_serde::to_file(&path, &floats).unwrap();
    drop(floats);
    let held = |v: &Vec<f32>| {
        // Allocated once, to the element: the value's memory is exactly its data.
        assert_eq!(v.capacity(), 16 << 20);
        v.capacity() * 4
    };
    let open = || BufReader::new(std::fs::File::open(&path).unwrap());
    for (how, extra) in [
        (
            "from_reader(BufReader<File>)",
            peak_beyond_value(
                || rawarray_serde::from_reader::<Vec<f32>>(open()).unwrap(),
                held,
            ),
        ),
        (
            "from_file",
            peak_beyond_value(
                || rawarray_serde::from_file::<Vec<f32>>(&path).unwrap(),
                held,
            ),
        ),
    ] {
        assert!(
            extra < 1 << 20,
            "Vec<f32>, 64 MiB, {how}: {extra} bytes beyond the value"
        );
    }

    // Records: serde's own `Vec` grows by doubling; whatever capacity it reaches, nothing but
    // the window is held beside it.
    let path = dir.path().join("foos.ra");
    let foos: Vec<Foo> = (0..1 << 20)
        .map(|i| Foo {
            info: [1; 12],
            index: i,
            v: [0.5; 8],
        })
        .collect(); // 80 MiB
    rawarray_serde::to_file(&path, &foos).unwrap();
    drop(foos);
    let held = |v: &Vec<Foo>| v.capacity() * std::mem::size_of::<Foo>();
    let open = || BufReader::new(std::fs::File::open(&path).unwrap());
    let extra = peak_beyond_value(
        || rawarray_serde::from_reader::<Vec<Foo>>(open()).unwrap(),
        held,
    );
    assert!(
        extra < 1 << 20,
        "Vec<Foo>, 80 MiB, from_reader: {extra} bytes beyond the value"
    );
    let extra = peak_beyond_value(
        || rawarray_serde::from_file::<Vec<Foo>>(&path).unwrap(),
        held,
    );
    assert!(
        extra < 1 << 20,
        "Vec<Foo>, 80 MiB, from_file: {extra} bytes beyond the value"
    );
}

fn to_writer_holds_a_bounded_buffer() {
    let floats: Vec<f32> = (0..16 << 20).map(|i| i as f32).collect(); // 64 MiB
    let peak = peak_during(|| rawarray_serde::to_writer(std::io::sink(), &floats).unwrap());
    assert!(
        peak < 1 << 20,
        "64 MiB of f32 streamed with {peak} bytes allocated"
    );

    let foos: Vec<Foo> = (0..1 << 20)
        .map(|i| Foo {
            info: [1; 12],
            index: i,
            v: [0.5; 8],
        })
        .collect(); // 80 MiB
    let peak = peak_during(|| rawarray_serde::to_writer(std::io::sink(), &foos).unwrap());
    assert!(
        peak < 1 << 20,
        "80 MiB of records streamed with {peak} bytes allocated"
    );

    // Nested rows: the buffer holds about one row, not the array.
    let rows: Vec<Vec<f64>> = (0..512).map(|r| vec![f64::from(r); 16 << 10]).collect(); // 64 MiB
    let peak = peak_during(|| rawarray_serde::to_writer(std::io::sink(), &rows).unwrap());
    assert!(
        peak < 2 << 20,
        "64 MiB of rows streamed with {peak} bytes allocated"
    );
}
