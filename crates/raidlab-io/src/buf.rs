//! Page-aligned I/O buffers (O_DIRECT needs memory aligned to the device's
//! logical block size; 4096 covers every device).

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

/// Alignment of every buffer.
pub const ALIGN: usize = 4096;

/// A zero-initialised, 4 KiB-aligned byte buffer.
pub struct ABuf {
    ptr: NonNull<u8>,
    len: usize,
    layout: Layout,
}

// SAFETY: ABuf owns its allocation exclusively, like Vec<u8>; nothing in it
// is tied to a thread.
unsafe impl Send for ABuf {}
// SAFETY: shared access only hands out &[u8], like Vec<u8>.
unsafe impl Sync for ABuf {}

impl ABuf {
    /// A zeroed buffer of `len` bytes.
    pub fn zeroed(len: usize) -> ABuf {
        let layout = Layout::from_size_align(len.max(1).next_multiple_of(ALIGN), ALIGN)
            .expect("buffer size fits in isize");
        // SAFETY: the layout has non-zero size (at least ALIGN bytes).
        let p = unsafe { alloc_zeroed(layout) };
        let Some(ptr) = NonNull::new(p) else {
            std::alloc::handle_alloc_error(layout)
        };
        ABuf { ptr, len, layout }
    }

    /// Bytes the allocation holds (`len` or more).
    pub fn capacity(&self) -> usize {
        self.layout.size()
    }

    /// Make this `len` bytes long, keeping whatever the allocation holds
    /// (zeros, or bytes an earlier use wrote); `len` must be within the
    /// allocation ([`ABuf::capacity`]).
    fn resize_within(&mut self, len: usize) {
        assert!(
            len <= self.capacity(),
            "{len} bytes in a buffer of {}",
            self.capacity()
        );
        // The whole allocation was initialised by alloc_zeroed and only
        // ever written through these slices, so any len within it reads
        // initialised bytes.
        self.len = len;
    }
}

/// Most buffers a worker keeps for reuse: a stripe write at queue depth
/// 32 holds three (old data, old parity, new parity; five for RAID 6) per
/// write in flight, so 256 cover a worker's deepest queue.
const SPARES_MAX: usize = 256;

/// Largest buffer kept for reuse: 1 MiB (a row of a large stripe). Larger
/// ones are rare and go back to the allocator.
const SPARE_BYTES_MAX: usize = 1 << 20;

/// One worker's buffers kept for reuse. A RAID 5 or 6 small write takes its
/// parity and pre-read buffers from here and gives them back when done, so
/// that steady writing allocates nothing: freeing them per write let the
/// allocator trim its heap and fault the pages in again on the next write
/// (`bench/real_vs_fio.sh raid5-write`: 14 µs of kernel time per member
/// I/O against fio's 10, with a fifth of raidlab's own CPU time in malloc,
/// free and the zeroing of fresh pages).
#[derive(Default)]
pub struct Spares {
    free: std::cell::RefCell<Vec<ABuf>>,
}

impl Spares {
    /// A zeroed buffer of `len` bytes: a kept one large enough, or a new one.
    pub fn take(&self, len: usize) -> ABuf {
        let mut b = self.take_any(len);
        b.fill(0);
        b
    }

    /// A buffer of `len` bytes whose contents are whatever an earlier use
    /// left (initialised, but not zeroed): for a caller that overwrites
    /// every byte before it reads any or hands the buffer to a write (a
    /// member read's destination, parity computed over the whole row), so
    /// that steady writing pays no memset per buffer.
    pub fn take_any(&self, len: usize) -> ABuf {
        let mut free = self.free.borrow_mut();
        match free.iter().rposition(|b| b.capacity() >= len) {
            Some(i) => {
                let mut b = free.swap_remove(i);
                b.resize_within(len);
                b
            }
            None => ABuf::zeroed(len),
        }
    }

    /// Keep `b` for a later [`Spares::take`] (while fewer than
    /// [`SPARES_MAX`] are kept and it is at most [`SPARE_BYTES_MAX`]).
    pub fn give(&self, b: ABuf) {
        let mut free = self.free.borrow_mut();
        if free.len() < SPARES_MAX && b.capacity() <= SPARE_BYTES_MAX {
            free.push(b);
        }
    }

    /// Keep every buffer of `bufs`.
    pub fn give_all(&self, bufs: impl IntoIterator<Item = ABuf>) {
        for b in bufs {
            self.give(b);
        }
    }
}

impl Deref for ABuf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: ptr is valid for layout.size() >= len initialised (zeroed)
        // bytes for as long as self lives, and &self prevents mutation.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl DerefMut for ABuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in deref, and &mut self makes this the only reference.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl AsRef<[u8]> for ABuf {
    fn as_ref(&self) -> &[u8] {
        self
    }
}

impl Drop for ABuf {
    fn drop(&mut self) {
        // SAFETY: allocated in `zeroed` with exactly this layout.
        unsafe { dealloc(self.ptr.as_ptr(), self.layout) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_and_zeroed() {
        for len in [0, 1, 512, 4096, 70000] {
            let mut b = ABuf::zeroed(len);
            assert_eq!(b.len(), len);
            assert_eq!(b.as_ptr() as usize % ALIGN, 0);
            assert!(b.iter().all(|&x| x == 0));
            b.fill(7);
            assert!(b.iter().all(|&x| x == 7));
        }
    }

    #[test]
    fn spares_come_back_zeroed_and_stay_bounded() {
        let s = Spares::default();
        let mut a = s.take(4096);
        a.fill(9);
        let at = a.as_ptr();
        s.give(a);
        let b = s.take(1000);
        assert_eq!(b.as_ptr(), at, "the kept buffer is reused");
        assert_eq!(b.len(), 1000);
        assert!(b.iter().all(|&x| x == 0), "reused buffers are zeroed");
        let mut d = b;
        d.fill(5);
        s.give(d);
        let e = s.take_any(4096);
        assert_eq!(e.len(), 4096, "take_any may lengthen within the allocation");
        assert!(
            e[..1000].iter().all(|&x| x == 5),
            "take_any keeps the bytes"
        );
        s.give(e);
        let c = s.take(8192);
        assert_ne!(c.as_ptr(), at, "a larger request gets a new buffer");
        s.give_all((0..SPARES_MAX + 10).map(|_| ABuf::zeroed(4096)));
        assert_eq!(s.free.borrow().len(), SPARES_MAX);
        s.give(ABuf::zeroed(SPARE_BYTES_MAX + 1));
        assert!(s
            .free
            .borrow()
            .iter()
            .all(|b| b.capacity() <= SPARE_BYTES_MAX));
    }
}
