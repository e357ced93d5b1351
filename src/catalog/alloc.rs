//! A counting global allocator: every Rust allocation of this backend goes through it, so the
//! registry can report the bytes it holds (`chumbo.cache_stats()`) rather than guess from RssAnon,
//! which also moves with PostgreSQL's caches and malloc's fragmentation. Backends are
//! single-threaded; relaxed atomics only keep the statics `Sync`.
//!
//! The allocations themselves go to mimalloc rather than glibc's malloc. A tools/list builds and
//! drops thousands of small values, and glibc's free lists, fragmented by each registry rebuild,
//! made every later call slower until the next one; with mimalloc a 1,000-tool tools/list was
//! ahead in each of nine interleaved rounds, by 7–36% warm and 14–40% with a COMMENT a second
//! (bench/analysis.md, issue 32 session 26). PostgreSQL's own memory (palloc) stays glibc's.

use mimalloc::MiMalloc;
use std::alloc::{GlobalAlloc, Layout};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(n: usize) {
    let now = LIVE.fetch_add(n, Relaxed) + n;
    if now > PEAK.load(Relaxed) {
        PEAK.store(now, Relaxed);
    }
}

// SAFETY: every method forwards to mimalloc with the caller's arguments unchanged and
// only counts sizes on success.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = MiMalloc.alloc(layout);
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = MiMalloc.alloc_zeroed(layout);
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        MiMalloc.dealloc(ptr, layout);
        LIVE.fetch_sub(layout.size(), Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = MiMalloc.realloc(ptr, layout, new_size);
        if !p.is_null() {
            LIVE.fetch_sub(layout.size(), Relaxed);
            grew(new_size);
        }
        p
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Bytes Rust code holds in this backend now, and the most it ever held.
pub fn live() -> usize {
    LIVE.load(Relaxed)
}

pub fn peak() -> usize {
    PEAK.load(Relaxed)
}

/// Runs `f` and returns what it made with the most bytes held while it ran (`peak` keeps its
/// meaning: the most ever held).
pub fn peak_of<R>(f: impl FnOnce() -> R) -> (R, usize) {
    let before = PEAK.swap(live(), Relaxed);
    let r = f();
    let during = PEAK.load(Relaxed);
    PEAK.store(before.max(during), Relaxed);
    (r, during)
}

/// Runs `f` and returns what it made with the bytes that are still allocated afterwards (what
/// the result holds; temporaries freed inside `f` do not count).
pub fn net<R>(f: impl FnOnce() -> R) -> (R, usize) {
    let before = live();
    let r = f();
    (r, live().saturating_sub(before))
}

/// Gives memory freed by a rebuild back to the kernel, Rust's (mimalloc's) and PostgreSQL's
/// (glibc's: the catalog rows the build decoded): both keep freed pages otherwise, and every
/// backend would carry the peak of its last rebuild.
pub fn trim() {
    extern "C" {
        fn malloc_trim(pad: usize) -> i32;
    }
    // SAFETY: both only release free memory: mi_collect(force) this thread's unused pages (a
    // backend has one thread), malloc_trim glibc's; glibc is the C library of every platform
    // chumbo supports (Debian).
    unsafe {
        libmimalloc_sys::mi_collect(true);
        malloc_trim(0);
    }
}
