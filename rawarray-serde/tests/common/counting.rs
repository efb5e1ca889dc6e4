//! A counting global allocator for the tests that bound memory: it records, per thread, the
//! peak of live heap bytes while a measured call runs. A test binary opts in with
//!
//! ```ignore
//! #[global_allocator]
//! static ALLOC: common::counting::Counting = common::counting::Counting;
//! ```
//!
//! and measures with [`peak`]. Counting is per thread, so other tests running beside it in
//! the same binary do not disturb it.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// The allocator: the system's, watched.
pub struct Counting;

thread_local! {
    static ON: Cell<bool> = const { Cell::new(false) };
    static LIVE: Cell<i64> = const { Cell::new(0) };
    static PEAK: Cell<i64> = const { Cell::new(0) };
}

fn note(delta: i64) {
    // `try_with`: allocations may happen while a thread's locals are being torn down.
    let _ = ON.try_with(|on| {
        if on.get() {
            LIVE.with(|l| {
                let v = l.get() + delta;
                l.set(v);
                PEAK.with(|p| p.set(p.get().max(v)));
            });
        }
    });
}

// SAFETY: every call is forwarded to the system allocator unchanged, with the caller's own
// arguments and under the caller's own obligations; the counters only watch.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded unchanged (see the impl).
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            note(layout.size() as i64);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded unchanged (see the impl).
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            note(layout.size() as i64);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded unchanged (see the impl).
        unsafe { System.dealloc(ptr, layout) };
        note(-(layout.size() as i64));
    }

    // Counted as the change in size: large blocks grow in place (mremap), not by a copy.
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded unchanged (see the impl).
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            note(new_size as i64 - layout.size() as i64);
        }
        p
    }
}

/// Peak live heap bytes this thread allocated while `f` ran, what it returns included (it is
/// dropped inside). Memory freed that was allocated before counts as 0, not below.
pub fn peak<R>(f: impl FnOnce() -> R) -> usize {
    LIVE.with(|l| l.set(0));
    PEAK.with(|p| p.set(0));
    ON.with(|o| o.set(true));
    drop(f());
    ON.with(|o| o.set(false));
    PEAK.with(Cell::get).max(0) as usize
}

/// Live heap bytes that what `f` returns still holds once it returned (allocated by this
/// thread while `f` ran and not freed); the result is then dropped.
pub fn held<R>(f: impl FnOnce() -> R) -> usize {
    LIVE.with(|l| l.set(0));
    ON.with(|o| o.set(true));
    let value = f();
    ON.with(|o| o.set(false));
    let held = LIVE.with(Cell::get).max(0) as usize;
    drop(value);
    held
}
