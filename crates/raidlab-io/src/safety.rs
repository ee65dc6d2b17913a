//! What the real engine refuses to write to without `--force`: block
//! devices that are mounted, used as swap or held by another driver (md,
//! device mapper), and devices or existing files that carry a partition
//! table or a file-system (or RAID, LVM, LUKS) signature.
//!
//! Signatures are found by libblkid, through util-linux's `blkid -p` (its
//! low-level probe of every superblock and partition-table type it knows,
//! wherever on the device they live: md 0.90/1.0 at the end, minix,
//! cramfs, LVM in its first four sectors, ...). A quick check of the
//! commonest formats at the start of the device runs first, and alone
//! where `blkid` is not installed.

use crate::error::{Error, ErrorKind};
use std::fs::File;
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

/// What kind of path a member is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A regular file (created if absent).
    File,
    /// A block device.
    BlockDevice,
}

/// Whether a command writes to the members it opens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Reads only: members open read-only, no safety rule applies.
    Read,
    /// Writes: members open for writing, under the safety rules.
    Write,
}

impl Access {
    /// `Write` when `writes`, else `Read`.
    pub fn from_writes(writes: bool) -> Self {
        if writes {
            Access::Write
        } else {
            Access::Read
        }
    }

    /// Whether the command writes.
    pub fn writes(self) -> bool {
        self == Access::Write
    }
}

/// Whether the safety rules hold for a command that writes: `--force`
/// lifts them (no signature check, no exclusive open of block devices).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Guard {
    /// The rules hold.
    Checked,
    /// `--force`: the user takes the responsibility.
    Forced,
}

impl Guard {
    /// `Forced` under `--force`, else `Checked`.
    pub fn from_force(force: bool) -> Self {
        if force {
            Guard::Forced
        } else {
            Guard::Checked
        }
    }
}

/// Signatures looked for: (byte offset, magic, what it means). Offsets and
/// magics are those of libblkid's probes for the same formats.
const SIGNATURES: &[(usize, &[u8], &str)] = &[
    (512, b"EFI PART", "a GPT partition table"),
    (4096, b"EFI PART", "a GPT partition table (4K sectors)"),
    (0, b"XFSB", "an XFS file system"),
    (65600, b"_BHRfS_M", "a btrfs file system"),
    (4086, b"SWAPSPACE2", "a swap area"),
    (4086, b"SWAP-SPACE", "a swap area"),
    (0, b"LUKS\xba\xbe", "a LUKS header"),
    (0, &[0xfc, 0x4e, 0x2b, 0xa9], "an md RAID superblock (1.1)"),
    (
        4096,
        &[0xfc, 0x4e, 0x2b, 0xa9],
        "an md RAID superblock (1.2)",
    ),
    (512, b"LABELONE", "an LVM physical volume"),
    (3, b"NTFS    ", "an NTFS file system"),
    (1024, &[0x10, 0x20, 0xF5, 0xF2], "an F2FS file system"),
    (32769, b"CD001", "an ISO 9660 file system"),
    (54, b"FAT", "a FAT file system"),
    (82, b"FAT32", "a FAT32 file system"),
];
/// Bytes read to look for signatures.
const PROBE_BYTES: usize = 65600 + 8;

/// Whether `head` holds an ext2/3/4 superblock: its magic (0xEF53 at byte
/// 1080) and fields a real one has (as libblkid's ext probe relies on more
/// than the two magic bytes, which random data matches one time in 65,536):
/// inodes and blocks, a block size of 1 to 64 KiB, a first data block of 0
/// or 1, revision 0 or 1, and only the defined state flags.
fn ext_superblock(head: &[u8]) -> bool {
    const SB: usize = 1024;
    if head.len() < SB + 1024 || head[SB + 56..SB + 58] != [0x53, 0xEF] {
        return false;
    }
    let u32_at =
        |o: usize| u32::from_le_bytes(head[SB + o..SB + o + 4].try_into().expect("4 bytes"));
    let state = u16::from_le_bytes([head[SB + 58], head[SB + 59]]);
    u32_at(0) > 0 // s_inodes_count
        && u32_at(4) > 0 // s_blocks_count
        && u32_at(20) <= 1 // s_first_data_block
        && u32_at(24) <= 6 // s_log_block_size: 1 KiB << 6 = 64 KiB
        && u32_at(76) <= 1 // s_rev_level
        && state <= 7 // s_state: valid, error, orphans
}

