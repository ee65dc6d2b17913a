//! The real engine's integrity answers, as a new user meets them on the
//! command line: verify on mixed runs, members that shrank, what `repair`
//! can and cannot rebuild, and what `check` can tell without verify data.

mod common;
use common::*;

/// A fresh directory under the target's temporary folder.
fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("raidlab-integrity-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `n` member paths in `dir`, each made `mib` MiB long.
fn members(dir: &std::path::Path, n: usize, mib: u64) -> Vec<String> {
    (0..n)
        .map(|i| {
            let p = dir.join(format!("m{i}.img"));
            std::fs::File::create(&p)
                .unwrap()
                .set_len(mib << 20)
                .unwrap();
            p.display().to_string()
        })
        .collect()
}

/// Run raidlab and parse its JSON, whatever its exit status.
fn json(args: &[&str]) -> (Option<i32>, serde_json::Value) {
    let o = raidlab(args);
    let v = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{args:?}: not JSON ({e}): {}", stderr(&o)));
    (o.status.code(), v)
}

/// A `level` array over `n` fresh members of `mib` MiB in `dir`, written
/// whole under `--verify` with `bs`: its members and expression.
fn written_array(
    dir: &std::path::Path,
    level: &str,
    n: usize,
    mib: u64,
    bs: &str,
) -> (Vec<String>, String) {
    let m = members(dir, n, mib);
    let t = format!("{level}({})", m.join(","));
    let w = format!("rw=write bs={bs}");
    let o = raidlab(&["run", "-t", &t, "-w", &w, "--verify"]);
    assert!(o.status.success(), "{}", stderr(&o));
    (m, t)
}

/// A verified read of `t` with workload `w`: exit status and JSON result.
fn verified_read(t: &str, w: &str) -> (Option<i32>, serde_json::Value) {
    json(&["run", "-t", t, "-w", w, "--verify", "--format", "json"])
}

/// XOR `x` into the byte at `at` of file `path`.
fn flip(path: &str, at: usize, x: u8) {
    let mut b = std::fs::read(path).unwrap();
    b[at] ^= x;
    std::fs::write(path, b).unwrap();
}

/// Where every member's data starts (its md data offset), from `examine`.
fn data_offset(path: &str) -> usize {
    let o = raidlab(&["examine", path]);
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    let sectors: usize = text
        .split("data offset ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no data offset in {text}"));
    sectors * 512
}

