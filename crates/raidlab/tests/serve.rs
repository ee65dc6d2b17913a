//! `raidlab serve` with real NBD clients: qemu-io writes and reads back
//! through a served RAID 5, degraded too; nbdcopy copies an image in and
//! out byte for byte; acknowledged FLUSHes survive kill -9; 64 clients at
//! once; bad input refused.

mod common;
use common::served::{finished, serve, stop, uri};
use common::*;
use std::io::{Read, Write};
use std::time::{Duration, Instant};

/// A scratch folder of this test's own.
fn dir(name: &str) -> std::path::PathBuf {
    let d = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("raidlab-serve-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Four member files of `mib` MiB each and the RAID 5 over them, created.
fn raid5(d: &std::path::Path, mib: u64) -> (String, Vec<String>) {
    let paths: Vec<String> = (0..4)
        .map(|i| {
            let p = d.join(format!("m{i}.img"));
            std::fs::File::create(&p)
                .unwrap()
                .set_len(mib << 20)
                .unwrap();
            p.display().to_string()
        })
        .collect();
    let expr = format!("raid5[stripe=64k]({})", paths.join(","));
    let o = raidlab(&["create", "-t", &expr, "--assume-clean"]);
    assert!(o.status.success(), "{}", stderr(&o));
    (expr, paths)
}

/// qemu-io's commands against the served volume; its output.
fn qemu_io(sock: &std::path::Path, cmds: &[&str]) -> String {
    let mut args = vec!["-f".to_string(), "raw".to_string()];
    for c in cmds {
        args.push("-c".into());
        args.push(c.to_string());
    }
    args.push(uri(sock));
    let o = Command::new("qemu-io")
        .args(&args)
        .output()
        .expect("qemu-io");
    let out = String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "qemu-io {cmds:?}: {out}");
    assert!(
        !out.contains("failed") && !out.contains("error"),
        "qemu-io {cmds:?}: {out}"
    );
    out
}

#[test]
#[cfg_attr(
    raidlab_no_qemu,
    ignore = "qemu-io is not installed (apt-get install qemu-utils)"
)]
fn qemu_io_writes_and_reads_back_through_a_served_raid5_degraded_too() {
    let d = dir("qemu");
    let (expr, paths) = raid5(&d, 16);
    let sock = d.join("s.sock");
    let child = serve(&expr, &sock, &["--connections", "2"]);
    qemu_io(
        &sock,
        &["write -P 0xab 0 1M", "write -P 0x5c 3M 512k", "flush"],
    );
    qemu_io(&sock, &["read -P 0xab 0 1M", "read -P 0x5c 3M 512k"]);
    let log = finished(child);
    assert!(log.contains("served 2 connection(s)"), "{log}");
    // Parity matches the data: the writes went through read-modify-write.
    let o = raidlab(&["check", "-t", &expr]);
    assert!(o.status.success(), "check: {}", stderr(&o));
    // With a member gone, the data comes back from parity.
    let degraded = expr.replace(&paths[1], "missing");
    let child = serve(&degraded, &sock, &["--connections", "1"]);
    qemu_io(&sock, &["read -P 0xab 0 1M", "read -P 0x5c 3M 512k"]);
    finished(child);
}

#[test]
#[cfg_attr(
    raidlab_no_qemu,
    ignore = "qemu-io is not installed (apt-get install qemu-utils)"
)]
fn a_flushed_write_survives_kill_9() {
    let d = dir("kill");
    let (expr, _) = raid5(&d, 16);
    let sock = d.join("s.sock");
    let mut child = serve(&expr, &sock, &[]);
    qemu_io(&sock, &["write -P 0x3e 1M 2M", "flush"]);
    child.kill().unwrap(); // SIGKILL: no clean shutdown
    child.wait().unwrap();
    let _ = std::fs::remove_file(&sock);
    // Reassembly finds the array dirty and resyncs it first.
    let child = serve(&expr, &sock, &["--connections", "1"]);
    qemu_io(&sock, &["read -P 0x3e 1M 2M"]);
    finished(child);
    let o = raidlab(&["check", "-t", &expr]);
    assert!(o.status.success(), "check: {}", stderr(&o));
}

