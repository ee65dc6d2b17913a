//! The real engine end to end, on member files in a temporary directory.

use raidlab_core::topology::resolve;
use raidlab_core::workload::Workload;
use raidlab_io::backend::EngineKind;
use raidlab_io::{run, RunOptions};
use raidlab_layout::{gf, Geometry, Level, ParityLayout};
use std::path::{Path, PathBuf};

struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let d = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("raidlab-real-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        TempDir(d)
    }
    fn files(&self, n: usize) -> Vec<String> {
        (0..n)
            .map(|i| self.0.join(format!("m{i}.img")).display().to_string())
            .collect()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn opts(engine: EngineKind, verify: bool) -> RunOptions {
    RunOptions {
        engine: Some(engine),
        verify,
        ..RunOptions::default()
    }
}

fn engines() -> Vec<EngineKind> {
    let mut v = vec![EngineKind::Psync];
    if EngineKind::io_uring_available() {
        v.push(EngineKind::IoUring);
    } else {
        eprintln!("io_uring unavailable here: testing psync only");
    }
    v
}

fn go(expr: &str, wl: &str, o: &RunOptions) -> raidlab_core::result::RunResult {
    let w = Workload::parse(wl).unwrap();
    run(expr, &w, 7, o)
        .unwrap_or_else(|e| panic!("{expr} / {wl}: {e}"))
        .result
}

/// Where a member's data starts: its md superblock's data offset.
fn data_offset(path: &str) -> usize {
    let all = std::fs::read(path).unwrap();
    let sb = raidlab_io::md::Superblock::decode(&all[4096..8192])
        .unwrap()
        .expect("an md superblock");
    (sb.data_offset * 512) as usize
}

/// A member's data area: the file from its data offset on.
fn data_area(path: &str) -> Vec<u8> {
    std::fs::read(path).unwrap()[data_offset(path)..].to_vec()
}

fn mismatches(r: &raidlab_core::result::RunResult) -> (u64, u64) {
    let v = r.real.as_ref().unwrap().verify.as_ref().unwrap();
    (v.checked_units, v.mismatches)
}

/// Read every member file and check, stripe by stripe, that P (and Q) are
/// what md's layout says they must be, computed here from the raw member
/// contents with the reference GF code, and that every data chunk holds the
/// volume address the geometry maps to it (verify headers carry it).
fn check_parity(
    files: &[String],
    level: Level,
    layout: ParityLayout,
    chunk: u64,
    min_units: usize,
) {
    let data: Vec<Vec<u8>> = files.iter().map(|f| data_area(f)).collect();
    let sizes: Vec<u64> = data.iter().map(|d| d.len() as u64).collect();
    let g = Geometry::new(level, chunk, layout, &sizes).unwrap();
    let c = chunk as usize;
    let stripes = g.member_size() / chunk;
    let mut written = 0;
    for s in 0..stripes {
        let at = s as usize * c;
        let (pd, qd) = g.parity_of(s);
        let mut synd: Vec<&[u8]> = vec![&[]; g.data_disks()];
        for k in 0..g.data_disks() {
            let m = g.data_member(s, k);
            let idx = if level == Level::Raid6 {
                g.q_index(s, m)
            } else {
                k
            };
            synd[idx] = &data[m][at..at + c];
            // Each 512-byte unit written under verify names its volume address.
            for u in (0..c).step_by(512) {
                let unit = &data[m][at + u..at + u + 512];
                if unit[0..4] == *b"RLv2" {
                    let addr = u64::from_le_bytes(unit[8..16].try_into().unwrap());
                    assert_eq!(
                        Some(addr),
                        g.reverse(m, (at + u) as u64),
                        "stripe {s} member {m}"
                    );
                    written += 1;
                }
            }
        }
        let (mut p, mut q) = (vec![0u8; c], vec![0u8; c]);
        gf::gen_pq(&synd, &mut p, &mut q);
        assert!(
            data[pd][at..at + c] == p[..],
            "{level:?} {layout:?}: P of stripe {s}"
        );
        if let Some(qd) = qd {
            assert!(
                data[qd][at..at + c] == q[..],
                "{level:?} {layout:?}: Q of stripe {s}"
            );
        }
    }
    assert!(written >= min_units, "the run wrote data ({written} units)");
}

#[test]
fn parity_matches_md_layout_after_random_writes() {
    let layouts = [
        ("left-symmetric", ParityLayout::LeftSymmetric),
        ("left-asymmetric", ParityLayout::LeftAsymmetric),
        ("right-symmetric", ParityLayout::RightSymmetric),
        ("right-asymmetric", ParityLayout::RightAsymmetric),
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
        ParityLayout::LeftSymmetric,
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
    let d = TempDir::new("trace");
    let f = d.files(4);
    let wl = Workload::parse(
        "rw=randrw bssplit=4k/50:16k/50 iodepth=4 numjobs=2 size=4m percentage_random=70",
    )
    .unwrap();
    let db = raidlab_core::preset::PresetDb::builtin();
    let topo = resolve("raid5[stripe=64k](4*x25e)", &db).unwrap();
    let (_, sim_trace) = raidlab_sim::simulate_traced(&topo, &wl, 3).unwrap();
    for engine in engines() {
        let o = RunOptions {
            engine: Some(engine),
            trace: true,
            ..RunOptions::default()
        };
        let real = run(&format!("raid5[stripe=64k]({})", f.join(",")), &wl, 3, &o).unwrap();
        assert_eq!(real.trace.len(), 2);
        for (j, (r, s)) in real.trace.iter().zip(&sim_trace).enumerate() {
            // Same span (4 MiB) on both, so the same I/Os in the same order.
            assert!(s.len() > 100);
            assert_eq!(r, s, "job {j} ({})", engine.word());
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

/// A loop device over an image file, detached on drop.
struct Loop(String);

impl Loop {
    fn attach(img: &Path) -> Result<Loop, String> {
        let out = std::process::Command::new("losetup")
            .args(["-f", "--show"])
            .arg(img)
            .output()
            .map_err(|e| format!("losetup: {e}"))?;
        if !out.status.success() {
            return Err(String::from_utf8_lossy(&out.stderr).trim().to_string());
        }
        Ok(Loop(
            String::from_utf8_lossy(&out.stdout).trim().to_string(),
        ))
    }
}

impl Drop for Loop {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).output();
        let _ = std::process::Command::new("losetup")
            .args(["-d", &self.0])
            .output();
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
            let lay = [ParityLayout::LeftSymmetric, ParityLayout::LeftAsymmetric, ParityLayout::RightSymmetric, ParityLayout::RightAsymmetric][layout];
            check_parity(&files, lv, lay, 1024 << chunk_k, size as usize / 512);
        }
    }
}

/// mdadm, from where Debian installs it.
fn mdadm() -> &'static str {
    ["/usr/sbin/mdadm", "/sbin/mdadm"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .unwrap_or("mdadm")
}

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

/// Mark a member's superblock as not cleanly stopped (md's "active") and
/// every chunk of its write-intent bitmap as written, as a crash in the
/// middle of writes everywhere leaves them.
fn mark_dirty(path: &str) {
    use raidlab_io::md::{checksum, Bitmap, Superblock};
    let mut all = std::fs::read(path).unwrap();
    let block = &mut all[4096..8192];
    let sb = Superblock::decode(block).unwrap().unwrap();
    assert!(sb.clean() && sb.bitmap);
    block[208..216].fill(0);
    block[216..220].fill(0);
    let c = checksum(block);
    block[216..220].copy_from_slice(&c.to_le_bytes());
    let mut bm = Bitmap::decode(&all[8192..8192 + 8192]).expect("a bitmap");
    bm.bits.fill(0xff);
    let bytes = bm.encode();
    all[8192..8192 + bytes.len()].copy_from_slice(&bytes);
    std::fs::write(path, all).unwrap();
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
    let g = Geometry::new(Level::Raid5, chunk, ParityLayout::LeftSymmetric, &sizes).unwrap();
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
    check_parity(&f, Level::Raid5, ParityLayout::LeftSymmetric, chunk, 1);
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

/// Scrubbing: every single-byte corruption of data, parity (P or Q) or a
/// mirror copy is found by check — one 4 KiB block, mismatch_cnt 8, on
/// the member and at the offset corrupted — and repair restores every
/// member byte for byte (RAID 6 locates a bad data member by P and Q;
/// RAID 5 and mirrors tell the damaged block by its verify checksums).
#[test]
fn check_finds_and_repair_fixes_every_single_byte_corruption() {
    for (level, n) in [("raid5", 4), ("raid6", 5), ("raid10", 4)] {
        let d = TempDir::new(&format!("scrub-{level}"));
        let f = d.files(n);
        let members: Vec<String> = f.iter().map(|p| format!("{p}[size=3m]")).collect();
        let expr = format!("{level}[stripe=16k]({})", members.join(","));
        let plain = format!("{level}[stripe=16k]({})", f.join(","));
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
    for (level, n) in [("raid5", 4), ("raid6", 5), ("raid10", 4), ("raid1", 3)] {
        let d = TempDir::new(&format!("rebuild-{level}"));
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
            format!("{level}[stripe=16k]({})", m.join(","))
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
