//! The real engine end to end, continued: md metadata read by mdadm,
//! foreign members refused, resync, scrub, rebuild, member failures,
//! bitmaps, spares and verify state.

mod realc;
use realc::*;

/// Every member raidlab creates carries an md 1.2 superblock that mdadm
/// reads, with the level, member count, role, chunk and layout the
/// expression gave, a correct checksum and a clean state.
#[test]
#[cfg_attr(raidlab_no_mdadm, ignore = "mdadm is not installed here")]
fn mdadm_examines_every_member() {
    let cases: &[(&str, usize, &[&str])] = &[
        (
            "raid0[stripe=64k]",
            3,
            &["Raid Level : raid0", "Chunk Size : 64K"],
        ),
        ("raid1", 2, &["Raid Level : raid1"]),
        (
            "raid5[stripe=16k,layout=right-asymmetric]",
            4,
            &[
                "Raid Level : raid5",
                "Layout : right-asymmetric",
                "Chunk Size : 16K",
            ],
        ),
        (
            "raid6",
            5,
            &[
                "Raid Level : raid6",
                "Layout : left-symmetric",
                "Chunk Size : 512K",
            ],
        ),
        (
            "raid10[stripe=32k]",
            4,
            &["Raid Level : raid10", "Layout : near=2"],
        ),
        (
            "raid10[stripe=32k,layout=f2]",
            4,
            &["Raid Level : raid10", "Layout : far=2"],
        ),
        (
            "raid10[stripe=16k,layout=o2]",
            3,
            &["Raid Level : raid10", "Layout : offset=2"],
        ),
        ("concat", 2, &["Raid Level : linear"]),
    ];
    for (array, n, want) in cases {
        let d = TempDir::new("examine");
        let f = d.files(*n);
        let expr = format!("{array}({})", f.join(","));
        let r = go(
            &expr,
            "rw=write bs=64k size=1m",
            &opts(EngineKind::Psync, false),
        );
        let uuid = r
            .real
            .as_ref()
            .unwrap()
            .array
            .as_ref()
            .unwrap()
            .uuid
            .clone();
        for (i, p) in f.iter().enumerate() {
            let o = std::process::Command::new(mdadm())
                .args(["--examine", p])
                .output()
                .expect("run mdadm");
            let text = String::from_utf8_lossy(&o.stdout);
            assert!(o.status.success(), "{expr}: {text}");
            let text: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
            for w in want.iter().copied().chain([
                "Version : 1.2",
                "- correct",
                "State : clean",
                &format!("Raid Devices : {n}"),
                &format!("Device Role : Active device {i}"),
                &format!("Array UUID : {uuid}"),
            ]) {
                assert!(text.contains(w), "{expr}, member {i}: no '{w}' in {text}");
            }
            if array.starts_with("raid10") {
                let capacity = same_raid10_size(&expr, &text, *n);
                // md's RAID 10 bitmap covers the volume, not a member.
                let all = std::fs::read(p).unwrap();
                let at = (raidlab_io::md::SUPER_OFFSET + raidlab_io::md::BITMAP_OFFSET) as usize;
                let bm = raidlab_io::md::Bitmap::decode(&all[at..at + 4096]).expect("a bitmap");
                assert_eq!(bm.sync_size * 512, capacity, "{expr}: bitmap sync size");
            }
        }
    }
    // Nested: each leaf describes its own array; the mirror's members are
    // the stripes, so their leaves say raid0.
    let d = TempDir::new("examine-nested");
    let f = d.files(4);
    let expr = format!("raid1(raid0({},{}), raid0({},{}))", f[0], f[1], f[2], f[3]);
    go(
        &expr,
        "rw=write bs=64k size=1m",
        &opts(EngineKind::Psync, false),
    );
    let o = std::process::Command::new(mdadm())
        .args(["--examine", &f[3]])
        .output()
        .expect("run mdadm");
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("raid0") && text.contains("raidlab:1"),
        "{text}"
    );
}

