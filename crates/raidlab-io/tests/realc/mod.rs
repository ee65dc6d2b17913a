//! Helpers shared by the real-engine tests.
#![allow(dead_code, unused_imports)]

pub use raidlab_core::topology::resolve;
pub use raidlab_core::workload::Workload;
pub use raidlab_io::backend::EngineKind;
pub use raidlab_io::{run, RunOptions};
pub use raidlab_layout::{gf, ArrayLayout, Geometry, Level};
pub use std::path::{Path, PathBuf};

pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let d = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("raidlab-real-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        TempDir(d)
    }
    pub fn files(&self, n: usize) -> Vec<String> {
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

pub fn opts(engine: EngineKind, verify: bool) -> RunOptions {
    RunOptions {
        engine: Some(engine),
        verify,
        ..RunOptions::default()
    }
}

pub fn engines() -> Vec<EngineKind> {
    let mut v = vec![EngineKind::Psync];
    if EngineKind::io_uring_available() {
        v.push(EngineKind::IoUring);
    } else {
        eprintln!("io_uring unavailable here: testing psync only");
    }
    v
}

pub fn go(expr: &str, wl: &str, o: &RunOptions) -> raidlab_core::result::RunResult {
    let w = Workload::parse(wl).unwrap();
    run(expr, &w, 7, o)
        .unwrap_or_else(|e| panic!("{expr} / {wl}: {e}"))
        .result
}

/// Where a member's data starts: its md superblock's data offset.
pub fn data_offset(path: &str) -> usize {
    let all = std::fs::read(path).unwrap();
    let sb = raidlab_io::md::Superblock::decode(&all[4096..8192])
        .unwrap()
        .expect("an md superblock");
    (sb.data_offset * 512) as usize
}

/// A member's data area: the file from its data offset on.
pub fn data_area(path: &str) -> Vec<u8> {
    std::fs::read(path).unwrap()[data_offset(path)..].to_vec()
}

pub fn mismatches(r: &raidlab_core::result::RunResult) -> (u64, u64) {
    let v = r.real.as_ref().unwrap().verify.as_ref().unwrap();
    (v.checked_units, v.mismatches)
}

/// Read every member file and check, stripe by stripe, that P (and Q) are
/// what md's layout says they must be, computed here from the raw member
/// contents with the reference GF code, and that every data chunk holds the
/// volume address the geometry maps to it (verify headers carry it).
pub fn check_parity(
    files: &[String],
    level: Level,
    layout: ArrayLayout,
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

/// mdadm, from where Debian installs it.
pub fn mdadm() -> &'static str {
    ["/usr/sbin/mdadm", "/sbin/mdadm"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .unwrap_or("mdadm")
}

/// Mark a member's superblock as not cleanly stopped (md's "active") and
/// every chunk of its write-intent bitmap as written, as a crash in the
/// middle of writes everywhere leaves them.
pub fn mark_dirty(path: &str) {
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

/// A loop device over an image file, detached on drop.
pub struct Loop(pub String);

impl Loop {
    pub fn attach(img: &Path) -> Result<Loop, String> {
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
