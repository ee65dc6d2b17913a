//! Property tests of the RAID layouts.

use proptest::prelude::*;
use raidlab_layout::gf;
use raidlab_layout::{ArrayLayout, Geometry, Level, WriteKind};
use std::collections::HashSet;

fn level() -> impl Strategy<Value = Level> {
    prop_oneof![
        Just(Level::Raid0),
        Just(Level::Raid1),
        Just(Level::Raid4),
        Just(Level::Raid5),
        Just(Level::Raid6),
        Just(Level::Raid10),
        Just(Level::Concat)
    ]
}

/// A parity level by `pick`: RAID 4, 5, or 6 where `n` allows it.
fn parity_level(pick: u8, n: usize) -> Level {
    match pick % 3 {
        0 => Level::Raid4,
        2 if n >= 4 => Level::Raid6,
        _ => Level::Raid5,
    }
}

fn layout() -> impl Strategy<Value = ArrayLayout> {
    prop_oneof![
        Just(ArrayLayout::LeftSymmetric),
        Just(ArrayLayout::LeftAsymmetric),
        Just(ArrayLayout::RightSymmetric),
        Just(ArrayLayout::RightAsymmetric)
    ]
}

/// RAID 10's copy layouts.
const MIRROR_LAYOUTS: [ArrayLayout; 3] =
    [ArrayLayout::Near2, ArrayLayout::Far2, ArrayLayout::Offset2];

fn geometry() -> impl Strategy<Value = Geometry> {
    (
        level(),
        4usize..9,
        0u32..3,
        layout(),
        0usize..3,
        proptest::collection::vec(8u64..24, 9),
    )
        .prop_map(|(lvl, n, cshift, lay, mirror, sizes)| {
            let chunk = 512u64 << cshift;
            let sizes: Vec<u64> = sizes[..n].iter().map(|s| s * 1024).collect();
            let lay = if lvl == Level::Raid10 {
                MIRROR_LAYOUTS[mirror]
            } else {
                lay
            };
            Geometry::new(lvl, chunk, lay, &sizes).unwrap()
        })
}