/// mdadm works a RAID 10's size out from its layout and the members' used
/// size itself: it must be the size raidlab's geometry gives (returned).
fn same_raid10_size(expr: &str, text: &str, n: usize) -> u64 {
    let field = |key: &str| -> u64 {
        let at = text
            .find(key)
            .unwrap_or_else(|| panic!("{expr}: no {key} in {text}"));
        text[at + key.len()..]
            .split_whitespace()
            .next()
            .map(|v| v.trim_end_matches('K'))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{expr}: {key} unreadable in {text}"))
    };
    // mdadm leaves the used size out where it is all the device offers.
    let used = if text.contains("Used Dev Size : ") {
        field("Used Dev Size : ")
    } else {
        field("Avail Dev Size : ")
    } * 512;
    let chunk = field("Chunk Size : ") * 1024;
    let layout = ["near=2", "far=2", "offset=2"]
        .iter()
        .zip([ArrayLayout::Near2, ArrayLayout::Far2, ArrayLayout::Offset2])
        .find(|(w, _)| text.contains(&format!("Layout : {w}")))
        .map(|(_, l)| l)
        .expect("a RAID 10 layout");
    let geo = Geometry::new(Level::Raid10, chunk, layout, &vec![used; n]).unwrap();
    assert_eq!(geo.member_size(), used, "{expr}: used size in whole rows");
    assert_eq!(
        field("Array Size : ") * 1024,
        geo.capacity(),
        "{expr}: mdadm's array size is the geometry's"
    );
    geo.capacity()
}

/// Members that are not where the expression puts them are refused before
/// anything is written, each by name: reordered, another layout, chunk or
/// level, a blank (misspelt) member, a member of another array, and a
/// stale member that missed degraded writes.
#[test]
fn members_that_do_not_belong_are_refused() {
    let d = TempDir::new("belong");
    let f = d.files(6);
    let o = opts(EngineKind::Psync, true);
    let raid6 = |opts: &str, m: [&str; 4]| format!("raid6{opts}({})", m.join(","));
    let healthy = raid6("[stripe=16k]", [&f[0], &f[1], &f[2], &f[3]]);
    go(&healthy, "rw=write bs=32k size=1m", &o);
    let refused = |expr: &str, wl: &str, want: &str| {
        let w = Workload::parse(wl).unwrap();
        let e = run(expr, &w, 1, &o)
            .err()
            .unwrap_or_else(|| panic!("{expr} ran"));
        assert_eq!(e.kind(), raidlab_io::ErrorKind::Refused, "{e}");
        assert!(e.to_string().contains(want), "{expr}: {e}");
    };
    let read = "rw=read bs=16k size=1m";
    refused(
        &raid6("[stripe=16k]", [&f[1], &f[0], &f[2], &f[3]]),
        read,
        "reordered",
    );
    refused(
        &raid6("[stripe=16k,layout=ra]", [&f[0], &f[1], &f[2], &f[3]]),
        read,
        "layout=left-symmetric",
    );
    refused(
        &raid6("[stripe=32k]", [&f[0], &f[1], &f[2], &f[3]]),
        read,
        "stripe=16k",
    );
    refused(
        &format!("raid5[stripe=16k]({},{},{},{})", f[0], f[1], f[2], f[3]),
        read,
        "raid6 array",
    );
    // A misspelt member: a write run would create it blank.
    refused(
        &raid6("[stripe=16k]", [&f[0], &f[1], &f[2], &f[4]]),
        "rw=write bs=32k size=1m",
        "holds no array metadata",
    );
    assert!(
        !Path::new(&f[4]).exists(),
        "a refused run leaves no file behind"
    );
    // A member of another array.
    go(
        &format!("raid1({},{})", f[4], f[5]),
        "rw=write bs=32k size=1m",
        &o,
    );
    refused(
        &raid6("[stripe=16k]", [&f[0], &f[1], &f[2], &f[4]]),
        read,
        "raid1 array",
    );
    // Nothing refused was written: the array still verifies.
    let (checked, bad) = mismatches(&go(&healthy, read, &o));
    assert!(checked > 0 && bad == 0);
    // Degraded writes leave the absent member stale.
    go(
        &raid6("[stripe=16k]", [&f[0], &f[1], &f[2], "missing"]),
        "rw=write bs=32k size=1m",
        &o,
    );
    refused(&healthy, read, "is stale");
    let degraded = raid6("[stripe=16k]", [&f[0], &f[1], &f[2], "missing"]);
    let (checked, bad) = mismatches(&go(&degraded, read, &o));
    assert!(checked > 0 && bad == 0);
}