/// A 256 MiB image of pseudo-random bytes in `d`, and its bytes.
fn image(d: &std::path::Path) -> (std::path::PathBuf, Vec<u8>) {
    let img = d.join("in.img");
    let mut data = vec![0u8; 256 << 20];
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    for chunk in data.chunks_mut(8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        chunk.copy_from_slice(&x.to_le_bytes()[..chunk.len()]);
    }
    std::fs::write(&img, &data).unwrap();
    (img, data)
}

/// nbdcopy `img` into the served volume (flushed), then the volume out
/// to `out.img` beside it, four connections each way; the copy's path.
fn copy_in_and_out(img: &std::path::Path, sock: &std::path::Path) -> std::path::PathBuf {
    let out = img.with_file_name("out.img");
    for (from, to, what) in [
        (img.as_os_str().to_owned(), uri(sock).into(), "in"),
        (uri(sock).into(), out.as_os_str().to_owned(), "out"),
    ] {
        let st = Command::new("nbdcopy")
            .args(["-C", "4", "--flush"])
            .arg(from)
            .arg(to)
            .status()
            .expect("nbdcopy");
        assert!(st.success(), "nbdcopy {what}");
    }
    out
}

#[test]
#[cfg_attr(
    raidlab_no_libnbd,
    ignore = "nbdcopy is not installed (apt-get install libnbd-bin)"
)]
fn nbdcopy_in_and_out_is_byte_identical() {
    let d = dir("copy");
    // 4 x 96 MiB members: a RAID 5 of about 286 MiB, room for 256 MiB.
    let (expr, _) = raid5(&d, 96);
    let (img, data) = image(&d);
    let sock = d.join("s.sock");
    // Four connections each way (the server offers multi-conn); served
    // until SIGTERM.
    let child = serve(&expr, &sock, &[]);
    let out = copy_in_and_out(&img, &sock);
    let log = stop(child);
    assert!(log.contains("served"), "{log}");
    // SIGTERM stopped it cleanly: the array needs no resync.
    let o = raidlab(&["check", "-t", &expr]);
    assert!(o.status.success(), "check: {}", stderr(&o));
    // The whole volume came out; the image is its first 256 MiB.
    let back = std::fs::read(&out).unwrap();
    assert!(back.len() >= data.len());
    assert!(
        back[..data.len()] == data[..],
        "the image came back changed"
    );
}

/// The client half of the handshake and one 4 KiB read, by hand.
fn raw_client(sock: &std::path::Path) -> std::io::Result<Vec<u8>> {
    let mut s = std::os::unix::net::UnixStream::connect(sock)?;
    s.set_read_timeout(Some(Duration::from_secs(30)))?;
    let mut hello = [0u8; 18];
    s.read_exact(&mut hello)?;
    assert_eq!(&hello[..8], b"NBDMAGIC");
    let mut m = 3u32.to_be_bytes().to_vec();
    m.extend_from_slice(b"IHAVEOPT");
    m.extend_from_slice(&7u32.to_be_bytes()); // GO
    m.extend_from_slice(&6u32.to_be_bytes());
    m.extend_from_slice(&[0, 0, 0, 0, 0, 0]);
    s.write_all(&m)?;
    // Option replies until the ACK.
    loop {
        let mut h = [0u8; 20];
        s.read_exact(&mut h)?;
        let len = u32::from_be_bytes(h[16..20].try_into().unwrap()) as usize;
        let mut body = vec![0; len];
        s.read_exact(&mut body)?;
        if u32::from_be_bytes(h[12..16].try_into().unwrap()) == 1 {
            break;
        }
    }
    let mut req = 0x2560_9513u32.to_be_bytes().to_vec();
    req.extend_from_slice(&[0, 0, 0, 0]); // flags, READ
    req.extend_from_slice(&42u64.to_be_bytes());
    req.extend_from_slice(&0u64.to_be_bytes());
    req.extend_from_slice(&4096u32.to_be_bytes());
    s.write_all(&req)?;
    let mut rep = [0u8; 16];
    s.read_exact(&mut rep)?;
    assert_eq!(&rep[4..8], &[0; 4], "read error");
    let mut data = vec![0; 4096];
    s.read_exact(&mut data)?;
    let mut disc = 0x2560_9513u32.to_be_bytes().to_vec();
    disc.extend_from_slice(&[0, 0, 0, 2]);
    disc.extend_from_slice(&[0; 20]);
    s.write_all(&disc)?;
    Ok(data)
}

