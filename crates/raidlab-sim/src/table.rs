//! Small memory-level helpers for the hot tables: a cache-line prefetch hint
//! an open-addressing map from line numbers to values whose slot can be
//! prefetched ahead of a lookup, and draws taken ahead of their use.

use raidlab_core::rng::GOLDEN_GAMMA;
use std::collections::VecDeque;

/// Whether the memory-level hints are on: prefetches here and the
/// components' `Call::Advise`. They change no result, only speed; turning
/// them off (see [`crate::set_memory_hints`]) lets a test check exactly
/// that.
static HINTS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);

/// Turn the memory-level hints on or off (for the whole process).
pub(crate) fn set_hints(on: bool) {
    HINTS.store(on, std::sync::atomic::Ordering::Relaxed);
}

/// Whether the memory-level hints are on.
#[inline]
pub(crate) fn hints() -> bool {
    HINTS.load(std::sync::atomic::Ordering::Relaxed)
}

/// Hint the CPU to bring `x`'s cache line in. Changes no result.
#[inline]
pub(crate) fn prefetch<T>(x: &T) {
    if !hints() {
        return;
    }
    #[cfg(target_arch = "x86_64")]
    // SAFETY: PREFETCHT0 is a hint: it never faults and has no effect visible
    // to the program; `x` is a valid reference anyway. SSE is part of the
    // x86_64 baseline.
    unsafe {
        use core::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>((x as *const T).cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = x;
}

/// How many random draws a warm-up takes ahead of their use: enough for the
/// prefetches of what they touch to overlap, few enough to stay within the
/// CPU's line-fill buffers (16 on the Intel cores this was measured on). A
/// machine property, not a model parameter: it changes no result.
pub(crate) const LOOKAHEAD: usize = 16;

/// A sequence of draws taken a window ahead of their use, in the same order,
/// so that what each one will touch can be loaded into the cache meanwhile
/// (the warm-ups' random writes).
pub(crate) struct Lookahead<T> {
    queue: VecDeque<T>,
    window: usize,
    left: u64,
}

impl<T: Copy> Lookahead<T> {
    /// `total` draws, taken `window` ahead.
    pub(crate) fn new(total: u64, window: usize) -> Self {
        let window = window.max(1);
        Lookahead {
            queue: VecDeque::with_capacity(window),
            window,
            left: total,
        }
    }

    /// The next draw (`None` after `total`). The window is topped up first
    /// with `draw`, and `warm` sees each new draw as it is taken.
    #[inline]
    pub(crate) fn next(&mut self, mut draw: impl FnMut() -> T, warm: impl Fn(T)) -> Option<T> {
        while self.queue.len() < self.window && self.left > 0 {
            let x = draw();
            warm(x);
            self.queue.push_back(x);
            self.left -= 1;
        }
        self.queue.pop_front()
    }
}

/// Key of a slot never used since the last rebuild, and of one whose entry
/// was removed (line numbers are byte offsets shifted right, so they never
/// reach either).
const EMPTY: u64 = u64::MAX;
const TOMB: u64 = u64::MAX - 1;
/// Fewest slots a table holds.
const MIN_SLOTS: usize = 64;

/// One slot: key and value together, aligned so that a slot of up to 32
/// bytes never straddles two cache lines (one miss per probe at most).
#[derive(Clone, Copy)]
#[repr(align(32))]
struct Slot<V> {
    key: u64,
    val: V,
}

/// Map from `u64` keys (below `u64::MAX - 1`) to values, with linear
/// probing; live and removed entries fill at most half of the slots.
///
/// A removal leaves a tombstone, so it touches only the slot it found
/// (which a prefetch brought in) and not the rest of the probe run; an
/// insertion reuses the first tombstone on its way, and a rebuild clears
/// them.
///
/// Unlike std's `HashMap`, the slot a key will be looked up in is known
/// without a probe, so [`LineTable::prefetch`] can bring it to the cache
/// while other work runs; the lookup then finds it there. It offers no
/// iteration, so nothing can depend on the order of its slots.
pub(crate) struct LineTable<V> {
    slots: Vec<Slot<V>>,
    shift: u32,
    len: usize,
    tombs: usize,
    /// The live entries while a rebuild re-inserts them. Kept between
    /// rebuilds so that a rebuild at the same size allocates nothing (a new
    /// table at each clean-up fragmented the heap, and a long run's
    /// resident size grew with its length).
    scratch: Vec<(u64, V)>,
}

impl<V: Copy + Default> Default for LineTable<V> {
    fn default() -> Self {
        Self::with_slots(MIN_SLOTS)
    }
}

impl<V: Copy + Default> LineTable<V> {
    fn with_slots(n: usize) -> Self {
        debug_assert!(n.is_power_of_two());
        LineTable {
            slots: vec![
                Slot {
                    key: EMPTY,
                    val: V::default()
                };
                n
            ],
            shift: 64 - n.trailing_zeros(),
            len: 0,
            tombs: 0,
            scratch: Vec::new(),
        }
    }

    /// Home slot of `key` (Fibonacci hashing: the top bits of one multiply).
    #[inline]
    fn home(&self, key: u64) -> usize {
        (key.wrapping_mul(GOLDEN_GAMMA) >> self.shift) as usize
    }

    #[inline]
    fn mask(&self) -> usize {
        self.slots.len() - 1
    }

    /// Slot holding `key`, if any.
    #[inline]
    fn find(&self, key: u64) -> Option<usize> {
        debug_assert!(key < TOMB);
        let mut i = self.home(key);
        loop {
            match self.slots[i].key {
                k if k == key => return Some(i),
                EMPTY => return None,
                _ => i = (i + 1) & self.mask(),
            }
        }
    }

    /// Entries held.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Every live value, in slot order (for checks that do not depend on
    /// the order, such as sums).
    pub(crate) fn values(&self) -> impl Iterator<Item = &V> {
        self.slots.iter().filter(|s| s.key < TOMB).map(|s| &s.val)
    }

    /// Start loading the slot `key` would be found in first.
    #[inline]
    pub(crate) fn prefetch(&self, key: u64) {
        prefetch(&self.slots[self.home(key)]);
    }

    /// The value of `key`.
    #[inline]
    pub(crate) fn get(&self, key: u64) -> Option<&V> {
        self.find(key).map(|i| &self.slots[i].val)
    }

    /// The value of `key`, to change.
    #[inline]
    pub(crate) fn get_mut(&mut self, key: u64) -> Option<&mut V> {
        self.find(key).map(|i| &mut self.slots[i].val)
    }

    /// The value of `key`, inserted as `V::default()` if absent.
    #[inline]
    pub(crate) fn get_or_default(&mut self, key: u64) -> &mut V {
        debug_assert!(key < TOMB);
        if (self.len + self.tombs + 1) * 2 > self.slots.len() {
            self.rebuild();
        }
        let mut i = self.home(key);
        let mut tomb = None;
        loop {
            match self.slots[i].key {
                k if k == key => return &mut self.slots[i].val,
                EMPTY => break,
                TOMB if tomb.is_none() => tomb = Some(i),
                _ => {}
            }
            i = (i + 1) & self.mask();
        }
        if let Some(t) = tomb {
            self.tombs -= 1;
            i = t;
        }
        self.len += 1;
        self.slots[i] = Slot {
            key,
            val: V::default(),
        };
        &mut self.slots[i].val
    }

    /// Remove `key` if present.
    #[inline]
    pub(crate) fn remove(&mut self, key: u64) {
        if let Some(i) = self.find(key) {
            self.slots[i].key = TOMB;
            self.len -= 1;
            self.tombs += 1;
        }
    }

    /// Make room for `n` entries in all without a rebuild (as long as
    /// nothing is removed).
    pub(crate) fn reserve(&mut self, n: usize) {
        let want = (n.max(self.len) * 8 / 3 + 1).next_power_of_two();
        if want > self.slots.len() {
            self.rehash(want);
        }
    }

    /// Re-insert the live entries without tombstones, into twice the slots
    /// if they fill three eighths or more of them. Either way at least an
    /// eighth of the slots is then free for insertions before the next
    /// rebuild, so a rebuild's cost spreads over as many insertions, and
    /// the table holds at most 16/3 slots per entry.
    fn rebuild(&mut self) {
        let n = self.slots.len();
        let n = if self.len * 8 >= n * 3 { n * 2 } else { n };
        self.rehash(n);
    }

    /// Lay the live entries out again in `n` slots (a power of two), in
    /// place: the slot vector only grows, and the entries wait in `scratch`.
    fn rehash(&mut self, n: usize) {
        debug_assert!(n.is_power_of_two() && n >= self.slots.len());
        let mut live = std::mem::take(&mut self.scratch);
        live.clear();
        live.extend(
            self.slots
                .iter()
                .filter(|s| s.key < TOMB)
                .map(|s| (s.key, s.val)),
        );
        debug_assert_eq!(live.len(), self.len, "every live entry is counted");
        let empty = Slot {
            key: EMPTY,
            val: V::default(),
        };
        self.slots.clear();
        self.slots.resize(n, empty);
        self.shift = 64 - n.trailing_zeros();
        self.len = 0;
        self.tombs = 0;
        for &(k, v) in &live {
            *self.get_or_default(k) = v;
        }
        self.scratch = live;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    #[derive(Debug, Clone)]
    enum Op {
        Set(u64, u32),
        Remove(u64),
        Get(u64),
        Reserve(usize),
    }

    fn op(keys: u64) -> impl Strategy<Value = Op> {
        prop_oneof![
            (0..keys, any::<u32>()).prop_map(|(k, v)| Op::Set(k, v)),
            (0..keys).prop_map(Op::Remove),
            (0..keys).prop_map(Op::Get),
            (0..600usize).prop_map(Op::Reserve),
        ]
    }

    proptest! {
        /// The table answers every lookup as std's map does, through growth,
        /// reservations and removals (small key ranges force long probe runs
        /// and wrap).
        #[test]
        fn behaves_like_a_hash_map(keys in 1u64..400, ops in prop::collection::vec(op(400), 0..2000)) {
            let mut t = LineTable::<u32>::default();
            let mut m = HashMap::new();
            for o in ops {
                match o {
                    Op::Set(k, v) => {
                        let k = k % keys;
                        *t.get_or_default(k) = v;
                        m.insert(k, v);
                    }
                    Op::Remove(k) => {
                        t.remove(k % keys);
                        m.remove(&(k % keys));
                    }
                    Op::Get(k) => prop_assert_eq!(t.get(k % keys), m.get(&(k % keys))),
                    Op::Reserve(n) => t.reserve(n),
                }
                prop_assert_eq!(t.len(), m.len());
            }
            for k in 0..keys {
                prop_assert_eq!(t.get(k), m.get(&k));
            }
        }
    }

    #[test]
    fn lookahead_gives_the_draws_in_order_and_warms_each_once_in_advance() {
        let mut n = 0u32;
        let warmed = std::cell::RefCell::new(Vec::new());
        let mut a = Lookahead::new(5, 3);
        let mut got = Vec::new();
        while let Some(x) = a.next(
            || {
                n += 1;
                n
            },
            |x| warmed.borrow_mut().push(x),
        ) {
            // Each draw was warmed before it is used, up to 3 ahead.
            assert_eq!(*warmed.borrow().last().unwrap(), (x + 2).min(5));
            got.push(x);
        }
        assert_eq!(got, [1, 2, 3, 4, 5]);
        assert_eq!(*warmed.borrow(), [1, 2, 3, 4, 5]);
    }

    #[test]
    fn a_new_entry_starts_at_default_and_removal_of_a_stranger_is_a_no_op() {
        let mut t = LineTable::<u64>::default();
        assert_eq!(*t.get_or_default(7), 0);
        *t.get_mut(7).unwrap() = 3;
        t.remove(8);
        assert_eq!(t.get(7), Some(&3));
        t.remove(7);
        assert_eq!(t.get(7), None);
        assert_eq!(t.len(), 0);
    }
}