/// The write hole: a crash between a stripe's data write and its parity
/// write leaves the parity stale, and a member lost later would be rebuilt
/// from it wrong. raidlab refuses to run such an array degraded, and
/// resynchronises it when it runs whole; then every member can be lost and
/// the data still reads back.
#[test]
fn an_unclean_array_is_resynced_before_it_runs_degraded() {
    let d = TempDir::new("resync");
    let f = d.files(3);
    let o = opts(EngineKind::Psync, true);
    let chunk = 16 << 10;
    let expr = format!("raid5[stripe=16k]({})", f.join(","));
    go(&expr, "rw=write bs=32k size=1m", &o);
    // The crash: parity of every stripe left stale (as if the data writes
    // landed and the parity writes did not), and the array marked active.
    let sizes: Vec<u64> = f.iter().map(|p| data_area(p).len() as u64).collect();
    let g = Geometry::new(Level::Raid5, chunk, ArrayLayout::LeftSymmetric, &sizes).unwrap();
    for s in 0..g.member_size() / chunk {
        let (p, _) = g.parity_of(s);
        let mut all = std::fs::read(&f[p]).unwrap();
        let at = data_offset(&f[p]) + (s * chunk) as usize;
        all[at + 100] ^= 0xff;
        std::fs::write(&f[p], all).unwrap();
    }
    f.iter().for_each(|p| mark_dirty(p));
    let degraded = |i: usize| {
        let mut m: Vec<&str> = f.iter().map(String::as_str).collect();
        m[i] = "missing";
        format!("raid5[stripe=16k]({})", m.join(","))
    };
    let w = Workload::parse("rw=read bs=16k size=1m").unwrap();
    let e = run(&degraded(0), &w, 1, &o).err().expect("refused");
    assert!(e.to_string().contains("not stopped cleanly"), "{e}");
    // Whole: resynchronised first, then read.
    let r = go(&expr, "rw=read bs=16k size=1m", &o);
    let meta = r.real.as_ref().unwrap().array.clone().unwrap();
    assert!(meta.resynced_bytes >= 1 << 20, "{meta:?}");
    assert_eq!(mismatches(&r).1, 0);
    check_parity(&f, Level::Raid5, ArrayLayout::LeftSymmetric, chunk, 1);
    for i in 0..3 {
        let (checked, bad) = mismatches(&go(&degraded(i), "rw=read bs=16k size=1m", &o));
        assert!(checked > 0 && bad == 0, "member {i} lost: {bad} bad");
    }
}

/// A read run over blank members reads them as they are, from their
/// first byte, and writes nothing (no metadata appears); `create` asks for
/// new metadata, which it then writes clean.
#[test]
fn a_read_run_over_blank_members_reads_them_bare() {
    let d = TempDir::new("blank-read");
    let f = d.files(2);
    for p in &f {
        std::fs::write(p, vec![0u8; 4 << 20]).unwrap();
    }
    let expr = format!("raid0[stripe=64k]({})", f.join(","));
    let w = Workload::parse("rw=randread bs=4k size=1m").unwrap();
    let r = run(&expr, &w, 1, &RunOptions::default()).unwrap().result;
    let real = r.real.unwrap();
    assert!(real.array.is_none() && real.members.iter().all(|m| m.data_offset == 0));
    assert!(
        raidlab_io::meta::examine(Path::new(&f[0]))
            .unwrap()
            .is_none(),
        "nothing written"
    );
    let create = RunOptions {
        create: true,
        ..RunOptions::default()
    };
    let r = run(&expr, &w, 1, &create).unwrap().result;
    let meta = r.real.unwrap().array.unwrap();
    assert!(meta.created && meta.events == 1, "{meta:?}");
    // Now an array: later read runs assemble it.
    let again = run(&expr, &w, 1, &RunOptions::default()).unwrap().result;
    assert!(!again.real.unwrap().array.unwrap().created);
}

