//! The real engine end to end, on member files in a temporary directory.

mod realc;
use realc::*;

#[test]
fn parity_matches_md_layout_after_random_writes() {
    let layouts = [
        ("left-symmetric", ArrayLayout::LeftSymmetric),
        ("left-asymmetric", ArrayLayout::LeftAsymmetric),
        ("right-symmetric", ArrayLayout::RightSymmetric),
        ("right-asymmetric", ArrayLayout::RightAsymmetric),
    ];
    for (i, engine) in engines().into_iter().enumerate() {
        for (j, (word, layout)) in layouts.iter().enumerate() {
            for (level, n) in [(Level::Raid5, 4), (Level::Raid6, 6)] {
                let d = TempDir::new(&format!("par{i}{j}{n}"));
                let f = d.files(n);
                let expr = format!(
                    "{}[stripe=16k,layout={word}]({})",
                    level.word(),
                    f.join(",")
                );
                // Small, partial-stripe and full-stripe writes (RMW, RCW and
                // full-stripe paths), several in flight at once.
                let wl =
                    "rw=randwrite bssplit=4k/40:8k/20:32k/20:64k/20 iodepth=8 numjobs=2 size=4m";
                let r = go(&expr, wl, &opts(engine, true));
                assert!(r.real.as_ref().unwrap().write.ios > 300);
                check_parity(&f, level, *layout, 16 << 10, 1000);
            }
        }
    }
}

/// RAID 4 is md's level 4: data chunk k of stripe s on member k at
/// `s × chunk` (written out here, not taken from the geometry), parity on
/// the last member and nothing else there; mdadm reads the superblock as
/// raid4 with no layout; a member lost is served and rebuilt from parity.
#[test]
#[cfg_attr(raidlab_no_mdadm, ignore = "mdadm is not installed here")]
fn raid4_keeps_md_level_4_layout_and_survives_a_loss() {
    let d = TempDir::new("raid4");
    let f = d.files(4);
    let chunk = 16usize << 10;
    let expr = format!("raid4[stripe=16k]({})", f.join(","));
    let wl = "rw=randwrite bssplit=4k/40:8k/20:32k/20:64k/20 iodepth=8 numjobs=2 size=4m";
    go(
        &expr,
        "rw=write bs=64k size=4m",
        &opts(EngineKind::Psync, true),
    );
    let r = go(&expr, wl, &opts(EngineKind::Psync, true));
    assert!(r.real.as_ref().unwrap().write.ios > 300);
    check_parity(
        &f,
        Level::Raid4,
        ArrayLayout::LeftSymmetric,
        chunk as u64,
        1000,
    );
    let data: Vec<Vec<u8>> = f.iter().map(|p| data_area(p)).collect();
    // Members 0–2 hold data in md's level-4 order (member 3 is their XOR,
    // which check_parity checked: an odd count of headers XORs to one).
    let mut headers = 0;
    for (m, area) in data.iter().enumerate().take(3) {
        for at in (0..area.len() - 511).step_by(512) {
            if area[at..at + 4] != *b"RLv2" {
                continue;
            }
            let addr = u64::from_le_bytes(area[at + 8..at + 16].try_into().unwrap()) as usize;
            let (s, within) = (at / chunk, at % chunk);
            assert_eq!(addr, (s * 3 + m) * chunk + within, "member {m} at {at}");
            headers += 1;
        }
    }
    assert!(headers >= 1000, "{headers} units checked");
    for p in &f {
        let o = std::process::Command::new(mdadm())
            .args(["--examine", p])
            .output()
            .expect("run mdadm");
        let text = String::from_utf8_lossy(&o.stdout);
        assert!(text.contains("Raid Level : raid4"), "{text}");
        assert!(!text.contains("Layout :"), "{text}");
    }
    // Member 1 lost: reads reconstruct it from the others and parity.
    let degraded = format!("raid4[stripe=16k]({},missing,{},{})", f[0], f[2], f[3]);
    let r = go(
        &degraded,
        "rw=read bs=16k size=4m",
        &opts(EngineKind::Psync, true),
    );
    let (checked, bad) = mismatches(&r);
    assert!(checked > 0 && bad == 0, "{checked} checked, {bad} bad");
}

