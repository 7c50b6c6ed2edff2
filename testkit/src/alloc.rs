//! A global allocator that counts bytes alive (not RSS), for the memory benches: what a structure
//! keeps and what a step peaks at, independent of the allocator's fragmentation. A bench installs it
//! with `tidal::global_allocator!(Counting, Counting);`. It hands the work to the allocator tidal
//! ships with, so that a bench's times are those of the binary.

use std::{
    alloc::{GlobalAlloc, Layout},
    sync::atomic::{AtomicBool, AtomicIsize, Ordering},
};

use tidal::runtime::allocator::{self, Allocator};

pub struct Counting;

const SHIPPED: Allocator = allocator::ALLOCATOR;

static LIVE: AtomicIsize = AtomicIsize::new(0);
/// The most bytes alive since [`peak_during`] started, while it runs: outside it, allocations pay no
/// extra atomic, so timing benches in the same binary are not slowed.
static PEAK: AtomicIsize = AtomicIsize::new(0);
static TRACK_PEAK: AtomicBool = AtomicBool::new(false);

fn grew(by: isize) {
    let live = LIVE.fetch_add(by, Ordering::Relaxed) + by;
    if TRACK_PEAK.load(Ordering::Relaxed) {
        PEAK.fetch_max(live, Ordering::Relaxed);
    }
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        grew(layout.size() as isize);
        unsafe { SHIPPED.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        unsafe { SHIPPED.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        grew(new_size as isize - layout.size() as isize);
        unsafe { SHIPPED.realloc(ptr, layout, new_size) }
    }
}

/// Bytes alive now (counted only where [`Counting`] is the global allocator).
pub fn live() -> isize {
    LIVE.load(Ordering::Relaxed)
}

/// Runs `step`; returns its result and the most bytes alive while it ran (absolute, as [`live`]).
pub fn peak_during<T>(step: impl FnOnce() -> T) -> (T, isize) {
    PEAK.store(live(), Ordering::Relaxed);
    TRACK_PEAK.store(true, Ordering::Relaxed);
    let out = step();
    TRACK_PEAK.store(false, Ordering::Relaxed);
    (out, PEAK.load(Ordering::Relaxed))
}