#[test]
fn sixty_four_clients_at_once_and_garbage_does_not_stop_the_server() {
    let d = dir("many");
    let (expr, _) = raid5(&d, 8);
    let sock = d.join("s.sock");
    let child = serve(&expr, &sock, &["--connections", "66"]);
    // One client sends garbage, another hangs up mid-handshake. Each waits
    // for the server to close its end, which it does after counting the
    // connection done: else, on a loaded machine, the two could still
    // count against the server's 64 clients when the 64 below connect.
    {
        let mut s = std::os::unix::net::UnixStream::connect(&sock).unwrap();
        let mut hello = [0u8; 18];
        s.read_exact(&mut hello).unwrap();
        s.write_all(&[0xff; 64]).unwrap();
        let _ = s.read_to_end(&mut Vec::new());
    }
    {
        let mut s = std::os::unix::net::UnixStream::connect(&sock).unwrap();
        s.shutdown(std::net::Shutdown::Write).unwrap();
        let _ = s.read_to_end(&mut Vec::new());
    }
    let handles: Vec<_> = (0..64)
        .map(|_| {
            let sock = sock.clone();
            std::thread::spawn(move || raw_client(&sock))
        })
        .collect();
    for h in handles {
        let data = h.join().unwrap().expect("a client served");
        assert_eq!(data.len(), 4096);
    }
    let log = finished(child);
    assert!(log.contains("served 66 connection(s)"), "{log}");
}

#[test]
fn serve_refuses_what_it_cannot_serve() {
    let d = dir("bad");
    let regular = d.join("not-a-socket");
    std::fs::write(&regular, "keep me").unwrap();
    let (expr, _) = raid5(&d, 8);
    assert_input_error(
        &["serve", "-t", &expr, "--socket", regular.to_str().unwrap()],
        "is not a socket",
    );
    assert_eq!(std::fs::read_to_string(&regular).unwrap(), "keep me");
    assert_input_error(
        &[
            "serve",
            "-t",
            "nosuchdrive",
            "--socket",
            d.join("s").to_str().unwrap(),
        ],
        "unknown preset 'nosuchdrive'",
    );
    assert_input_error(
        &[
            "serve",
            "-t",
            "x25e",
            "--size",
            "1000",
            "--socket",
            d.join("s").to_str().unwrap(),
        ],
        "--size 1000: a multiple of 512",
    );
    let gone = d.join("gone.img");
    assert_input_error(
        &[
            "serve",
            "-t",
            gone.to_str().unwrap(),
            "--socket",
            d.join("s").to_str().unwrap(),
        ],
        "does not exist",
    );
}