#[test]
fn simulated_and_real_runs_issue_the_same_offsets() {
    // The second places each job's region as fio's offset keys do; the
    // members are created large enough for the furthest region.
    for (k, text) in [
        "rw=randrw bssplit=4k/50:16k/50 iodepth=4 numjobs=2 size=4m percentage_random=70",
        "rw=randrw bssplit=4k/50:16k/50 iodepth=4 numjobs=2 size=4m percentage_random=70 offset=1m offset_increment=2m",
    ]
    .into_iter()
    .enumerate()
    {
        let d = TempDir::new(&format!("trace{k}"));
        let f = d.files(4);
        let wl = Workload::parse(text).unwrap();
        let db = raidlab_core::preset::PresetDb::builtin();
        let topo = resolve("raid5[stripe=64k](4*x25e)", &db).unwrap();
        let (_, sim_trace) = raidlab_sim::simulate_traced(&topo, &wl, 3).unwrap();
        let regions = wl.regions(8 << 20).unwrap();
        for engine in engines() {
            let o = RunOptions {
                engine: Some(engine),
                trace: true,
                ..RunOptions::default()
            };
            let real = run(&format!("raid5[stripe=64k]({})", f.join(",")), &wl, 3, &o).unwrap();
            assert_eq!(real.trace.len(), 2);
            for (j, (r, s)) in real.trace.iter().zip(&sim_trace).enumerate() {
                // Same regions on both, so the same I/Os in the same order.
                assert!(s.len() > 100);
                assert_eq!(r, s, "{text}: job {j} ({})", engine.word());
                let g = regions[j];
                assert!(
                    s.iter().all(|io| io.offset >= g.start && io.offset + io.len as u64 <= g.end()),
                    "{text}: job {j} leaves {g:?}"
                );
            }
        }
    }
}

#[test]
fn degraded_arrays_read_back_by_reconstruction() {
    for engine in engines() {
        for (level, n, lost) in [
            ("raid5", 5, vec![2]),
            ("raid6", 6, vec![1, 4]),
            ("raid6", 6, vec![0, 5]),
        ] {
            let d = TempDir::new(&format!("deg{level}{}", lost[0]));
            let f = d.files(n);
            let healthy = format!("{level}[stripe=16k]({})", f.join(","));
            let degraded = format!(
                "{level}[stripe=16k]({})",
                f.iter()
                    .enumerate()
                    .map(|(i, p)| if lost.contains(&i) {
                        "missing".to_string()
                    } else {
                        p.clone()
                    })
                    .collect::<Vec<_>>()
                    .join(",")
            );
            let o = opts(engine, true);
            // Written healthy, read degraded.
            go(&healthy, "rw=write bs=64k iodepth=4 size=4m", &o);
            let r = go(
                &degraded,
                "rw=randread bssplit=4k/50:24k/50 iodepth=8 size=4m",
                &o,
            );
            let (checked, bad) = mismatches(&r);
            assert!(
                checked > 1000 && bad == 0,
                "{degraded}: {checked} checked, {bad} bad"
            );
            // Written degraded (survivors kept consistent), read degraded.
            go(
                &degraded,
                "rw=randwrite bssplit=4k/50:48k/50 iodepth=8 size=4m",
                &o,
            );
            let r = go(&degraded, "rw=read bs=32k iodepth=4 size=4m", &o);
            let (checked, bad) = mismatches(&r);
            assert!(
                checked == 8192 && bad == 0,
                "{degraded}: {checked} checked, {bad} bad"
            );
            // The survivors' parity is what md's layout says.
            let m = r.real.as_ref().unwrap().members.len();
            assert_eq!(m, n - lost.len());
        }
    }
}