/// The first signature found in `head` (the start of a device or file).
pub fn signature(head: &[u8]) -> Option<&'static str> {
    for (off, magic, what) in SIGNATURES {
        if head.len() >= off + magic.len() && &head[*off..off + magic.len()] == *magic {
            return Some(what);
        }
    }
    if ext_superblock(head) {
        return Some("an ext2/3/4 file system");
    }
    // An MBR: boot signature, every entry's status byte 0x00 or 0x80 (as
    // libblkid's DOS probe requires), and at least one entry with a type.
    if head.len() >= 512 && head[510] == 0x55 && head[511] == 0xAA {
        let entry = |i: usize| &head[446 + 16 * i..462 + 16 * i];
        let statuses_ok = (0..4).all(|i| matches!(entry(i)[0], 0 | 0x80));
        if statuses_ok && (0..4).any(|i| entry(i)[4] != 0) {
            return Some("an MBR partition table");
        }
    }
    None
}

/// Read the start of `path` and look for a signature.
pub fn probe(path: &Path) -> std::io::Result<Option<String>> {
    if let Some(what) = quick_probe(path)? {
        return Ok(Some(what.to_string()));
    }
    Ok(blkid_probe(path))
}

/// libblkid's verdict on `path` through `blkid -p`: what it found, or
/// `None` when it found nothing or cannot be run (not installed).
fn blkid_probe(path: &Path) -> Option<String> {
    let out = std::process::Command::new(sbin_tool("blkid"))
        .args(["-p", "-o", "export", "--"])
        .arg(path)
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    // blkid(8): 0 found, 2 nothing found, 8 ambivalent (several).
    match out.status.code() {
        Some(0) => Some(describe_blkid(&String::from_utf8_lossy(&out.stdout))),
        Some(8) => Some("several signatures (blkid: ambivalent probe)".to_string()),
        _ => None,
    }
}

/// A util-linux tool: from the sbin directories util-linux installs it in
/// (often left out of a user's `PATH`), else from `PATH`.
fn sbin_tool(name: &str) -> PathBuf {
    ["/usr/sbin", "/sbin"]
        .iter()
        .map(|d| Path::new(d).join(name))
        .find(|p| p.exists())
        .unwrap_or_else(|| PathBuf::from(name))
}

/// Words for what `blkid -p -o export` printed (`TYPE=`, `PTTYPE=`).
fn describe_blkid(export: &str) -> String {
    let get = |k: &str| {
        export
            .lines()
            .find_map(|l| l.strip_prefix(k)?.strip_prefix('='))
            .map(str::to_string)
    };
    match (get("TYPE"), get("PTTYPE")) {
        (Some(t), _) => format!("a {t} signature (blkid)"),
        (None, Some(p)) => format!("a {p} partition table (blkid)"),
        (None, None) => "a signature (blkid)".to_string(),
    }
}

/// The built-in check of the commonest signatures near the start.
fn quick_probe(path: &Path) -> std::io::Result<Option<&'static str>> {
    let mut f = File::open(path)?;
    let mut head = vec![0u8; PROBE_BYTES];
    let mut got = 0;
    while got < head.len() {
        match f.read(&mut head[got..])? {
            0 => break,
            n => got += n,
        }
    }
    head.truncate(got);
    Ok(signature(&head))
}

fn sys_dir(rdev: u64) -> PathBuf {
    let (maj, min) = (
        libc::major(rdev as libc::dev_t),
        libc::minor(rdev as libc::dev_t),
    );
    PathBuf::from(format!("/sys/dev/block/{maj}:{min}"))
}

