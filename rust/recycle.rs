//! The Python extension's global allocator: the system allocator, plus a
//! small, bounded cache of freed large blocks.
//!
//! Compiling a big pattern set allocates a few megabytes of tries, tables and
//! sort buffers, and dropping a filter frees them. glibc returns such memory to
//! the kernel at once (it trims the heap top and unmaps big blocks), so the
//! next compile pays a page fault per 4 KiB page again: some 400 faults and a
//! sixth of a 10,000-pattern compile on the reference machine (a VM, where a
//! fault costs microseconds). Here, a freed block of 4 KiB
//! to 4 MiB is kept (rounded up to a power of two, at most `SLOTS` per size and
//! `MAX_KEPT` bytes in all) and handed to the next allocation of its size.
//! Everything else goes straight to the system allocator.
//!
//! The cache is a fixed array of atomic slots: taking and returning a block are
//! one atomic swap or compare-exchange each, with no lock and no allocation.

use std::alloc::{GlobalAlloc, Layout, System};
use std::ptr::null_mut;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

/// Smallest and largest cached size, as powers of two (4 KiB and 4 MiB).
const MIN_SHIFT: u32 = 12;
const MAX_SHIFT: u32 = 22;
const CLASSES: usize = (MAX_SHIFT - MIN_SHIFT + 1) as usize;
/// Freed blocks kept per size.
const SLOTS: usize = 4;
/// Bytes kept in all, at most: what the cache can add to a process's memory.
const MAX_KEPT: usize = 8 << 20;
/// The largest alignment the cached path serves; glibc's `malloc` gives 16.
const MAX_ALIGN: usize = 16;

pub struct Recycling {
    slots: [[AtomicPtr<u8>; SLOTS]; CLASSES],
    kept: AtomicUsize,
}

impl Default for Recycling {
    fn default() -> Self {
        Self::new()
    }
}

impl Recycling {
    pub const fn new() -> Self {
        Recycling { slots: [const { [const { AtomicPtr::new(null_mut()) }; SLOTS] }; CLASSES], kept: AtomicUsize::new(0) }
    }

    /// The size class of a layout the cache serves, or None.
    #[inline]
    fn class(layout: Layout) -> Option<usize> {
        let size = layout.size();
        if layout.align() > MAX_ALIGN || !(1 << MIN_SHIFT..=1 << MAX_SHIFT).contains(&size) {
            return None;
        }
        let shift = size.next_power_of_two().trailing_zeros();
        Some((shift - MIN_SHIFT) as usize)
    }

    #[inline]
    fn class_layout(class: usize) -> Layout {
        // SAFETY: a power of two no larger than 4 MiB, with alignment 16.
        unsafe { Layout::from_size_align_unchecked(1 << (class as u32 + MIN_SHIFT), MAX_ALIGN) }
    }

    fn take(&self, class: usize) -> *mut u8 {
        for slot in &self.slots[class] {
            if slot.load(Ordering::Relaxed).is_null() {
                continue;
            }
            let block = slot.swap(null_mut(), Ordering::Acquire);
            if !block.is_null() {
                self.kept.fetch_sub(Self::class_layout(class).size(), Ordering::Relaxed);
                return block;
            }
        }
        null_mut()
    }

    /// Keeps `block` if there is room; false when the caller must free it.
    fn keep(&self, class: usize, block: *mut u8) -> bool {
        let size = Self::class_layout(class).size();
        if self.kept.fetch_add(size, Ordering::Relaxed) + size > MAX_KEPT {
            self.kept.fetch_sub(size, Ordering::Relaxed);
            return false;
        }
        for slot in &self.slots[class] {
            if slot.compare_exchange(null_mut(), block, Ordering::Release, Ordering::Relaxed).is_ok() {
                return true;
            }
        }
        self.kept.fetch_sub(size, Ordering::Relaxed);
        false
    }
}