#[test]
fn mirrors_and_nested_arrays_survive_lost_members() {
    let d = TempDir::new("nest");
    let f = d.files(6);
    let healthy = format!(
        "raid0[stripe=8k](raid1({},{}),raid10({},{},{},{}))",
        f[0], f[1], f[2], f[3], f[4], f[5]
    );
    let o = opts(EngineKind::Psync, true);
    go(&healthy, "rw=write bs=16k iodepth=4 size=2m", &o);
    let degraded = format!(
        "raid0[stripe=8k](raid1(missing,{}),raid10({},missing,{},{}))",
        f[1], f[2], f[4], f[5]
    );
    let r = go(&degraded, "rw=randread bs=4k iodepth=8 size=2m", &o);
    assert_eq!(mismatches(&r).1, 0);
    assert!(mismatches(&r).0 > 1000);
}

#[test]
fn silent_corruption_of_a_healthy_member_is_caught() {
    for engine in engines() {
        let d = TempDir::new("corrupt");
        let f = d.files(4);
        let expr = format!("raid5[stripe=16k]({})", f.join(","));
        let o = opts(engine, true);
        go(&expr, "rw=write bs=48k iodepth=2 size=3m", &o);
        // Flip payload bytes (not headers) in the middle of member 1 (data or
        // parity, whichever lies there): reads of data there must fail verify.
        let mut m1 = std::fs::read(&f[1]).unwrap();
        let at = data_offset(&f[1]) + 100_000;
        for (i, b) in m1[at..at + 20_000].iter_mut().enumerate() {
            if (100_000 + i) % 512 >= 24 {
                *b ^= 0x5a;
            }
        }
        std::fs::write(&f[1], &m1).unwrap();
        let r = go(&expr, "rw=read bs=16k iodepth=4 size=3m", &o);
        let (checked, bad) = mismatches(&r);
        assert_eq!(checked, 3 * 2048);
        // 20,000 bytes span 39-40 units; those on parity stripes are not
        // read. Those read are caught, rebuilt from parity, served and
        // written back (read-repair), each named with its member.
        let v = r.real.as_ref().unwrap().verify.as_ref().unwrap();
        assert_eq!(bad, 0, "{:?}", v.first);
        assert!(v.repaired >= 10, "{} repaired", v.repaired);
        assert!(
            v.first[0].contains("repaired from redundancy") && v.first[0].contains(&f[1]),
            "{:?}",
            v.first
        );
        // The member holds the right data again.
        let again = go(&expr, "rw=read bs=16k iodepth=4 size=3m", &o);
        let v = again.real.as_ref().unwrap().verify.as_ref().unwrap();
        assert_eq!((v.mismatches, v.repaired), (0, 0));
    }
}

#[test]
fn members_are_created_and_bad_paths_refused() {
    let d = TempDir::new("create");
    let f = d.files(3);
    let r = go(
        &format!("raid0({})", f.join(",")),
        "rw=write bs=4k size=3m",
        &RunOptions::default(),
    );
    assert_eq!(r.engine, "real");
    // Each member holds its 1 MiB share after md's data offset (2 MiB:
    // mdadm keeps four 512 KiB chunks of headroom), and says so.
    let members = &r.real.as_ref().unwrap().members;
    for (p, m) in f.iter().zip(members) {
        assert_eq!(m.data_offset, 2 << 20);
        assert_eq!(std::fs::metadata(p).unwrap().len(), (1 << 20) + (2 << 20));
    }
    let w = Workload::parse("rw=read bs=4k").unwrap();
    let err = |e: &str| {
        run(e, &w, 1, &RunOptions::default())
            .err()
            .unwrap()
            .to_string()
    };
    assert!(
        err(&format!("raid0({},{})", d.0.join("nope").display(), f[0])).contains("does not exist")
    );
    assert!(err(&format!("raid0({},{})", d.0.display(), f[0])).contains("neither a regular file"));
    assert!(err("raid0(/dev/null, ./x)").contains("neither a regular file"));
    assert!(err("adaptec5085(raid0(./a, ./b))").contains("controller"));
    // Each refusal is of its kind, and all are the input's fault.
    let kind = |e: &str| run(e, &w, 1, &RunOptions::default()).err().unwrap();
    let missing = kind(&format!("raid0({},{})", d.0.join("nope").display(), f[0]));
    // A read run does not create a member it would read blank.
    assert_eq!(missing.kind(), raidlab_io::ErrorKind::Refused);
    let wr = Workload::parse("rw=write bs=4k size=1m").unwrap();
    let pair = format!("raid0({},{})", d.0.join("new").display(), f[0]);
    // A blank member beside one of another array: a misspelt name is not
    // taken for a new member...
    let stray = run(&pair, &wr, 1, &RunOptions::default()).err().unwrap();
    assert_eq!(stray.kind(), raidlab_io::ErrorKind::Refused);
    assert!(
        stray.to_string().contains("holds no array metadata"),
        "{stray}"
    );
    // ...unless a new array is asked for.
    let create = RunOptions {
        create: true,
        ..RunOptions::default()
    };
    let created = run(&pair, &wr, 1, &create);
    assert!(created.is_ok(), "a write run creates it");
    let dir = kind(&format!("raid0({},{})", d.0.display(), f[0]));
    assert_eq!(dir.kind(), raidlab_io::ErrorKind::Refused);
    let ctrl = kind("adaptec5085(raid0(./a, ./b))");
    assert_eq!(ctrl.kind(), raidlab_io::ErrorKind::Expression);
    assert!(missing.is_input() && dir.is_input() && ctrl.is_input());
}