/// Why a block device is in use, if it is: mounted (itself or one of its
/// partitions), active swap, or held by md / device mapper.
pub fn in_use(path: &Path) -> Option<String> {
    let meta = std::fs::metadata(path).ok()?;
    let me = std::fs::canonicalize(sys_dir(meta.rdev())).ok()?;
    let mine = |rdev_txt: &str| -> bool {
        let Some((a, b)) = rdev_txt.split_once(':') else {
            return false;
        };
        let Ok(p) = std::fs::canonicalize(format!("/sys/dev/block/{a}:{b}")) else {
            return false;
        };
        // A partition's sysfs directory lies inside its disk's.
        p == me || p.starts_with(&me)
    };
    if let Ok(info) = std::fs::read_to_string("/proc/self/mountinfo") {
        for line in info.lines() {
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.len() > 4 && mine(f[2]) {
                return Some(format!("it is mounted on {}", f[4]));
            }
        }
    }
    if let Ok(swaps) = std::fs::read_to_string("/proc/swaps") {
        for line in swaps.lines().skip(1) {
            if let Some(dev) = line.split_whitespace().next() {
                if let Ok(m) = std::fs::metadata(dev) {
                    if m.file_type().is_block_device() && mine(&rdev_str(m.rdev())) {
                        return Some("it is an active swap area".into());
                    }
                }
            }
        }
    }
    if let Ok(mut holders) = std::fs::read_dir(me.join("holders")) {
        if let Some(Ok(h)) = holders.next() {
            return Some(format!(
                "it is held by {} (md or device mapper)",
                h.file_name().to_string_lossy()
            ));
        }
    }
    None
}

fn rdev_str(rdev: u64) -> String {
    let (maj, min) = (
        libc::major(rdev as libc::dev_t),
        libc::minor(rdev as libc::dev_t),
    );
    format!("{maj}:{min}")
}

/// What a member path is underneath its name, so two names for one thing
/// can be told apart: a file by its device and inode (hard links,
/// symlinks, `./d/../a.img` all agree), a block device by its device
/// number, and a loop device also by its backing file's.
pub fn identity(path: &Path) -> std::io::Result<Vec<(u64, u64)>> {
    let meta = std::fs::metadata(path)?;
    if !meta.file_type().is_block_device() {
        return Ok(vec![(meta.dev(), meta.ino())]);
    }
    // (0, rdev) cannot clash with a file's (dev, ino): no file lives on
    // device 0.
    let mut ids = vec![(0, meta.rdev())];
    let backing = sys_dir(meta.rdev()).join("loop/backing_file");
    if let Ok(b) = std::fs::read_to_string(backing) {
        if let Ok(bm) = std::fs::metadata(b.trim_end()) {
            ids.push((bm.dev(), bm.ino()));
        }
    }
    Ok(ids)
}

/// Check that `path` may be used as a member by a command with `access`
/// under `guard`. Returns its kind (`None`: it does not exist), or the
/// reason it is refused.
pub fn check(path: &Path, access: Access, guard: Guard) -> Result<Option<Kind>, Error> {
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        // A path that cannot be looked at is the input's fault.
        Err(e) => return Err(refused(format!("{}: {e}", path.display()))),
    };
    let ft = meta.file_type();
    let kind = if ft.is_file() {
        Kind::File
    } else if ft.is_block_device() {
        Kind::BlockDevice
    } else {
        return Err(refused(format!(
            "{} is neither a regular file nor a block device",
            path.display()
        )));
    };
    if access == Access::Write && guard == Guard::Checked {
        if kind == Kind::BlockDevice {
            if let Some(why) = in_use(path) {
                return Err(refused(format!(
                    "refusing to write to {}: {why} (--force overrides)",
                    path.display()
                )));
            }
        }
        // A member raidlab's own arrays wrote is checked by assembly.
        let ours = crate::meta::is_raidlab_member(path);
        if !ours && (meta.len() > 0 || kind == Kind::BlockDevice) {
            if let Some(what) = probe(path).map_err(|e| Error::io(path.display(), e))? {
                return Err(refused(format!(
                    "refusing to write to {}: it carries {what} (--force overrides)",
                    path.display()
                )));
            }
        }
    }
    Ok(Some(kind))
}

