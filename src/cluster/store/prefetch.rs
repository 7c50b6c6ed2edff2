//! A hint that asks the processor to start loading memory a loop will soon read. At 150,000 pods most
//! pods and pod-map tree nodes are in no cache, and the loops over them do little work each: asked for
//! a few places ahead, their misses overlap instead of following one another. A hint only: nothing is
//! read, nothing can fault, and on other architectures it does nothing.

const LINE: usize = 64;

/// Starts loading every cache line of the `len` bytes from `start`.
#[inline]
pub(crate) fn bytes<T>(start: *const T, len: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        let start = start.cast::<i8>();
        // Each line the bytes touch, once: they need not start on a line.
        let first_line = start.addr() / LINE * LINE;
        for line in (first_line..start.addr() + len).step_by(LINE) {
            // SAFETY: SSE is part of every x86_64 processor, and a prefetch never faults, whatever
            // the address.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(start.with_addr(line)) };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (start, len);
}
