//! Starting and stopping `raidlab serve` for the tests that talk to it.

use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Start `raidlab serve` and wait for its socket.
pub fn serve(expr: &str, sock: &std::path::Path, extra: &[&str]) -> Child {
    let mut args = vec!["serve", "-t", expr, "--socket", sock.to_str().unwrap()];
    args.extend_from_slice(extra);
    let child = Command::new(env!("CARGO_BIN_EXE_raidlab"))
        .args(&args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start raidlab serve");
    let t = Instant::now();
    while !sock.exists() {
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "no socket at {}",
            sock.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // The socket exists once bound; the volume is assembled just after.
    std::thread::sleep(Duration::from_millis(200));
    child
}

pub fn uri(sock: &std::path::Path) -> String {
    format!("nbd+unix:///?socket={}", sock.display())
}

/// Stop a server with SIGTERM (it then marks its arrays clean) and wait.
pub fn stop(child: Child) -> String {
    let st = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    finished(child)
}

/// Wait for a server started with --connections to exit by itself.
pub fn finished(mut child: Child) -> String {
    let t = Instant::now();
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            let mut e = String::new();
            child.stderr.take().unwrap().read_to_string(&mut e).unwrap();
            assert!(st.success(), "serve: {e}");
            return e;
        }
        assert!(t.elapsed() < Duration::from_secs(60), "serve did not stop");
        std::thread::sleep(Duration::from_millis(20));
    }
}
