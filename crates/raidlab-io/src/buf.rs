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
}