/// A mixed verified run on fresh members reads blocks it never wrote: those
/// are no mismatches (fio verifies only what it knows was written), and
/// RAID 5 does not retry them from parity. A read-only verify of the same
/// volume afterwards still expects every block to carry a header.
#[test]
fn verify_on_a_mixed_run_reports_no_false_mismatches() {
    let dir = scratch("mixed");
    let single = dir.join("single.img").display().to_string();
    let m = members(&dir, 4, 8);
    let raid5 = format!("raid5({})", m.join(","));
    let w = "rw=randrw bs=4k iodepth=8 size=16m runtime=1";
    for t in [single.as_str(), raid5.as_str()] {
        let (code, v) = json(&["run", "-t", t, "-w", w, "--verify", "--format", "json"]);
        assert_eq!(code, Some(0), "{t}: {v}");
        let verify = &v["real"]["verify"];
        assert_eq!(verify["mismatches"], 0, "{t}: {verify}");
        assert_eq!(verify["repaired"], 0, "{t}: {verify}");
        assert!(verify["checked_units"].as_u64().unwrap() > 0, "{verify}");
        assert!(verify["unwritten_units"].as_u64().unwrap() > 0, "{verify}");
    }
    // Read-only with no verify state: every block must have been written.
    let (code, v) = verified_read(&raid5, "rw=read bs=64k size=16m");
    assert_eq!(code, Some(1), "{v}");
    assert!(v["real"]["verify"]["mismatches"].as_u64().unwrap() > 0);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A member that shrank is refused (exit 2, naming it, its size and the
/// size its array records), by `run` — degraded too — and `check`; the
/// superblocks keep the array's size.
#[test]
fn a_member_that_shrank_is_refused_not_taken_as_a_smaller_array() {
    let dir = scratch("shrink");
    let (m, t) = written_array(&dir, "raid5", 4, 32, "64k");
    let before = String::from_utf8_lossy(&raidlab(&["examine", &m[0]]).stdout).into_owned();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&m[2])
        .unwrap()
        .set_len(24 << 20)
        .unwrap();
    let degraded = format!("raid5({},{},{},missing)", m[0], m[1], m[2]);
    for args in [
        vec!["run", "-t", &t, "-w", "rw=randwrite bs=4k size=1m"],
        vec!["run", "-t", &degraded, "-w", "rw=read bs=64k", "--verify"],
        vec!["check", "-t", &t],
    ] {
        let o = raidlab(&args);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {e}");
        assert_eq!(e.trim_end().lines().count(), 1, "{e}");
        for want in [m[2].as_str(), "25165824 bytes", "records"] {
            assert!(e.contains(want), "{args:?}: '{e}' lacks '{want}'");
        }
    }
    let after = String::from_utf8_lossy(&raidlab(&["examine", &m[0]]).stdout).into_owned();
    assert_eq!(before, after, "the superblock changed");
    // Restored to its size, the array verifies whole.
    std::fs::OpenOptions::new()
        .write(true)
        .open(&m[2])
        .unwrap()
        .set_len(32 << 20)
        .unwrap();
    let (code, v) = verified_read(&degraded, "rw=read bs=64k");
    assert_eq!(code, Some(1), "the restored tail is zeros: {v}");
    let (code, v) = verified_read(&degraded, "rw=read bs=64k size=16m");
    assert_eq!(code, Some(0), "{v}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Two damaged data blocks of one stripe: RAID 6 rebuilds both from P and
/// Q (the members come back byte for byte); RAID 5 cannot, so `repair`
/// leaves the stripe untouched, says so and exits 1.
#[test]
fn repair_rebuilds_what_the_redundancy_allows_and_no_more() {
    for (level, n, want_fixed) in [("raid6", 5, true), ("raid5", 4, false)] {
        let dir = scratch(level);
        let m = members(&dir, n, 16);
        let t = format!("{level}({})", m.join(","));
        let o = raidlab(&["run", "-t", &t, "-w", "rw=write bs=64k", "--verify"]);
        assert!(o.status.success(), "{}", stderr(&o));
        let at = data_offset(&m[1]) + 1000;
        // md's left-symmetric layout: stripe 0's parity is on the last
        // member (and RAID 6's Q on the first), so members 1 and 2 hold data.
        let orig: Vec<Vec<u8>> = m.iter().map(|p| std::fs::read(p).unwrap()).collect();
        flip(&m[1], at, 0x01);
        flip(&m[2], at, 0x80);
        let (code, v) = json(&["check", "-t", &t, "--format", "json"]);
        assert_eq!(code, Some(1), "{v}");
        let named: Vec<&str> = v["mismatches"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x["member"].as_str().unwrap())
            .collect();
        assert_eq!(named, [m[1].as_str(), m[2].as_str()], "{level}: {v}");
        let damaged: Vec<Vec<u8>> = m.iter().map(|p| std::fs::read(p).unwrap()).collect();
        let (code, v) = json(&["repair", "-t", &t, "--format", "json"]);
        let now: Vec<Vec<u8>> = m.iter().map(|p| std::fs::read(p).unwrap()).collect();
        if want_fixed {
            assert_eq!(code, Some(0), "{v}");
            assert_eq!(v["unrepairable"], 0, "{v}");
            assert!(now == orig, "{level}: repair did not restore the members");
        } else {
            assert_eq!(code, Some(1), "{v}");
            assert_eq!(v["unrepairable"], 2, "{v}");
            for x in v["mismatches"].as_array().unwrap() {
                assert_eq!(x["repaired"], false, "{x}");
                assert_eq!(x["unrepairable"], true, "{x}");
            }
            assert!(now == damaged, "{level}: repair wrote over the damage");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// Without verify data a RAID 5 mismatch cannot say which member is
/// wrong: `check` says the stripe is inconsistent and names no member
/// (not the parity member); md's `repair` then rewrites parity.
#[test]
fn raid5_without_verify_data_names_no_member() {
    let dir = scratch("noverify");
    let m = members(&dir, 4, 16);
    let t = format!("raid5({})", m.join(","));
    let o = raidlab(&["run", "-t", &t, "-w", "rw=write bs=64k"]);
    assert!(o.status.success(), "{}", stderr(&o));
    flip(&m[0], data_offset(&m[0]) + 1000, 0x5a);
    let (code, v) = json(&["check", "-t", &t, "--format", "json"]);
    assert_eq!(code, Some(1), "{v}");
    let x = &v["mismatches"][0];
    assert!(x["member"].is_null(), "{x}");
    assert!(x["what"].as_str().unwrap().contains("unknown"), "{x}");
    let o = raidlab(&["check", "-t", &t]);
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(text.contains("of every member"), "{text}");
    assert!(!text.contains(&format!("wrong on {}", m[3])), "{text}");
    let (code, v) = json(&["repair", "-t", &t, "--format", "json"]);
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(v["mismatches"][0]["repaired"], true, "{v}");
    let o = raidlab(&["check", "-t", &t]);
    assert!(o.status.success(), "{}", stderr(&o));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Smaller lifecycle answers: a create that cannot make its members
/// leaves none behind (exit 2); `examine` of a directory is an input error;
/// `examine` numbers slots as md numbers roles (from 0); `check` says
/// mismatch_cnt plainly.
#[test]
fn create_examine_and_check_say_what_is_so() {
    let dir = scratch("small");
    let p: Vec<String> = (0..3)
        .map(|i| dir.join(format!("m{i}.img")).display().to_string())
        .collect();
    let huge = format!(
        "raid5({})",
        p.iter()
            .map(|x| format!("{x}[size=100t]"))
            .collect::<Vec<_>>()
            .join(",")
    );
    let o = raidlab(&["create", "-t", &huge]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("creating"), "{}", stderr(&o));
    assert!(
        p.iter().all(|x| !std::path::Path::new(x).exists()),
        "create left a member file behind"
    );
    assert_input_error(&["examine", &dir.display().to_string()], "is a directory");
    let m = members(&dir, 3, 8);
    let t = format!("raid5({})", m.join(","));
    let o = raidlab(&["create", "-t", &t]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&raidlab(&["examine", &m[1]]).stdout).into_owned();
    assert!(
        text.contains("active device 1") && text.contains("slot 1 "),
        "{text}"
    );
    let o = raidlab(&["check", "-t", &t]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(text.ends_with("mismatch_cnt 0\n"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A rebuild killed (SIGKILL) part-way records how far it got in the
/// replacement's superblock, as md's recovery_offset (mdadm reads it);
/// `run` refuses the half-built member; the next `rebuild` resumes there,
/// and the array then checks clean and verifies with another member gone.
#[test]
fn a_rebuild_killed_part_way_resumes_where_it_stopped() {
    let dir = scratch("resume");
    let (m, t) = written_array(&dir, "raid5", 4, 64, "1m");
    std::fs::remove_file(&m[2]).unwrap();
    // 64 MiB at 40 MB/s: about 1.7 s; killed somewhere in 0.4-1.3 s.
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos() as u64;
    let at = 400 + nanos % 900;
    killed_after(&["rebuild", "-t", &t, "--max-rate", "40"], at);
    let text = String::from_utf8_lossy(&raidlab(&["examine", &m[2]]).stdout).into_owned();
    assert!(text.contains("being rebuilt"), "killed at {at} ms: {text}");
    let o = raidlab(&["run", "-t", &t, "-w", "rw=read bs=1m"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("is being rebuilt"), "{}", stderr(&o));
    let (code, v) = json(&["rebuild", "-t", &t, "--max-rate", "0", "--format", "json"]);
    assert_eq!(code, Some(0), "{v}");
    let resumed = v["resumed_bytes"].as_u64().unwrap();
    assert!(resumed > 0 && resumed < 62 << 20, "killed at {at} ms: {v}");
    assert_eq!(v["bytes"].as_u64().unwrap() + resumed, 62 << 20, "{v}");
    let o = raidlab(&["check", "-t", &t]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
    let degraded = format!("raid5({},{},{},missing)", m[0], m[1], m[2]);
    let (code, v) = verified_read(&degraded, "rw=read bs=1m");
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(v["real"]["verify"]["mismatches"], 0, "{v}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A verified run killed part-way has checkpointed its verify state: a
/// verified read afterwards finds no false stale block (writes newer than
/// the last checkpoint are no error) and catches a write it had
/// acknowledged that is then lost (the old block put back).
#[test]
fn a_killed_verified_run_leaves_a_verify_state_that_catches_lost_writes() {
    let dir = scratch("state");
    let file = dir.join("s.img").display().to_string();
    let state = dir.join("state").display().to_string();
    let o = raidlab(&[
        "run",
        "-t",
        &file,
        "-w",
        "rw=write bs=64k size=16m",
        "--verify",
        "--verify-state",
        &state,
        "--create",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let old: Vec<u8> = std::fs::read(&file).unwrap()[..4096].to_vec();
    // 16 MiB at 2 MB/s: about 8 s; killed after 2.2 s, past two
    // checkpoints, the first 4 KiB rewritten and acknowledged at the start.
    killed_after(
        &[
            "run",
            "-t",
            &file,
            "-w",
            "rw=write bs=4k size=16m rate=2m",
            "--verify",
            "--verify-state",
            &state,
        ],
        2200,
    );
    let read = || {
        json(&[
            "run",
            "-t",
            &file,
            "-w",
            "rw=read bs=64k size=16m",
            "--verify",
            "--verify-state",
            &state,
            "--format",
            "json",
        ])
        .1["real"]["verify"]
            .clone()
    };
    let v = read();
    assert_eq!(v["mismatches"], 0, "false stale blocks: {v}");
    // The first 4 KiB as before the killed run: an acknowledged write lost.
    let mut b = std::fs::read(&file).unwrap();
    b[..4096].copy_from_slice(&old);
    std::fs::write(&file, b).unwrap();
    let v = read();
    assert_eq!(v["mismatches"], 8, "{v}");
    assert!(v["first"][0].as_str().unwrap().contains("stale"), "{v}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A member whose I/O fails during the resync of an array not stopped
/// cleanly is failed, as during a run: the run goes on degraded and exits
/// 0, the member is named as failed and left stale (its slot faulty), and
/// the array verifies without it.
#[test]
fn a_member_failing_during_resync_fails_alone() {
    let dir = scratch("resync");
    let (m, t) = written_array(&dir, "raid10", 4, 64, "1m");
    let randwrite = "rw=randwrite bs=4k runtime=30";
    killed_after(
        &[
            "run", "-t", &t, "-w", randwrite, "--verify", "--engine", "psync",
        ],
        1500,
    );
    let text = String::from_utf8_lossy(&raidlab(&["examine", &m[0]]).stdout).into_owned();
    assert!(text.contains("not stopped cleanly"), "{text}");
    let failing = format!("raid10({},{}[fail_after=3],{},{})", m[0], m[1], m[2], m[3]);
    let (code, v) = verified_read(&failing, "rw=read bs=1m");
    assert_eq!(code, Some(0), "{v}");
    assert!(
        v["real"]["array"]["resynced_bytes"].as_u64().unwrap() > 0,
        "{v}"
    );
    assert!(
        v["real"]["members"][1]["failed"].as_str().is_some(),
        "{}",
        v["real"]["members"]
    );
    assert_eq!(v["real"]["verify"]["mismatches"], 0, "{v}");
    let o = raidlab(&["run", "-t", &t, "-w", "rw=read bs=1m"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("stale"), "{}", stderr(&o));
    let degraded = format!("raid10({},missing,{},{})", m[0], m[2], m[3]);
    let (code, v) = verified_read(&degraded, "rw=read bs=1m");
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(v["real"]["verify"]["mismatches"], 0, "{v}");
    let _ = std::fs::remove_dir_all(&dir);
}
