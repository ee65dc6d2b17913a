//! Tells the interop tests which outside tools this machine lacks, so that a
//! test that cannot run is ignored with its reason, which cargo's test
//! summary counts and shows, instead of passing without having run. Where
//! RAIDLAB_REQUIRE_FIO, RAIDLAB_REQUIRE_CHROMIUM or RAIDLAB_REQUIRE_NBD
//! (qemu-io and libnbd's nbdcopy) is set (CI sets them all),
//! nothing is excused: the test runs, and fails if its tool is missing.

use std::process::Command;

/// Whether `cmd --version` runs and succeeds.
fn has(cmd: &str) -> bool {
    Command::new(cmd)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Set `cfg(name)` when none of `cmds` is installed and `require` is unset.
fn lacks(name: &str, cmds: &[&str], require: &str) {
    println!("cargo::rustc-check-cfg=cfg({name})");
    println!("cargo::rerun-if-env-changed={require}");
    if std::env::var_os(require).is_none() && !cmds.iter().any(|c| has(c)) {
        println!("cargo::rustc-cfg={name}");
    }
}

/// Set `cfg(raidlab_no_fuse_mount)` unless this machine can put a file
/// system on an nbdfuse file and loop-mount it: nbdfuse, /dev/fuse, and
/// root (mount). Not a tool CI can install everywhere (containers often
/// lack /dev/fuse), so never required.
fn fuse_mount() {
    println!("cargo::rustc-check-cfg=cfg(raidlab_no_fuse_mount)");
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.starts_with(b"0\n"));
    let fuse = std::path::Path::new("/dev/fuse").exists();
    let nbdfuse = Command::new("nbdfuse")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !(root && fuse && nbdfuse) {
        println!("cargo::rustc-cfg=raidlab_no_fuse_mount");
    }
}

fn main() {
    println!("cargo::rerun-if-env-changed=PATH");
    println!("cargo::rerun-if-changed=build.rs");
    // Installing a tool changes the directory it lands in: look again then.
    if let Some(path) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&path).filter(|d| d.is_dir()) {
            println!("cargo::rerun-if-changed={}", dir.display());
        }
    }
    lacks("raidlab_no_fio", &["fio"], "RAIDLAB_REQUIRE_FIO");
    lacks("raidlab_no_qemu", &["qemu-io"], "RAIDLAB_REQUIRE_NBD");
    lacks("raidlab_no_libnbd", &["nbdcopy"], "RAIDLAB_REQUIRE_NBD");
    fuse_mount();
    lacks(
        "raidlab_no_chromium",
        &["chromium", "chromium-browser", "google-chrome"],
        "RAIDLAB_REQUIRE_CHROMIUM",
    );
}