/// Redundant arrays the scrub and rebuild tests run over: (level, array
/// options before the stripe, members), md's three RAID 10 layouts among
/// them.
const PARITY_AND_COPIES: &[(&str, &str, usize)] = &[
    ("raid5", "", 4),
    ("raid6", "", 5),
    ("raid10", "", 4),
    ("raid10", "layout=f2,", 4),
    ("raid10", "layout=o2,", 3),
];

/// Scrubbing: every single-byte corruption of data, parity (P or Q) or a
/// mirror copy is found by check — one 4 KiB block, mismatch_cnt 8, on
/// the member and at the offset corrupted — and repair restores every
/// member byte for byte (RAID 6 locates a bad data member by P and Q;
/// RAID 5 and mirrors tell the damaged block by its verify checksums).
#[test]
fn check_finds_and_repair_fixes_every_single_byte_corruption() {
    for &(level, opt, n) in PARITY_AND_COPIES {
        let d = TempDir::new(&format!("scrub-{level}-{n}"));
        let f = d.files(n);
        let members: Vec<String> = f.iter().map(|p| format!("{p}[size=3m]")).collect();
        let expr = format!("{level}[{opt}stripe=16k]({})", members.join(","));
        let plain = format!("{level}[{opt}stripe=16k]({})", f.join(","));
        let level = format!("{level}[{opt}]");
        // 16k divides every volume here: the whole volume is written.
        go(&expr, "rw=write bs=16k", &opts(EngineKind::Psync, true));
        let clean = raidlab_io::scrub(&plain, false, false).unwrap();
        assert_eq!(clean.mismatch_cnt, 0, "{level}: {clean:?}");
        let snapshot: Vec<Vec<u8>> = f.iter().map(|p| std::fs::read(p).unwrap()).collect();
        let used = {
            let all = &snapshot[0];
            let sb = raidlab_io::md::Superblock::decode(&all[4096..8192])
                .unwrap()
                .unwrap();
            (sb.data_offset * 512) as usize..((sb.data_offset + sb.size) * 512) as usize
        };
        let mut rng = 0x9e37_79b9_7f4a_7c15u64;
        for m in 0..n {
            for _ in 0..6 {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                let at = used.start + (rng as usize) % used.len();
                let mut bytes = snapshot[m].clone();
                bytes[at] ^= 1 << (rng >> 60 & 7);
                std::fs::write(&f[m], &bytes).unwrap();
                let found = raidlab_io::scrub(&plain, false, false).unwrap();
                assert_eq!(
                    found.mismatch_cnt, 8,
                    "{level} member {m} byte {at}: {found:?}"
                );
                let mm = &found.mismatches[0];
                assert_eq!(
                    mm.member.as_deref(),
                    Some(f[m].as_str()),
                    "{level} byte {at}: {mm:?}"
                );
                assert_eq!(mm.offset, (at as u64) & !4095, "{level}: {mm:?}");
                let fixed = raidlab_io::scrub(&plain, true, false).unwrap();
                assert_eq!(fixed.mismatch_cnt, 8);
                for (p, want) in f.iter().zip(&snapshot) {
                    // Only the superblock's data area matters: compare it.
                    let now = std::fs::read(p).unwrap();
                    assert!(
                        now[used.clone()] == want[used.clone()],
                        "{level}: repair of member {m} byte {at} left {p} different"
                    );
                }
            }
        }
        let r = go(&plain, "rw=read bs=16k", &opts(EngineKind::Psync, true));
        let (checked, bad) = mismatches(&r);
        assert!(
            checked > 0 && bad == 0,
            "{level}: {checked} {bad} {:?}",
            r.real.as_ref().unwrap().verify
        );
    }
}