/// A mirror of two stripes keeps serving when one stripe has lost a
/// member: the stripe is a failed member of the mirror.
#[test]
fn a_mirror_of_stripes_reads_through_a_failed_stripe() {
    let d = TempDir::new("mirror-of-stripes");
    let f = d.files(4);
    let o = opts(EngineKind::Psync, true);
    let healthy = format!(
        "raid1(raid0({}, {}), raid0({}, {}))",
        f[0], f[1], f[2], f[3]
    );
    go(&healthy, "rw=write bs=64k size=2m", &o);
    let degraded = format!("raid1(raid0({}, missing), raid0({}, {}))", f[0], f[2], f[3]);
    let r = go(&degraded, "rw=randread bs=4k iodepth=4 size=2m", &o);
    let (checked, bad) = mismatches(&r);
    assert!(checked > 0 && bad == 0, "{checked} checked, {bad} bad");
}

/// Two names for one file are one member: other spellings of the path,
/// hard links and symlinks are refused before anything is written, for new
/// and existing files alike.
#[test]
fn aliases_of_one_file_are_refused() {
    let d = TempDir::new("alias");
    let f = d.files(2);
    let wl = Workload::parse("rw=write bs=4k size=1m").unwrap();
    let err = |e: &str| {
        run(e, &wl, 1, &RunOptions::default())
            .err()
            .unwrap_or_else(|| panic!("{e} was accepted"))
            .to_string()
    };
    let a = std::path::Path::new(&f[0]);
    let sub = a.parent().unwrap().join("sub");
    std::fs::create_dir_all(&sub).unwrap();
    let dotted = sub.join("..").join(a.file_name().unwrap());
    // Not yet created: the second spelling is the file the first made.
    let e = err(&format!("raid1({}, {})", f[0], dotted.display()));
    assert!(e.contains("same file"), "{e}");
    // Existing: a hard link and a symlink.
    go(
        &format!("raid1({}, {})", f[0], f[1]),
        "rw=write bs=4k size=1m",
        &RunOptions::default(),
    );
    let hard = a.with_extension("hard");
    std::fs::hard_link(a, &hard).unwrap();
    let soft = a.with_extension("soft");
    std::os::unix::fs::symlink(a, &soft).unwrap();
    for other in [&hard, &soft] {
        let e = err(&format!("raid1({}, {})", f[0], other.display()));
        assert!(e.contains("same file"), "{e}");
    }
}