/// A RAID 10 of 2 to 8 members in any of its layouts.
fn raid10() -> impl Strategy<Value = Geometry> {
    (
        2usize..9,
        0u32..3,
        0usize..3,
        proptest::collection::vec(4u64..24, 8),
    )
        .prop_map(|(n, cshift, lay, sizes)| {
            let chunk = 512u64 << cshift;
            let sizes: Vec<u64> = sizes[..n].iter().map(|s| s * 1024).collect();
            Geometry::new(Level::Raid10, chunk, MIRROR_LAYOUTS[lay], &sizes).unwrap()
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Every volume block maps to exactly one data location, and back.
    #[test]
    fn every_block_maps_to_one_location_and_back(geo in geometry()) {
        let bs = 512u64;
        let mut seen = HashSet::new();
        for b in 0..geo.capacity() / bs {
            let (m, off) = geo.locate(b * bs);
            prop_assert!(seen.insert((m, off)), "two blocks share member {} offset {}", m, off);
            prop_assert_eq!(geo.reverse(m, off), Some(b * bs));
        }
        // Member locations that reverse-map are exactly the data locations.
        let mut back = 0u64;
        for m in 0..geo.members() {
            let size = if geo.level() == Level::Concat { u64::MAX } else { geo.member_size() };
            let mut off = 0;
            while off < size.min(64 * 1024) {
                if let Some(v) = geo.reverse(m, off) {
                    prop_assert_eq!(geo.locate(v), (m, off));
                    back += 1;
                }
                off += bs;
            }
        }
        prop_assert!(back <= geo.capacity() / bs);
    }

    /// Pieces tile the extent exactly.
    #[test]
    fn pieces_tile_extents(geo in geometry(), a in 0u64..1000, l in 1u64..200) {
        let cap = geo.capacity();
        let off = (a * 512) % cap;
        let len = (l * 512).min(cap - off);
        let mut v = Vec::new();
        geo.pieces(off, len, &mut v);
        let mut pos = off;
        for p in &v {
            prop_assert_eq!(p.vol_off, pos);
            prop_assert_eq!(geo.locate(p.vol_off), (p.member as usize, p.member_off));
            pos += p.len;
        }
        prop_assert_eq!(pos, off + len);
    }

    /// Parity rotates as the layout says: each member holds P once every n
    /// stripes (and Q once for raid6), never on a data member of that stripe.
    #[test]
    fn parity_rotates(n in 3usize..10, lay in layout(), r6 in any::<bool>()) {
        let lvl = if r6 && n >= 4 { Level::Raid6 } else { Level::Raid5 };
        let geo = Geometry::new(lvl, 4096, lay, &vec![1 << 20; n]).unwrap();
        let mut pcount = vec![0; n];
        let mut qcount = vec![0; n];
        for s in 0..n as u64 {
            let (p, q) = geo.parity_of(s);
            pcount[p] += 1;
            if let Some(q) = q { qcount[q] += 1; prop_assert_ne!(p, q); }
            let expect_p = match lay {
                ArrayLayout::LeftSymmetric | ArrayLayout::LeftAsymmetric => n - 1 - s as usize,
                _ => s as usize,
            };
            prop_assert_eq!(p, expect_p);
            let mut members: Vec<usize> = (0..geo.data_disks()).map(|k| geo.data_member(s, k)).collect();
            members.push(p);
            if let Some(q) = q { members.push(q); }
            members.sort();
            members.dedup();
            prop_assert_eq!(members.len(), n, "data and parity cover each member once");
        }
        prop_assert!(pcount.iter().all(|&c| c == 1));
        if lvl == Level::Raid6 { prop_assert!(qcount.iter().all(|&c| c == 1)); }
    }

    /// RAID 4 keeps parity on its last member and data chunk k of every
    /// stripe on member k (md's level 4), whatever layout is named.
    #[test]
    fn raid4_parity_stays_on_the_last_member(n in 3usize..10, lay in layout(), s in 0u64..1000) {
        let geo = Geometry::new(Level::Raid4, 4096, lay, &vec![1 << 20; n]).unwrap();
        prop_assert_eq!(geo.parity_of(s), (n - 1, None));
        for k in 0..n - 1 {
            prop_assert_eq!(geo.data_member(s, k), k);
            let vol = (s * (n as u64 - 1) + k as u64) * 4096;
            prop_assert_eq!(geo.locate(vol), (k, s * 4096));
        }
        prop_assert_eq!(geo.reverse(n - 1, s * 4096), None);
    }

    /// A stripe's lost member is recomputed exactly from the others: one for
    /// raid5 (XOR), any two for raid6 (P+Q over GF(2^8)).
    #[test]
    fn lost_members_are_recomputed(nd in 2usize..10, len in 1usize..64, seed in any::<u64>(), x in 0usize..10, y in 0usize..10) {
        let mut r = raidlab_core_free_rng(seed);
        let data: Vec<Vec<u8>> = (0..nd).map(|_| (0..len).map(|_| (r() & 0xff) as u8).collect()).collect();
        let refs: Vec<&[u8]> = data.iter().map(|v| v.as_slice()).collect();
        let (mut p, mut q) = (vec![0; len], vec![0; len]);
        gf::gen_pq(&refs, &mut p, &mut q);
        // RAID 5: one lost data block from P.
        let lost = x % nd;
        let mut rebuilt = p.clone();
        for (i, d) in data.iter().enumerate() { if i != lost { for k in 0..len { rebuilt[k] ^= d[k]; } } }
        prop_assert_eq!(&rebuilt, &data[lost]);
        // RAID 6: two lost data blocks.
        let (a, b) = (x % nd, y % nd);
        if a != b {
            let (a, b) = (a.min(b), a.max(b));
            let mut broken = data.clone();
            broken[a].fill(0);
            broken[b].fill(0xAA);
            gf::recover_two(&mut broken, a, b, &p, &q);
            prop_assert_eq!(&broken, &data);
        }
        // RAID 6: one data block and P lost.
        let mut broken = data.clone();
        broken[lost].fill(0);
        let p2 = gf::recover_data_with_q(&mut broken, lost, &q);
        prop_assert_eq!(&broken, &data);
        prop_assert_eq!(p2, p);
    }

    /// Write plans: writes cover exactly the data written plus parity rows;
    /// full-stripe writes read nothing.
    #[test]
    fn write_plans_cover_the_write(n in 3usize..8, a in 0u64..64, l in 1u64..64, pick in any::<u8>()) {
        let lvl = parity_level(pick, n);
        let geo = Geometry::new(lvl, 4096, ArrayLayout::LeftSymmetric, &vec![1 << 20; n]).unwrap();
        let off = a * 1024;
        let len = l * 1024;
        let mut plan = Vec::new();
        geo.write_plan(off, len, &mut plan);
        let mut data_bytes = 0;
        for op in &plan {
            let (p, q) = geo.parity_of(op.stripe);
            for w in &op.writes {
                if w.member as usize != p && Some(w.member as usize) != q {
                    data_bytes += w.len;
                    prop_assert!(geo.reverse(w.member as usize, w.offset).is_some());
                }
            }
            if op.kind == WriteKind::FullStripe { prop_assert!(op.reads.is_empty()); }
            else { prop_assert!(!op.reads.is_empty()); }
        }
        prop_assert_eq!(data_bytes, len);
    }

    #[test]
    fn rmw_plans_write_what_md_writes_and_read_it_first(n in 3usize..8, a in 0u64..64, l in 1u64..64, pick in any::<u8>()) {
        let lvl = parity_level(pick, n);
        let geo = Geometry::new(lvl, 4096, ArrayLayout::LeftSymmetric, &vec![1 << 20; n]).unwrap();
        let (off, len) = (a * 1024, l * 1024);
        let (mut md, mut rmw) = (Vec::new(), Vec::new());
        geo.write_plan(off, len, &mut md);
        geo.rmw_plan(off, len, &mut rmw);
        prop_assert_eq!(md.len(), rmw.len());
        for (m, r) in md.iter().zip(&rmw) {
            prop_assert_eq!(r.kind, WriteKind::ReadModifyWrite);
            prop_assert_eq!(&m.writes, &r.writes, "same data and parity written");
            prop_assert_eq!(&r.reads, &r.writes, "old contents of all it writes read first");
        }
    }
}

/// A tiny deterministic generator so the test needs no other crate.
fn raidlab_core_free_rng(mut s: u64) -> impl FnMut() -> u64 {
    move || {
        s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = s;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Every RAID 10 chunk has two copies on two members, inside the used
    /// size, each the other's mirror, and no two chunks share a place.
    #[test]
    fn raid10_copies_pair_up_and_never_collide(geo in raid10()) {
        let c = geo.chunk();
        let mut places = HashSet::new();
        let mut copies = Vec::new();
        for k in 0..geo.capacity() / c {
            let (m, o) = geo.locate(k * c);
            prop_assert_eq!(geo.reverse(m, o), Some(k * c));
            geo.copies(m, o, &mut copies);
            prop_assert_eq!(copies.len(), 2);
            let (p, q) = (copies[0], copies[1]);
            prop_assert_ne!(p.0, q.0, "two copies on one member");
            for &(mm, oo) in &copies {
                prop_assert!(oo < geo.member_size());
                prop_assert!(places.insert((mm, oo / c)), "chunk row used twice");
                prop_assert_eq!(geo.held(mm, oo), Some(k * c));
            }
            prop_assert_eq!(geo.mirror_of(p.0, p.1), Some(q));
            prop_assert_eq!(geo.mirror_of(q.0, q.1), Some(p));
        }
        // What no chunk uses holds nothing.
        for m in 0..geo.members() {
            for row in 0..geo.member_size() / c {
                if !places.contains(&(m, row)) {
                    prop_assert_eq!(geo.held(m, row * c), None);
                }
            }
        }
    }
}