/// Rebuild: a blank replacement (a new file) and a stale member (missing
/// while the array was written) are rebuilt from the rest of the array;
/// then, with another member missing, every block still verifies, and a
/// check finds nothing. The rate limit holds.
#[test]
fn rebuilt_members_carry_the_array() {
    let none = |_: u64, _: u64| {};
    for &(level, opt, n) in PARITY_AND_COPIES.iter().chain(&[("raid1", "", 3)]) {
        let d = TempDir::new(&format!("rebuild-{level}-{n}"));
        let f = d.files(n);
        let with = |missing: &[usize]| {
            let m: Vec<&str> = (0..n)
                .map(|i| {
                    if missing.contains(&i) {
                        "missing"
                    } else {
                        &f[i]
                    }
                })
                .collect();
            format!("{level}[{opt}stripe=16k]({})", m.join(","))
        };
        let o = opts(EngineKind::Psync, true);
        let all = with(&[]);
        go(&all, "rw=write bs=16k size=1m", &o);
        // A blank replacement for member 1.
        std::fs::remove_file(&f[1]).unwrap();
        let r = raidlab_io::rebuild(&all, None, false, &none).unwrap();
        assert_eq!(r.rebuilt, vec![f[1].clone()], "{level}");
        // Member 2 misses writes, then comes back stale and is rebuilt.
        go(&with(&[2]), "rw=randwrite bs=4k size=1m", &o);
        let w = Workload::parse("rw=read bs=16k size=1m").unwrap();
        assert!(
            run(&all, &w, 1, &o).is_err(),
            "{level}: stale member accepted"
        );
        let r = raidlab_io::rebuild(&all, None, false, &none).unwrap();
        assert_eq!(r.rebuilt, vec![f[2].clone()], "{level}");
        assert_eq!(
            raidlab_io::scrub(&all, false, false).unwrap().mismatch_cnt,
            0
        );
        // Lose another member: the rebuilt ones carry their share.
        for lost in [0, 3.min(n - 1)] {
            let (checked, bad) = mismatches(&go(&with(&[lost]), "rw=read bs=16k size=1m", &o));
            assert!(
                checked > 0 && bad == 0,
                "{level} without member {lost}: {bad} bad"
            );
        }
    }
    // The rate limit: 2 MB/s for a member of about 0.5 MB takes 0.25 s.
    let d = TempDir::new("rebuild-rate");
    let f = d.files(3);
    let all = format!("raid1({})", f.join(","));
    go(
        &all,
        "rw=write bs=16k size=512k",
        &opts(EngineKind::Psync, false),
    );
    std::fs::remove_file(&f[0]).unwrap();
    let r = raidlab_io::rebuild(&all, Some(2e6), false, &none).unwrap();
    assert!(r.seconds >= r.bytes as f64 / 2e6 * 0.95, "{r:?}");
}