/// fio's nbd engine writes 8 MiB of 4 KiB blocks at queue depth 8 through
/// the served volume and reads every block back verified (crc32c).
fn fio_verify(sock: &std::path::Path, what: &str) {
    let o = Command::new("fio")
        .args([
            "--name=v",
            "--ioengine=nbd",
            &format!("--uri={}", uri(sock)),
            "--rw=randwrite",
            "--bs=4k",
            "--size=8m",
            "--iodepth=8",
            "--verify=crc32c",
            "--do_verify=1",
            "--output-format=json",
        ])
        .output()
        .expect("fio");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{what}: {}{out}", stderr(&o));
    let j: serde_json::Value = serde_json::from_str(&out[out.find('{').unwrap()..]).unwrap();
    assert_eq!(j["jobs"][0]["error"], 0, "{what}");
    assert!(
        j["jobs"][0]["read"]["io_bytes"].as_u64().unwrap() >= 8 << 20,
        "{what}: verified every block"
    );
}

#[test]
#[cfg_attr(raidlab_no_fio, ignore = "fio is not installed")]
fn fio_verifies_through_a_served_raid5_with_a_member_missing() {
    let d = dir("fio");
    let (expr, paths) = raid5(&d, 16);
    let degraded = expr.replace(&paths[2], "missing");
    let sock = d.join("s.sock");
    for (e, n) in [(&expr, "whole"), (&degraded, "degraded")] {
        // fio's engine connects more than once (its setup asks the size):
        // served until SIGTERM.
        let child = serve(e, &sock, &[]);
        fio_verify(&sock, n);
        stop(child);
    }
}

/// A simulated array (presets, not paths) for the tests below: a RAID 5 of
/// S3500s behind a MegaRAID, its first `size` exported.
const SIMULATED: &str = "megaraid9361(raid5(4*s3500-800))";

#[test]
#[cfg_attr(raidlab_no_fio, ignore = "fio is not installed")]
fn fio_verifies_through_a_served_simulated_array() {
    let d = dir("fio-sim");
    let sock = d.join("s.sock");
    let report = d.join("drift.json");
    let child = serve(
        SIMULATED,
        &sock,
        &["--size", "64m", "--report", report.to_str().unwrap()],
    );
    fio_verify(&sock, "simulated");
    let log = stop(child);
    assert!(log.contains("the model answered"), "{log}");
    // Every write and verifying read went through the model.
    let drift: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert!(drift["answered"].as_u64().unwrap() >= 2 * 2048, "{drift}");
}

#[test]
#[cfg_attr(
    raidlab_no_libnbd,
    ignore = "nbdcopy is not installed (apt-get install libnbd-bin)"
)]
fn nbdcopy_through_a_served_simulated_array_is_byte_identical() {
    let d = dir("copy-sim");
    let (img, data) = image(&d);
    let sock = d.join("s.sock");
    let child = serve("x25e", &sock, &["--size", "256m"]);
    let out = copy_in_and_out(&img, &sock);
    stop(child);
    let back = std::fs::read(out).unwrap();
    assert!(back == data, "the image came back changed");
}

#[test]
#[cfg_attr(
    raidlab_no_qemu,
    ignore = "qemu-io is not installed (apt-get install qemu-utils)"
)]
fn a_flushed_write_to_a_simulated_array_survives_kill_9_in_its_backing_file() {
    let d = dir("kill-sim");
    let backing = d.join("data.img");
    let b = backing.to_str().unwrap();
    let sock = d.join("s.sock");
    let mut child = serve("x25e", &sock, &["--size", "64m", "--backing", b]);
    qemu_io(&sock, &["write -P 0x5a 3M 1M", "flush"]);
    child.kill().unwrap(); // SIGKILL: no clean shutdown
    child.wait().unwrap();
    let _ = std::fs::remove_file(&sock);
    let child = serve("x25e", &sock, &["--size", "64m", "--backing", b]);
    qemu_io(&sock, &["read -P 0x5a 3M 1M", "read -P 0 0 1M"]);
    stop(child);
    // A backing file of another volume's size is refused, and kept.
    assert_input_error(
        &[
            "serve",
            "-t",
            "x25e",
            "--size",
            "32m",
            "--backing",
            b,
            "--socket",
            sock.to_str().unwrap(),
        ],
        "holds 67108864 bytes",
    );
    assert_eq!(std::fs::metadata(&backing).unwrap().len(), 64 << 20);
}