// A block handed out is the system allocator's for the caller's own layout,
// or one of the class layout (a power of two at least as large, alignment 16)
// that the system allocator gave and that came back to the cache whole.
// SAFETY: so every block fits its layout, and is owned by at most one slot or
// one user at a time (slots are taken by swap, filled by compare-exchange).
unsafe impl GlobalAlloc for Recycling {
    // SAFETY: see the impl: a block of a class is the system's for the class
    // layout, which is at least as large as `layout` and as aligned.
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        match Self::class(layout) {
            Some(class) => {
                let block = self.take(class);
                if block.is_null() {
                    // SAFETY: a class layout has a non-zero size (4 KiB or more).
                    unsafe { System.alloc(Self::class_layout(class)) }
                } else {
                    block
                }
            }
            // SAFETY: the caller's layout, passed on as it is (the caller
            // promises a non-zero size).
            None => unsafe { System.alloc(layout) },
        }
    }

    // SAFETY: `ptr` came from `alloc` with this `layout` (the caller promises
    // it), so it was allocated with the layout its class, or `layout`, gives.
    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        match Self::class(layout) {
            Some(class) => {
                if !self.keep(class, ptr) {
                    // SAFETY: a block of this class was allocated with the class layout.
                    unsafe { System.dealloc(ptr, Self::class_layout(class)) }
                }
            }
            // SAFETY: not a class size: `alloc` gave it from the system as is.
            None => unsafe { System.dealloc(ptr, layout) },
        }
    }

    // SAFETY: as `alloc` and `dealloc`; a block changes hands whole.
    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller promises a valid size for this alignment.
        let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        match (Self::class(layout), Self::class(new_layout)) {
            // SAFETY: neither size is a class: the system's block, its layout and a valid new size.
            (None, None) => unsafe { System.realloc(ptr, layout, new_size) },
            // The block is already large enough.
            (Some(old), Some(new)) if old == new => ptr,
            _ => {
                // SAFETY: `new_layout` has the caller's valid, non-zero size.
                let fresh = unsafe { self.alloc(new_layout) };
                if !fresh.is_null() {
                    // SAFETY: both blocks hold at least the smaller size.
                    unsafe {
                        std::ptr::copy_nonoverlapping(ptr, fresh, layout.size().min(new_size));
                        self.dealloc(ptr, layout);
                    }
                }
                fresh
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(size: usize) -> Layout {
        Layout::from_size_align(size, 8).unwrap()
    }

    #[test]
    fn classes() {
        assert_eq!(Recycling::class(layout(4095)), None);
        assert_eq!(Recycling::class(layout(4096)), Some(0));
        assert_eq!(Recycling::class(layout(4097)), Some(1));
        assert_eq!(Recycling::class(layout(4 << 20)), Some(CLASSES - 1));
        assert_eq!(Recycling::class(layout((4 << 20) + 1)), None);
        assert_eq!(Recycling::class(Layout::from_size_align(8192, 64).unwrap()), None);
    }

    #[test]
    fn a_freed_block_is_handed_out_again() {
        let cache = Recycling::new();
        // SAFETY: each block is written within its size and freed once, with its layout.
        unsafe {
            let a = cache.alloc(layout(5000));
            a.write_bytes(7, 5000);
            cache.dealloc(a, layout(5000));
            assert_eq!(cache.kept.load(Ordering::Relaxed), 8192);
            // Same class (8 KiB), other size: the same block.
            let b = cache.alloc(layout(8000));
            assert_eq!(a, b);
            assert_eq!(cache.kept.load(Ordering::Relaxed), 0);
            cache.dealloc(b, layout(8000));
        }
    }

    #[test]
    fn realloc_keeps_the_contents_across_classes() {
        let cache = Recycling::new();
        // SAFETY: reads and writes stay below the smaller of the old and new sizes.
        unsafe {
            let mut size = 100;
            let mut p = cache.alloc(layout(size));
            for i in 0..size {
                *p.add(i) = i as u8;
            }
            // Up through small, cached and oversized blocks, then back down.
            for next in [3000, 4096, 6000, 8192, 70_000, 5 << 20, 9000, 50] {
                p = cache.realloc(p, layout(size), next);
                assert!(!p.is_null());
                let kept = size.min(next).min(100);
                for i in 0..kept {
                    assert_eq!(*p.add(i), i as u8, "byte {i} after {size} -> {next}");
                }
                size = next;
            }
            cache.dealloc(p, layout(size));
        }
    }

    #[test]
    fn the_cache_is_bounded() {
        let cache = Recycling::new();
        // SAFETY: every block is freed once, with the layout it was allocated with.
        unsafe {
            let big = layout(4 << 20);
            let blocks: Vec<*mut u8> = (0..4).map(|_| cache.alloc(big)).collect();
            for &b in &blocks {
                cache.dealloc(b, big);
            }
            // Two 4 MiB blocks fill the 8 MiB budget; the others went back.
            assert_eq!(cache.kept.load(Ordering::Relaxed), MAX_KEPT);
            let small: Vec<*mut u8> = (0..SLOTS + 2).map(|_| cache.alloc(layout(4096))).collect();
            for &b in &small {
                cache.dealloc(b, layout(4096));
            }
            assert_eq!(cache.kept.load(Ordering::Relaxed), MAX_KEPT);
        }
    }

    #[test]
    fn threads_share_it_safely() {
        static CACHE: Recycling = Recycling::new();
        let handles: Vec<_> = (0..4u8)
            .map(|t| {
                std::thread::spawn(move || {
                    let mut seed = 0x9E37_79B9_u32 ^ u32::from(t);
                    let mut held: Vec<(*mut u8, usize, u8)> = Vec::new();
                    for round in 0..2000u32 {
                        seed ^= seed << 13;
                        seed ^= seed >> 17;
                        seed ^= seed << 5;
                        if held.len() < 8 && seed % 3 != 0 {
                            let size = 4096 << (seed % 5);
                            let mark = (round as u8) ^ t;
                            // SAFETY: a block of `size` bytes, written within them.
                            let p = unsafe { CACHE.alloc(layout(size)) };
                            // SAFETY: as above.
                            unsafe { p.write_bytes(mark, size) };
                            held.push((p, size, mark));
                        } else if let Some((p, size, mark)) = held.pop() {
                            // Nobody else wrote into a block this thread holds.
                            // SAFETY: reads within the block, which this thread holds.
                            assert!((0..size).step_by(512).all(|i| unsafe { *p.add(i) } == mark));
                            // SAFETY: freed once, with its layout.
                            unsafe { CACHE.dealloc(p, layout(size)) };
                        }
                    }
                    for (p, size, _) in held {
                        // SAFETY: freed once, with its layout.
                        unsafe { CACHE.dealloc(p, layout(size)) };
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
    }
}