/// A member that fails mid-run (an injected fault: the member's I/O
/// errors after some operations, or on a bad range) is failed and the run
/// carries on degraded, reporting it; no acknowledged write is lost; the
/// failed member is stale afterwards, and a rebuild brings it back. An
/// array that cannot lose the member fails the run.
#[test]
fn members_failing_mid_run_leave_the_array_degraded() {
    let none = |_: u64, _: u64| {};
    for (level, n, lose) in [
        ("raid5", 4, vec![1]),
        ("raid6", 5, vec![1, 3]),
        ("raid10", 4, vec![2]),
    ] {
        let d = TempDir::new(&format!("fail-{level}"));
        let f = d.files(n);
        let o = opts(EngineKind::Psync, true);
        let expr = |extra: &dyn Fn(usize) -> String| {
            let m: Vec<String> = (0..n).map(|i| format!("{}{}", f[i], extra(i))).collect();
            format!("{level}[stripe=16k]({})", m.join(","))
        };
        let plain = expr(&|_| String::new());
        go(&plain, "rw=write bs=16k size=1m", &o);
        let faulty = expr(&|i| {
            if lose.contains(&i) {
                format!("[fail_after={}]", 40 + 30 * i)
            } else {
                String::new()
            }
        });
        let r = go(&faulty, "rw=randwrite bs=4k iodepth=4 size=1m", &o);
        let members = &r.real.as_ref().unwrap().members;
        for (i, m) in members.iter().enumerate() {
            assert_eq!(
                m.failed.is_some(),
                lose.contains(&i),
                "{level} member {i}: {m:?}"
            );
        }
        assert!(members[lose[0]]
            .failed
            .as_ref()
            .unwrap()
            .contains("injected fault"));
        // Every write acknowledged is there, read without the failed members.
        let degraded = expr(&|_| String::new());
        let degraded = lose
            .iter()
            .fold(degraded, |e, &i| e.replace(&f[i], "missing"));
        let (checked, bad) = mismatches(&go(&degraded, "rw=read bs=16k size=1m", &o));
        assert!(checked > 0 && bad == 0, "{level}: {bad} bad");
        // The failed members missed writes: stale until rebuilt.
        let w = Workload::parse("rw=read bs=16k size=1m").unwrap();
        let e = run(&plain, &w, 1, &o).err().expect("stale member accepted");
        assert!(e.to_string().contains("is stale"), "{e}");
        let r = raidlab_io::rebuild(&plain, None, false, &none).unwrap();
        assert_eq!(r.rebuilt.len(), lose.len());
        let (checked, bad) = mismatches(&go(&plain, "rw=read bs=16k size=1m", &o));
        assert!(checked > 0 && bad == 0, "{level} after rebuild: {bad} bad");
    }
    // A bad range on one copy: reads there fail the copy, the other serves.
    let d = TempDir::new("fail-bad");
    let f = d.files(2);
    let o = opts(EngineKind::Psync, true);
    go(
        &format!("raid1({},{})", f[0], f[1]),
        "rw=write bs=64k size=1m",
        &o,
    );
    let at = data_offset(&f[0]) as u64;
    let r = go(
        &format!(
            "raid1({}[bad={}..{}],{})",
            f[0],
            at + 100_000,
            at + 200_000,
            f[1]
        ),
        "rw=read bs=64k size=1m",
        &o,
    );
    assert_eq!(mismatches(&r).1, 0);
    assert!(r.real.as_ref().unwrap().members[0].failed.is_some());
    // A stripe cannot lose a member: the run fails.
    let d = TempDir::new("fail-raid0");
    let f = d.files(2);
    go(
        &format!("raid0({},{})", f[0], f[1]),
        "rw=write bs=64k size=1m",
        &o,
    );
    let w = Workload::parse("rw=read bs=64k size=1m").unwrap();
    let e = run(
        &format!("raid0({}[fail_after=3],{})", f[0], f[1]),
        &w,
        1,
        &o,
    );
    assert!(e.is_err(), "a raid0 that lost a member ran");
}

