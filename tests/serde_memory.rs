//! `to_writer` streams: serializing a large value into a writer holds a buffer of a few
//! hundred KiB plus the first element, never a copy of the data. Measured with a counting
//! global allocator (peak of live bytes during the call).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let now = LIVE.fetch_add(layout.size(), Ordering::SeqCst) + layout.size();
        PEAK.fetch_max(now, Ordering::SeqCst);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::SeqCst);
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Peak bytes allocated beyond what was live when `f` started.
fn peak_during(f: impl FnOnce()) -> usize {
    let base = LIVE.load(Ordering::SeqCst);
    PEAK.store(base, Ordering::SeqCst);
    f();
    PEAK.load(Ordering::SeqCst) - base
}

#[derive(serde::Serialize)]
struct Foo {
    info: [u8; 12],
    index: u32,
    v: [f64; 8],
}

/// One test, so no other test thread allocates while a peak is measured.
#[test]
fn to_writer_holds_a_bounded_buffer_whatever_the_data_size() {
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
    let rows: Vec<Vec<f64>> = (0..512).map(|r| vec![r as f64; 16 << 10]).collect(); // 64 MiB
    let peak = peak_during(|| rawarray_serde::to_writer(std::io::sink(), &rows).unwrap());
    assert!(
        peak < 2 << 20,
        "64 MiB of rows streamed with {peak} bytes allocated"
    );
}
