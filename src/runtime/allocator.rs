//! The allocator every tidal process runs on: jemalloc, through `tikv-jemallocator`.
//!
//! glibc's malloc, the system allocator of the image's libc, was what broke first at scale: listing
//! 2,000,000 pods into the cache did not finish in 21 minutes, `_int_malloc` and `malloc_consolidate`
//! taking most of the CPU in a heap of 2 GB, and `tidal report -f` at 200,000 pods took 11.5 s
//! against 7.2 s on jemalloc (docs/performance.md). The binary installs it with
//! [`global_allocator!`](crate::global_allocator); so do the benches (the counting allocator wraps
//! it), so that what they measure is what ships.

#[cfg(not(target_env = "msvc"))]
pub type Allocator = tikv_jemallocator::Jemalloc;
#[cfg(target_env = "msvc")]
pub type Allocator = std::alloc::System;

#[cfg(not(target_env = "msvc"))]
pub const ALLOCATOR: Allocator = tikv_jemallocator::Jemalloc;
#[cfg(target_env = "msvc")]
pub const ALLOCATOR: Allocator = std::alloc::System;

/// jemalloc's options, compiled in. Freed pages are kept for reuse instead of being returned to the
/// system over the next 10 s (jemalloc's default decay): a controller cycle allocates and frees about
/// the same memory every time, and giving it back between cycles would make every cycle fault it in
/// again (mimalloc, which purges the same way, made the live cycle 1.5 times as long:
/// docs/performance.md). glibc's malloc, which tidal ran on before, kept it too. Bursts that are over are purged on purpose
/// ([`release_free_memory`]), and blocks of 8 MiB or more are returned as they are freed.
pub const OPTIONS: &std::ffi::CStr = c"dirty_decay_ms:-1,muzzy_decay_ms:-1";

/// Installs tidal's allocator and its options in a binary: `tidal::global_allocator!();`, or
/// `tidal::global_allocator!(Counting, Counting)` to wrap it (the options still apply to jemalloc).
#[macro_export]
macro_rules! global_allocator {
    () => {
        $crate::global_allocator!(
            $crate::runtime::allocator::Allocator,
            $crate::runtime::allocator::ALLOCATOR
        );
    };
    ($type:ty, $value:expr) => {
        #[global_allocator]
        static GLOBAL_ALLOCATOR: $type = $value;

        /// Read by jemalloc when it starts (the crate builds it with the `_rjem_` prefix).
        #[cfg(not(target_env = "msvc"))]
        #[unsafe(export_name = "_rjem_malloc_conf")]
        static JEMALLOC_OPTIONS: Option<&'static ::std::ffi::c_char> =
            Some(unsafe { &*$crate::runtime::allocator::OPTIONS.as_ptr() });
    };
}

/// Gives the pages freed since the last call back to the system at once: with decay off they would
/// stay with the process. The webhook calls it when a burst of huge requests is over, so that an
/// idle webhook drops back to its resting size. Where jemalloc is not the process's allocator (the
/// library's own tests) it purges nothing.
pub fn release_free_memory() {
    #[cfg(not(target_env = "msvc"))]
    {
        // "arena.<MALLCTL_ARENAS_ALL>.purge": every arena's unused dirty and muzzy pages.
        let name = c"arena.4096.purge";
        // SAFETY: a write-less, read-less mallctl of a name that takes no value; jemalloc checks the
        // name and answers an error code for one it does not know, which changes nothing.
        let code = unsafe {
            tikv_jemalloc_sys::mallctl(
                name.as_ptr(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                0,
            )
        };
        if code != 0 {
            tracing::debug!(code, "jemalloc did not purge its arenas");
        }
    }
}