/// The write-intent bitmap is md's: `mdadm -X` reads it from a member (a
/// loop device over it), clean after a run that stopped cleanly, and with
/// the chunk a failed run was writing marked dirty.
#[test]
#[cfg_attr(raidlab_no_mdadm, ignore = "mdadm is not installed here")]
#[cfg_attr(
    raidlab_no_loop,
    ignore = "no loop devices here (needs root and /dev/loop-control)"
)]
fn mdadm_reads_the_write_intent_bitmap() {
    let d = TempDir::new("bitmap");
    let f = d.files(3);
    let sized: Vec<String> = f.iter().map(|p| format!("{p}[size=512m]")).collect();
    let expr = format!("raid5[stripe=64k]({})", sized.join(","));
    let r = go(
        &expr,
        "rw=write bs=64k size=4m",
        &opts(EngineKind::Psync, false),
    );
    let uuid = r.real.unwrap().array.unwrap().uuid;
    let examine = |p: &str| {
        let l = Loop::attach(Path::new(p)).expect("a loop device");
        let o = std::process::Command::new(mdadm())
            .args(["-X", &l.0])
            .output()
            .expect("run mdadm");
        String::from_utf8_lossy(&o.stdout)
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    let text = examine(&f[0]);
    for want in [
        "Magic : 6d746962",
        "Version : 4",
        &format!("UUID : {uuid}"),
        "Chunksize : 64 MB",
        "Bitmap : 8 bits (chunks), 0 dirty",
    ] {
        assert!(text.contains(want), "no '{want}' in {text}");
    }
    // Two members fail mid-write: the run fails, the array is left active
    // with the chunk it was writing (the first) marked.
    let failing = format!(
        "raid5[stripe=64k]({},{}[fail_after=20],{}[fail_after=20])",
        f[0], f[1], f[2]
    );
    let w = Workload::parse("rw=randwrite bs=4k size=4m").unwrap();
    assert!(run(&failing, &w, 1, &opts(EngineKind::Psync, false)).is_err());
    let text = examine(&f[0]);
    assert!(text.contains("Bitmap : 8 bits (chunks), 1 dirty"), "{text}");
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]
    /// Members failing at random moments never make a run panic: it ends
    /// degraded with every failure named, or fails with one error when the
    /// array has lost its data; and whatever it acknowledged reads back.
    #[test]
    fn random_member_failures_never_panic(
        level in 0usize..5,
        faults in proptest::collection::vec(proptest::option::of(0u64..60), 5),
    ) {
        let (name, n) = [("raid0", 3), ("raid1", 3), ("raid5", 4), ("raid6", 5), ("raid10", 4)][level];
        let d = TempDir::new("chaos");
        let f = d.files(n);
        let o = opts(EngineKind::Psync, true);
        let plain = format!("{name}[stripe=16k]({})", f.join(","));
        go(&plain, "rw=write bs=16k size=512k", &o);
        let members: Vec<String> = (0..n)
            .map(|i| match faults[i] {
                Some(k) => format!("{}[fail_after={k}]", f[i]),
                None => f[i].clone(),
            })
            .collect();
        let faulty = format!("{name}[stripe=16k]({})", members.join(","));
        let w = Workload::parse("rw=randrw bs=4k iodepth=4 size=512k").unwrap();
        if let Ok(out) = run(&faulty, &w, 3, &o) {
            let real = out.result.real.unwrap();
            proptest::prop_assert_eq!(real.verify.unwrap().mismatches, 0);
            // Read back without the members that failed.
            let failed: Vec<usize> = real.members.iter().enumerate()
                .filter(|(_, m)| m.failed.is_some()).map(|(i, _)| i).collect();
            let back: Vec<&str> = (0..n)
                .map(|i| if failed.contains(&i) { "missing" } else { f[i].as_str() })
                .collect();
            let r = go(&format!("{name}[stripe=16k]({})", back.join(",")), "rw=read bs=16k size=512k", &o);
            proptest::prop_assert_eq!(mismatches(&r).1, 0);
        }
    }
}

/// Hot spares in the real engine: a spare carries md's spare role; when a
/// member is written `missing`, the spare takes its place at once, is
/// rebuilt there, and the result names the expression from then on, under
/// which every block verifies and check is clean.
#[test]
fn a_hot_spare_takes_a_missing_members_place() {
    let d = TempDir::new("spare");
    let f = d.files(5);
    let o = opts(EngineKind::Psync, true);
    let with = |m: [&str; 5]| format!("raid6[stripe=16k,spares=1]({})", m.join(","));
    let all = with([&f[0], &f[1], &f[2], &f[3], &f[4]]);
    go(&all, "rw=write bs=32k size=1m", &o);
    let spare = raidlab_io::md::Superblock::decode(&std::fs::read(&f[4]).unwrap()[4096..8192])
        .unwrap()
        .unwrap();
    assert_eq!((spare.role(), spare.raid_disks), (None, 4));
    let r = go(
        &with([&f[0], "missing", &f[2], &f[3], &f[4]]),
        "rw=read bs=16k size=1m",
        &o,
    );
    let a = r.real.as_ref().unwrap().array.clone().unwrap();
    assert_eq!(a.took_over.len(), 1, "{a:?}");
    assert_eq!(mismatches(&r).1, 0);
    let now = a.topology.expect("the expression from now on");
    assert_eq!(
        now,
        format!(
            "raid6[stripe=16k,layout=left-symmetric]({}, {}, {}, {})",
            f[0], f[4], f[2], f[3]
        )
    );
    let took = raidlab_io::md::Superblock::decode(&std::fs::read(&f[4]).unwrap()[4096..8192])
        .unwrap()
        .unwrap();
    assert_eq!(took.role(), Some(1));
    // Lose two more: the rebuilt spare carries its share.
    let (checked, bad) = mismatches(&go(
        &format!("raid6[stripe=16k]({}, {}, missing, missing)", f[0], f[4]),
        "rw=read bs=16k size=1m",
        &o,
    ));
    assert!(checked > 0 && bad == 0);
    assert_eq!(
        raidlab_io::scrub(&now, false, false).unwrap().mismatch_cnt,
        0
    );
}