#[test]
#[cfg_attr(
    raidlab_no_loop,
    ignore = "no loop devices here (needs root and /dev/loop-control)"
)]
fn block_devices_with_signatures_or_mounts_are_refused() {
    let d = TempDir::new("loop");
    let img = d.0.join("disk.img");
    let mut bytes = vec![0u8; 8 << 20];
    // An MBR with one Linux partition.
    bytes[446 + 4] = 0x83;
    bytes[510] = 0x55;
    bytes[511] = 0xAA;
    std::fs::write(&img, &bytes).unwrap();
    let lo = Loop::attach(&img).unwrap_or_else(|why| panic!("attach a loop device: {why}"));
    let w = Workload::parse("rw=randwrite bs=4k size=1m").unwrap();
    let e = run(&lo.0, &w, 1, &RunOptions::default())
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("MBR partition table") && e.contains("--force"),
        "{e}"
    );
    // Reading is harmless; --force writes.
    let r = Workload::parse("rw=randread bs=4k size=1m").unwrap();
    run(&lo.0, &r, 1, &RunOptions::default()).unwrap();
    let forced = RunOptions {
        force: true,
        ..RunOptions::default()
    };
    let out = run(&lo.0, &w, 1, &forced).unwrap();
    assert_eq!(out.result.real.as_ref().unwrap().members[0].kind, "block");
    // A loop device and its backing file are one member, --force or not.
    let both = format!("raid1({}, {})", lo.0, img.display());
    let e = run(&both, &w, 1, &forced).err().unwrap().to_string();
    assert!(e.contains("same file"), "{e}");
}

#[test]
#[cfg_attr(
    raidlab_no_loop,
    ignore = "no loop devices here (needs root and /dev/loop-control)"
)]
fn block_devices_with_a_mounted_file_system_are_refused() {
    let d = TempDir::new("mount");
    let img = d.0.join("disk.img");
    std::fs::write(&img, vec![0u8; 8 << 20]).unwrap();
    let w = Workload::parse("rw=randwrite bs=4k size=1m").unwrap();
    let mkfs = std::process::Command::new("mkfs.ext4")
        .args(["-q", "-F"])
        .arg(&img)
        .output()
        .expect("mkfs.ext4 runs (apt-get install e2fsprogs)");
    assert!(
        mkfs.status.success(),
        "{}",
        String::from_utf8_lossy(&mkfs.stderr)
    );
    let lo = Loop::attach(&img).unwrap();
    let e = run(&lo.0, &w, 1, &RunOptions::default())
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("ext2/3/4"), "{e}");
    let mnt = d.0.join("mnt");
    std::fs::create_dir_all(&mnt).unwrap();
    let m = std::process::Command::new("mount")
        .arg(&lo.0)
        .arg(&mnt)
        .output()
        .unwrap();
    assert!(
        m.status.success(),
        "mount: {}",
        String::from_utf8_lossy(&m.stderr)
    );
    let e = run(&lo.0, &w, 1, &RunOptions::default())
        .err()
        .unwrap()
        .to_string();
    let _ = std::process::Command::new("umount").arg(&mnt).output();
    assert!(e.contains("mounted on"), "{e}");
}

#[test]
fn runtime_bounds_a_real_run_and_ramp_is_not_measured() {
    let d = TempDir::new("time");
    let f = d.files(2);
    go(
        &format!("raid1({})", f.join(",")),
        "rw=write bs=64k size=1m",
        &RunOptions::default(),
    );
    let r = go(
        &format!("raid1({})", f.join(",")),
        "rw=randread bs=4k iodepth=4 size=1m runtime=0.3 ramp_time=0.1",
        &RunOptions::default(),
    );
    assert!(
        (r.sim.simulated_s - 0.3).abs() < 0.05,
        "{}",
        r.sim.simulated_s
    );
    assert!(r.sim.wall_s < 5.0, "a 0.4 s run took {} s", r.sim.wall_s);
    let real = r.real.unwrap();
    assert!(real.read.ios as f64 > r.summary.iops * r.sim.simulated_s);
}

/// md balances reads over mirror copies: small RAID 10 reads reach every
/// member, not only the first copy of each chunk.
#[test]
fn raid10_reads_use_every_copy() {
    for engine in engines() {
        let d = TempDir::new("r10reads");
        let f = d.files(4);
        let expr = format!("raid10[stripe=64k]({})", f.join(","));
        let o = opts(engine, false);
        go(&expr, "rw=write bs=64k size=8m", &o);
        for bs in ["4k", "16k", "64k"] {
            let r = go(&expr, &format!("rw=randread bs={bs} iodepth=8 size=8m"), &o);
            let members = &r.real.as_ref().unwrap().members;
            let total: u64 = members.iter().map(|m| m.reads).sum();
            for m in members {
                assert!(
                    m.reads * 8 > total,
                    "{engine:?} bs={bs}: {} took {} of {total} reads",
                    m.path,
                    m.reads
                );
            }
        }
    }
}

