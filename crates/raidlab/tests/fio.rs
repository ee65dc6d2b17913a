//! fio interop: the job file `raidlab export-fio` prints, run by fio, does
//! the same I/O as `raidlab run` on the same file — the same total I/O
//! count and the same bytes per direction.
//!
//! fio comes from Debian (CI installs it). Without it the test says it was
//! skipped, unless RAIDLAB_REQUIRE_FIO is set (CI sets it), when it fails.

use serde_json::Value;
use std::process::Command;

fn raidlab(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_raidlab"))
        .args(args)
        .output()
        .expect("raidlab runs")
}

fn fio_available() -> bool {
    Command::new("fio")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn fio_and_raidlab_do_the_same_io() {
    if !fio_available() {
        assert!(
            std::env::var_os("RAIDLAB_REQUIRE_FIO").is_none(),
            "fio is required here (RAIDLAB_REQUIRE_FIO is set) but not installed"
        );
        eprintln!(
            "SKIPPED fio_and_raidlab_do_the_same_io: fio is not installed (apt-get install fio)"
        );
        return;
    }
    let dir = std::env::temp_dir().join(format!("raidlab-fio-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("target.img");
    std::fs::write(&file, vec![0u8; 16 << 20]).unwrap();
    let path = file.display().to_string();
    let cases = [
        ("rw=randread bs=4k iodepth=8 size=8m", true),
        ("rw=randwrite bs=8k iodepth=4 size=8m", true),
        ("rw=write bs=64k size=8m", true),
        ("rw=read bs=16k numjobs=2 size=8m", true),
        // fio draws each I/O's direction with its own generator, so a mixed
        // job matches in total I/Os and bytes, not per direction. (Not
        // compared: bssplit jobs, where fio's own draws of sizes decide
        // where it stops, a few blocks past `size`.) (Mixed
        // random and sequential jobs are not compared: fio ends a pass when
        // its sequential cursor reaches the end of the file, which depends
        // on where its own generator's random I/Os left it.)
        ("rw=randrw bs=4k rwmixread=70 size=4m", false),
    ];
    for (wl, per_direction) in cases {
        let job = raidlab(&[
            "export-fio",
            "-w",
            wl,
            "--filename",
            &path,
            "--engine",
            "psync",
            "--buffered",
        ]);
        assert!(
            job.status.success(),
            "{}",
            String::from_utf8_lossy(&job.stderr)
        );
        let job_path = dir.join("job.fio");
        std::fs::write(&job_path, &job.stdout).unwrap();

        let fio = Command::new("fio")
            .args(["--output-format=json"])
            .arg(&job_path)
            .output()
            .unwrap();
        assert!(
            fio.status.success(),
            "fio: {}",
            String::from_utf8_lossy(&fio.stderr)
        );
        // fio may print notes before its JSON document.
        let out = String::from_utf8_lossy(&fio.stdout);
        let f: Value =
            serde_json::from_str(&out[out.find('{').expect("fio JSON")..]).expect("fio JSON");
        let j = &f["jobs"][0];
        let fio_dir = |d: &str| {
            (
                j[d]["total_ios"].as_u64().unwrap(),
                j[d]["io_bytes"].as_u64().unwrap(),
            )
        };

        // raidlab reads the exported job file back, and runs it.
        let job_file = job_path.display().to_string();
        let r = raidlab(&[
            "run",
            "-t",
            &path,
            "--job",
            &job_file,
            "--buffered",
            "--format",
            "json",
        ]);
        assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
        let v: Value = serde_json::from_slice(&r.stdout).unwrap();
        let ours = |d: &str| {
            (
                v["real"][d]["ios"].as_u64().unwrap(),
                v["real"][d]["bytes"].as_u64().unwrap(),
            )
        };
        let (fr, fw, rr, rw) = (
            fio_dir("read"),
            fio_dir("write"),
            ours("read"),
            ours("write"),
        );
        if per_direction {
            assert_eq!(
                (rr, rw),
                (fr, fw),
                "{wl}: raidlab vs fio (ios, bytes) per direction"
            );
        } else {
            assert_eq!(rr.0 + rw.0, fr.0 + fw.0, "{wl}: total I/Os");
            assert_eq!(rr.1 + rw.1, fr.1 + fw.1, "{wl}: total bytes");
        }
        assert!(rr.0 + rw.0 > 0);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