/// A member that fails mid-run is replaced by a hot spare: after the
/// workload the spare is rebuilt in its place, and the array named by the
/// result reads back every acknowledged write.
#[test]
fn a_hot_spare_replaces_a_member_that_fails_mid_run() {
    let d = TempDir::new("spare-fail");
    let f = d.files(5);
    let o = opts(EngineKind::Psync, true);
    go(
        &format!("raid5[stripe=16k,spares=1]({})", f.join(",")),
        "rw=write bs=48k size=1m",
        &o,
    );
    let faulty = format!(
        "raid5[stripe=16k,spares=1]({},{},{}[fail_after=30],{},{})",
        f[0], f[1], f[2], f[3], f[4]
    );
    let r = go(&faulty, "rw=randwrite bs=4k iodepth=4 size=1m", &o);
    let real = r.real.as_ref().unwrap();
    assert!(real.members[2].failed.is_some());
    let a = real.array.clone().unwrap();
    assert_eq!(a.took_over.len(), 1, "{a:?}");
    let now = a.topology.expect("the expression from now on");
    assert!(
        now.contains(&format!("{}, {}, {}, {}", f[0], f[1], f[4], f[3])),
        "{now}"
    );
    let (checked, bad) = mismatches(&go(&now, "rw=read bs=16k size=1m", &o));
    assert!(checked > 0 && bad == 0);
    assert_eq!(
        raidlab_io::scrub(&now, false, false).unwrap().mismatch_cnt,
        0
    );
}

/// Verify across runs (fio's verify state): with `verify_state`, a write
/// run records the generation of every block it wrote; a later verified
/// read finds blocks older than recorded — a lost write — which the
/// self-describing headers alone cannot tell from current data.
#[test]
fn a_verify_state_finds_writes_lost_between_runs() {
    let d = TempDir::new("vstate");
    let f = d.files(2);
    let state = d.0.join("verify.state");
    let o = RunOptions {
        verify_state: Some(state.clone()),
        ..opts(EngineKind::Psync, true)
    };
    let expr = format!("raid1({},{})", f[0], f[1]);
    go(&expr, "rw=write bs=16k size=1m", &o);
    let before: Vec<Vec<u8>> = f.iter().map(|p| std::fs::read(p).unwrap()).collect();
    // A second run rewrites the volume, with the blocks' newer generations
    // recorded (its epoch is past every one the state holds)...
    go(&expr, "rw=write bs=16k size=1m", &o);
    // ...and then both copies lose those writes (restored to the first
    // run's data, metadata kept: only the data area changes).
    let off = data_offset(&f[0]);
    for (p, old) in f.iter().zip(&before) {
        let mut now = std::fs::read(p).unwrap();
        now[off..off + 65536].copy_from_slice(&old[off..off + 65536]);
        std::fs::write(p, now).unwrap();
    }
    let plain = opts(EngineKind::Psync, true);
    let (_, unseen) = mismatches(&go(&expr, "rw=read bs=16k size=1m", &plain));
    assert_eq!(unseen, 0, "self-describing data alone cannot tell");
    let r = go(&expr, "rw=read bs=16k size=1m", &o);
    let v = r.real.as_ref().unwrap().verify.as_ref().unwrap();
    assert_eq!(v.mismatches, 128, "64 KiB of 512-byte units");
    assert!(v.first[0].contains("stale"), "{:?}", v.first);
    // A state saved for another volume is refused.
    let other = format!(
        "raid1({},{})",
        d.0.join("x0").display(),
        d.0.join("x1").display()
    );
    let w = Workload::parse("rw=write bs=16k size=1m").unwrap();
    let e = run(&other, &w, 1, &o).err().expect("refused");
    assert!(e.to_string().contains("another volume"), "{e}");
    assert!(
        !d.0.join("x0").exists(),
        "a refused run leaves no file behind"
    );
}
