//! Helpers shared by the command-line tests.
#![allow(dead_code)]

pub use std::process::{Command, Output};

pub mod held;
pub mod served;

pub fn raidlab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_raidlab"))
        .args(args)
        .output()
        .expect("run raidlab")
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn tmp(name: &str, text: &str) -> String {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("raidlab-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_string_lossy().into_owned()
}

/// A file of zeros `bytes` long (sparse) beside [`tmp`]'s, named `name`.
pub fn zeros(name: &str, bytes: u64) -> String {
    let p = tmp(name, "");
    set_len(&p, bytes);
    p
}

/// Make the file at `path` `bytes` long (a hole past its end).
pub fn set_len(path: &str, bytes: u64) {
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_len(bytes)
        .unwrap();
}

/// A fresh directory of this test process named after `name`, and the
/// paths of `n` member files in it (`m0.img`, `m1.img`, ...), not created.
#[allow(dead_code)] // not every test binary has real members
pub fn member_paths(name: &str, n: usize) -> (std::path::PathBuf, Vec<String>) {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("raidlab-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let m = (0..n)
        .map(|i| dir.join(format!("m{i}.img")).display().to_string())
        .collect();
    (dir, m)
}

/// Bad input: exit status 2, one line on stderr naming the problem, nothing on stdout.
pub fn assert_input_error(args: &[&str], want: &str) {
    let o = raidlab(args);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {e}");
    assert_eq!(
        e.trim_end().lines().count(),
        1,
        "{args:?}: one line, got {e:?}"
    );
    assert!(e.contains(want), "{args:?}: '{e}' lacks '{want}'");
    assert!(!e.contains("panicked"), "{e}");
    assert!(o.stdout.is_empty());
}

/// Run raidlab, which must succeed, and parse its stdout as JSON.
pub fn json_of(args: &[&str]) -> serde_json::Value {
    let o = raidlab(args);
    assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{args:?}: not JSON: {e}"))
}

/// Run raidlab with `args` and kill it (SIGKILL) after `ms` milliseconds, as
/// a crash would stop it.
pub fn killed_after(args: &[&str], ms: u64) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_raidlab"))
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("run raidlab");
    std::thread::sleep(std::time::Duration::from_millis(ms));
    child.kill().expect("SIGKILL");
    child.wait().expect("reap it");
}