/// A member the safety rules refuse.
fn refused(msg: String) -> Error {
    Error::new(ErrorKind::Refused, msg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_signatures() {
        let mut h = vec![0u8; PROBE_BYTES];
        assert_eq!(signature(&h), None);
        h[1080] = 0x53;
        h[1081] = 0xEF;
        assert_eq!(signature(&h), None, "the magic alone is not a superblock");
        // A superblock as mkfs writes it: inodes, blocks, 4 KiB blocks,
        // revision 1, clean.
        h[1024] = 0x80; // s_inodes_count
        h[1028] = 0x40; // s_blocks_count
        h[1048] = 2; // s_log_block_size
        h[1082] = 1; // s_state
        h[1100] = 1; // s_rev_level
        assert_eq!(signature(&h), Some("an ext2/3/4 file system"));
        // Random bytes around the magic are no superblock.
        let mut rng = raidlab_core::rng::Rng::new(1);
        let mut hits = 0;
        for _ in 0..2000 {
            let mut r: Vec<u8> = (0..PROBE_BYTES).map(|_| rng.next_u64() as u8).collect();
            r[1080] = 0x53;
            r[1081] = 0xEF;
            hits += usize::from(ext_superblock(&r));
        }
        assert_eq!(hits, 0, "random data with the magic passed as ext");
        let mut h = vec![0u8; PROBE_BYTES];
        h[510] = 0x55;
        h[511] = 0xAA;
        assert_eq!(signature(&h), None, "a bare boot signature is not a table");
        h[446 + 4] = 0x83;
        assert_eq!(signature(&h), Some("an MBR partition table"));
        let mut h = vec![0u8; 600];
        h[512..520].copy_from_slice(b"EFI PART");
        assert_eq!(signature(&h), Some("a GPT partition table"));
    }

    #[test]
    fn refuses_odd_paths_and_signed_files() {
        let d = std::env::temp_dir().join(format!("raidlab-safety-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let e = check(&d, Access::Write, Guard::Checked).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Refused);
        assert!(e.to_string().contains("neither"));
        assert_eq!(
            check(&d.join("absent"), Access::Write, Guard::Checked),
            Ok(None)
        );
        let f = d.join("img");
        let mut h = vec![0u8; 8192];
        h[0..4].copy_from_slice(b"XFSB");
        std::fs::write(&f, &h).unwrap();
        let e = check(&f, Access::Write, Guard::Checked).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Refused);
        assert!(e.to_string().contains("XFS"));
        assert_eq!(
            check(&f, Access::Read, Guard::Checked),
            Ok(Some(Kind::File)),
            "reads are harmless"
        );
        assert_eq!(
            check(&f, Access::Write, Guard::Forced),
            Ok(Some(Kind::File))
        );
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn blkid_words_name_the_type_or_table() {
        assert_eq!(
            describe_blkid("DEVNAME=x\nTYPE=minix\nUSAGE=filesystem\n"),
            "a minix signature (blkid)"
        );
        assert_eq!(
            describe_blkid("DEVNAME=x\nPTTYPE=atari\n"),
            "a atari partition table (blkid)"
        );
    }

    /// A signature the quick check does not know (minix, from util-linux's
    /// mkfs.minix) is found through libblkid and refused.
    #[test]
    fn libblkid_finds_what_the_quick_check_does_not() {
        let d = std::env::temp_dir().join(format!("raidlab-blkid-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let f = d.join("minix.img");
        std::fs::write(&f, vec![0u8; 4 << 20]).unwrap();
        let made = std::process::Command::new(sbin_tool("mkfs.minix"))
            .arg(&f)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .expect("mkfs.minix (util-linux) is needed by this test");
        assert!(made.success());
        assert_eq!(
            quick_probe(&f).unwrap(),
            None,
            "not a format the quick check knows"
        );
        let e = check(&f, Access::Write, Guard::Checked).unwrap_err();
        assert!(e.to_string().contains("minix"), "{e}");
        assert_eq!(
            check(&f, Access::Write, Guard::Forced).unwrap(),
            Some(Kind::File),
            "--force"
        );
        std::fs::remove_dir_all(&d).unwrap();
    }

    /// An LVM2 label in sector `sector`, with LVM's CRC of its last 492
    /// bytes (lib/misc/crc.c: the reflected CRC-32 polynomial, initial
    /// value 0xf597a6cf, no final xor).
    fn lvm_label(img: &mut [u8], sector: usize) {
        let o = sector * 512;
        img[o..o + 8].copy_from_slice(b"LABELONE");
        img[o + 8..o + 16].copy_from_slice(&(sector as u64).to_le_bytes());
        img[o + 20..o + 24].copy_from_slice(&32u32.to_le_bytes());
        img[o + 24..o + 32].copy_from_slice(b"LVM2 001");
        let mut crc: u32 = 0xf597_a6cf;
        for &b in &img[o + 20..o + 512] {
            crc ^= b as u32;
            for _ in 0..8 {
                crc = (crc >> 1) ^ (0xedb8_8320 & (crc & 1).wrapping_neg());
            }
        }
        img[o + 16..o + 20].copy_from_slice(&crc.to_le_bytes());
    }

    /// Signatures the quick check does not look for, found by libblkid
    /// wherever they live: md 1.0 and 0.90 superblocks at the end of the
    /// device and an LVM2 label in its fourth sector.
    #[test]
    fn superblocks_at_the_end_and_late_lvm_labels_are_refused() {
        let d = std::env::temp_dir().join(format!("raidlab-late-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let size = 8usize << 20;
        // md 1.0: the superblock 8-16 sectors from the end, 4 KiB aligned,
        // naming its own sector, with md's checksum.
        let mut v10 = vec![0u8; size];
        let sec = ((size / 512) - 16) & !7;
        let mut sb = crate::md::Superblock {
            set_uuid: [1; 16],
            name: "old".into(),
            ctime: 0,
            level: 5,
            layout: 2,
            size: 0,
            chunk_sectors: 128,
            raid_disks: 3,
            data_offset: 0,
            data_size: sec as u64,
            dev_number: 0,
            device_uuid: [2; 16],
            utime: 0,
            events: 1,
            resync_offset: u64::MAX,
            roles: vec![0, 1, 2],
            bitmap: false,
            recovery_offset: None,
        }
        .encode();
        sb[144..152].copy_from_slice(&(sec as u64).to_le_bytes());
        sb[216..220].fill(0);
        let c = crate::md::checksum(&sb);
        sb[216..220].copy_from_slice(&c.to_le_bytes());
        v10[sec * 512..sec * 512 + 4096].copy_from_slice(&sb);
        // md 0.90: its magic, major 0, minor 90, 64 KiB from the end.
        let mut v090 = vec![0u8; size];
        let at = (size & !0xffff) - 0x10000;
        v090[at..at + 4].copy_from_slice(&crate::md::MAGIC.to_le_bytes());
        v090[at + 8..at + 12].copy_from_slice(&90u32.to_le_bytes());
        let mut lvm = vec![0u8; size];
        lvm_label(&mut lvm, 3);
        for (name, bytes, want) in [
            ("md10.img", v10, "linux_raid_member"),
            ("md090.img", v090, "linux_raid_member"),
            ("lvm.img", lvm, "LVM2_member"),
        ] {
            let f = d.join(name);
            std::fs::write(&f, &bytes).unwrap();
            assert_eq!(quick_probe(&f).unwrap(), None, "{name}: not at the start");
            let e = check(&f, Access::Write, Guard::Checked).unwrap_err();
            assert!(e.to_string().contains(want), "{name}: {e}");
            assert_eq!(
                check(&f, Access::Write, Guard::Forced).unwrap(),
                Some(Kind::File),
                "--force"
            );
        }
        std::fs::remove_dir_all(&d).unwrap();
    }
}
