//! An NBD server that answers every request a fixed time after it arrives,
//! with zeroes for reads: what a constant-latency device costs a client
//! over NBD on this host. The served simulated arrays hold each request for
//! the model's latency; the host's share of what a client then measures
//! (the protocol, and waking a client that idled for that long) is what
//! this server's answers take beyond the hold.

use raidlab_io::nbd::{serve_pipelined, Command, Counts, Pipelined, Reply};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The served size: 64 MiB, as the round trip's file in memory.
const SIZE: u64 = 64 << 20;

/// The stretch before an answer is due that the answering thread spins
/// through instead of sleeping: as the served simulated array's
/// (`raidlab_emulate::SPIN_NS`, 20 µs), so that both wait alike.
const SPIN: Duration = Duration::from_micros(20);

/// How long after a request arrives or an answer leaves the answering
/// thread spins rather than sleeps: as the served simulated array's model
/// thread after its last activity (200 µs), which keeps a core awake
/// through a short hold and until a depth-1 client's next request.
const SPIN_AFTER: Duration = Duration::from_micros(200);

/// A request waiting for its time.
struct Held {
    came: Instant,
    due: Instant,
    read_len: usize,
    reply: Reply,
}

/// The store: hands each request, stamped with when it is due, to the
/// answering thread.
struct Hold {
    hold: Duration,
    to: mpsc::Sender<Held>,
}

impl Pipelined for Hold {
    fn size(&self) -> u64 {
        SIZE
    }

    fn take(&self, cmd: Command, reply: Reply) {
        let read_len = match cmd {
            Command::Read { len, .. } => len as usize,
            _ => 0,
        };
        let came = Instant::now();
        let due = came + self.hold;
        // The answering thread outlives every connection; a send that
        // fails (it is gone) drops the reply, which answers EIO.
        let _ = self.to.send(Held {
            came,
            due,
            read_len,
            reply,
        });
    }
}

/// Answer requests in the order they came (each is held alike, so that is
/// the order they fall due), waiting as the served simulated array does:
/// spinning for [`SPIN_AFTER`] after a request came or an answer went out
/// and through the last [`SPIN`] before a request is due, asleep between.
fn answer(from: mpsc::Receiver<Held>) {
    let zeroes = vec![0u8; 1 << 20];
    let mut answered = Instant::now();
    while let Some(h) = next(&from, answered) {
        loop {
            let now = Instant::now();
            if now >= h.due {
                break;
            }
            if now < h.came + SPIN_AFTER || h.due <= now + SPIN {
                std::thread::yield_now();
            } else {
                std::thread::sleep(h.due - now - SPIN);
            }
        }
        h.reply.ok(&zeroes[..h.read_len.min(zeroes.len())]);
        answered = Instant::now();
    }
}

/// The next request: looked for while spinning until [`SPIN_AFTER`] past
/// the last answer (the model's thread spins as long after its last
/// activity, and on a host of two cores that spinning is part of what a
/// depth-1 client pays), then waited for asleep. `None` once every sender
/// is gone.
fn next(from: &mpsc::Receiver<Held>, answered: Instant) -> Option<Held> {
    while answered.elapsed() < SPIN_AFTER {
        match from.try_recv() {
            Ok(h) => return Some(h),
            Err(mpsc::TryRecvError::Empty) => std::thread::yield_now(),
            Err(mpsc::TryRecvError::Disconnected) => return None,
        }
    }
    from.recv().ok()
}

/// A running server; [`HeldServer::stop`] ends it.
pub struct HeldServer {
    sock: PathBuf,
    stop: Arc<AtomicBool>,
    accept: JoinHandle<()>,
}

/// Serve at `sock`, answering each request `hold` after it arrives.
pub fn serve_held(sock: &Path, hold: Duration) -> HeldServer {
    let _ = std::fs::remove_file(sock);
    let listener = UnixListener::bind(sock).expect("bind the held server's socket");
    let stop = Arc::new(AtomicBool::new(false));
    let (to, from) = mpsc::channel();
    std::thread::spawn(move || answer(from));
    let store = Arc::new(Hold { hold, to });
    let ending = stop.clone();
    let accept = std::thread::spawn(move || {
        for conn in listener.incoming() {
            if ending.load(Ordering::SeqCst) {
                break;
            }
            let Ok(mut conn) = conn else { continue };
            let store = store.clone();
            std::thread::spawn(move || {
                let writer = Box::new(conn.try_clone().expect("clone the connection"));
                serve_pipelined(&mut conn, writer, &*store, &mut Counts::default());
            });
        }
    });
    HeldServer {
        sock: sock.to_path_buf(),
        stop,
        accept,
    }
}

impl HeldServer {
    /// Stop accepting connections (those open end with their clients).
    pub fn stop(self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accepting thread so that it sees the flag.
        let _ = UnixStream::connect(&self.sock);
        self.accept
            .join()
            .expect("the held server's accepting thread");
        let _ = std::fs::remove_file(&self.sock);
    }
}