#[test]
fn sync_and_fsync_writes_are_flushed_and_verified() {
    for engine in engines() {
        let d = TempDir::new("sync");
        let f = d.files(3);
        let expr = format!("raid5({})", f.join(","));
        let o = opts(engine, true);
        for wl in [
            "rw=randwrite bs=4k iodepth=4 size=1m sync=1",
            "rw=randwrite bs=4k iodepth=4 size=1m fsync=8",
            "rw=write bs=16k iodepth=2 size=1m fdatasync=1",
        ] {
            let r = go(&expr, wl, &o);
            let real = r.real.as_ref().unwrap();
            // Flushes are not I/Os: the host writes are the workload's.
            let bs = if wl.contains("16k") { 16384 } else { 4096 };
            assert_eq!(real.write.ios, (1 << 20) / bs, "{engine:?} {wl}");
            assert_eq!(mismatches(&r), (0, 0), "{engine:?} {wl}");
            assert_eq!(
                r.workload["sync"].as_u64().is_some(),
                wl.contains(" sync=1")
            );
        }
        let r = go(&expr, "rw=randread bs=4k iodepth=4 size=1m", &o);
        assert!(r.real.unwrap().read.ios > 0);
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]
    /// Random arrays, layouts, failed members and workloads: everything
    /// written reads back verified, and parity is md's.
    #[test]
    fn random_arrays_keep_data_and_parity(
        level in 0usize..6,
        extra in 0usize..3,
        chunk_k in 2u32..5,
        layout in 0usize..4,
        lost in proptest::option::of(0usize..8),
        bs_k in proptest::sample::select(vec![1u64, 4, 8, 12, 64]),
        depth in 1u32..8,
        psync in proptest::bool::ANY,
        seed in 0u64..1000,
    ) {
        let (word, min) = [("raid0", 2), ("raid1", 2), ("raid10", 2), ("raid5", 3), ("raid6", 4), ("concat", 1)][level];
        let n = min + extra;
        let d = TempDir::new("prop");
        let files = d.files(n);
        let layouts = ["left-symmetric", "left-asymmetric", "right-symmetric", "right-asymmetric"];
        let opt = if (3..=4).contains(&level) {
            format!("[stripe={}k,layout={}]", 1 << chunk_k, layouts[layout])
        } else {
            format!("[stripe={}k]", 1 << chunk_k)
        };
        let healthy = format!("{word}{opt}({})", files.join(","));
        let engine = if psync { EngineKind::Psync } else { engines().pop().unwrap() };
        let o = opts(engine, true);
        let size = 256 * 1024;
        let bs = (bs_k * 1024).min(size);
        go(&healthy, &format!("rw=write bs={} size={size}", 64 * 1024), &o);
        // Optionally lose a member where the level survives it.
        let lose = lost.filter(|&l| l < n && matches!(word, "raid1" | "raid10" | "raid5" | "raid6"));
        let expr = match lose {
            Some(l) => {
                let mut f = files.clone();
                f[l] = "missing".into();
                format!("{word}{opt}({})", f.join(","))
            }
            None => healthy.clone(),
        };
        let wl = format!("rw=randwrite bs={bs} iodepth={depth} numjobs=2 size={size} seed={seed}");
        go(&expr, &wl, &o);
        let r = go(&expr, &format!("rw=read bs=4k iodepth={depth} size={size}"), &o);
        let (checked, bad) = mismatches(&r);
        proptest::prop_assert_eq!(checked, size / 512);
        proptest::prop_assert_eq!(bad, 0);
        if lose.is_none() && (word == "raid5" || word == "raid6") {
            let lv = if word == "raid5" { Level::Raid5 } else { Level::Raid6 };
            let lay = [ArrayLayout::LeftSymmetric, ArrayLayout::LeftAsymmetric, ArrayLayout::RightSymmetric, ArrayLayout::RightAsymmetric][layout];
            check_parity(&files, lv, lay, 1024 << chunk_k, size as usize / 512);
        }
    }
}
