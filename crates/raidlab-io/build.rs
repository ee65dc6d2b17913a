//! Tells the block-device tests whether this machine can attach loop
//! devices, and the metadata interop test whether mdadm is installed, so
//! that where they cannot run they are ignored with that reason (cargo's
//! summary counts them) instead of passing without having run. Where
//! RAIDLAB_REQUIRE_LOOP or RAIDLAB_REQUIRE_MDADM is set nothing is excused:
//! the test runs and fails without the device or tool.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(raidlab_no_loop)");
    println!("cargo::rerun-if-env-changed=RAIDLAB_REQUIRE_LOOP");
    println!("cargo::rerun-if-changed=build.rs");
    // Attaching needs write access to the loop control device (root).
    let can = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/loop-control")
        .is_ok();
    if !can && std::env::var_os("RAIDLAB_REQUIRE_LOOP").is_none() {
        println!("cargo::rustc-cfg=raidlab_no_loop");
    }
    println!("cargo::rustc-check-cfg=cfg(raidlab_no_mdadm)");
    println!("cargo::rerun-if-env-changed=RAIDLAB_REQUIRE_MDADM");
    let mdadm = ["/usr/sbin/mdadm", "/sbin/mdadm"]
        .iter()
        .any(|p| std::path::Path::new(p).exists());
    if !mdadm && std::env::var_os("RAIDLAB_REQUIRE_MDADM").is_none() {
        println!("cargo::rustc-cfg=raidlab_no_mdadm");
    }
}