/// Lazily unmounts its paths when dropped (a failing test leaves no mount).
struct Unmount(Vec<std::path::PathBuf>);

impl Drop for Unmount {
    fn drop(&mut self) {
        for p in &self.0 {
            let _ = Command::new("umount").arg("-l").arg(p).output();
        }
    }
}

#[test]
#[cfg_attr(
    raidlab_no_fuse_mount,
    ignore = "cannot mount here: needs nbdfuse (libnbd-bin), /dev/fuse and root for a loop mount"
)]
fn mkfs_ext4_on_nbdfuse_of_a_served_simulated_array_holds_files() {
    let d = dir("fuse");
    let sock = d.join("s.sock");
    let child = serve(SIMULATED, &sock, &["--size", "256m"]);
    let fuse_dir = d.join("n");
    std::fs::create_dir_all(&fuse_dir).unwrap();
    let disk = fuse_dir.join("disk");
    let mut fuse = Command::new("nbdfuse")
        .arg(&disk)
        .arg(uri(&sock))
        .spawn()
        .expect("nbdfuse");
    let mnt = d.join("mnt");
    // Whatever happens below, nothing stays mounted.
    let _unmount = Unmount(vec![mnt.clone(), fuse_dir.clone()]);
    let t = Instant::now();
    while std::fs::metadata(&disk).map(|m| m.len()).unwrap_or(0) != 256 << 20 {
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "nbdfuse did not mount"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let run = |cmd: &str, args: &[&std::ffi::OsStr]| {
        let o = Command::new(cmd).args(args).output().expect(cmd);
        assert!(o.status.success(), "{cmd} {args:?}: {}", stderr(&o));
    };
    std::fs::create_dir_all(&mnt).unwrap();
    run(
        "mkfs.ext4",
        &["-q".as_ref(), "-F".as_ref(), disk.as_os_str()],
    );
    run(
        "mount",
        &[
            "-o".as_ref(),
            "loop".as_ref(),
            disk.as_os_str(),
            mnt.as_os_str(),
        ],
    );
    let payload: Vec<u8> = (0..3u32 << 20)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    std::fs::write(mnt.join("a.bin"), &payload).unwrap();
    std::fs::write(mnt.join("b.txt"), b"raidlab").unwrap();
    run("umount", &[mnt.as_os_str()]);
    // Mounted again, the files read back from the served array.
    run(
        "mount",
        &[
            "-o".as_ref(),
            "loop".as_ref(),
            disk.as_os_str(),
            mnt.as_os_str(),
        ],
    );
    assert!(std::fs::read(mnt.join("a.bin")).unwrap() == payload);
    assert_eq!(std::fs::read(mnt.join("b.txt")).unwrap(), b"raidlab");
    run("umount", &[mnt.as_os_str()]);
    run("umount", &[fuse_dir.as_os_str()]);
    let _ = fuse.wait();
    let log = stop(child);
    assert!(log.contains("the model answered"), "{log}");
}

#[test]
#[cfg_attr(
    raidlab_no_qemu,
    ignore = "qemu-io is not installed (apt-get install qemu-utils)"
)]
fn a_degraded_simulated_array_and_one_rebuilding_serve_writes_flushes_and_reads() {
    let d = dir("degraded-sim");
    let sock = d.join("s.sock");
    for topo in [
        "raid5(3*x25e, missing)",
        "raid5[stripe=64k,spares=1,rebuild_max=100m](2*x25e, missing, x25e)",
    ] {
        let child = serve(topo, &sock, &["--size", "64m"]);
        qemu_io(
            &sock,
            &["write -P 0x77 1M 1M", "flush", "read -P 0x77 1M 1M"],
        );
        let log = stop(child);
        assert!(log.contains("the model answered"), "{topo}: {log}");
    }
}
