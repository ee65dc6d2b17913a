//! A real raidlab volume as an NBD [`Store`]: the md-compatible engine
//! behind `raidlab serve -t EXPR-over-paths`.
//!
//! The volume is assembled as `run` assembles it (superblocks read, an
//! array not stopped cleanly resynchronised, spares rebuilt) and marked
//! active before the first client; its write-intent bitmap records each
//! region before it is written; a FLUSH syncs every member; when serving
//! ends the members are synced and the arrays marked clean. After a crash
//! the next assembly resynchronises what the bitmap names, as md does.
//! Requests from all connections go through one lock, one at a time: a
//! parity array's read-modify-write then never races another.

use crate::backend::block_on;
use crate::error::{Error, ErrorKind};
use crate::nbd::Store;
use crate::options::RunOptions;
use crate::{backend::Backend, exec};
use raidlab_core::workload::{Rw, Workload};
use std::io;
use std::sync::Mutex;

/// A served real volume (borrowing the members for the serve's length).
struct Volume<'a> {
    vol: &'a exec::Vol,
    members: &'a crate::backend::Members,
    intent: Option<&'a crate::intent::Intent>,
    /// One request at a time, from any connection.
    lock: Mutex<()>,
}

impl Volume<'_> {
    fn exec<R>(&self, f: impl FnOnce(&exec::Exec<'_, '_>, &Backend<'_>) -> R) -> R {
        let _held = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        let be = Backend::psync(self.members);
        let ex = exec::Exec {
            vol: self.vol,
            be: &be,
            mirror_turn: std::cell::Cell::new(0),
            spares: Default::default(),
        };
        f(&ex, &be)
    }
}

impl Store for Volume<'_> {
    fn size(&self) -> u64 {
        self.vol.capacity
    }

    fn read(&self, off: u64, buf: &mut [u8]) -> io::Result<()> {
        self.exec(|ex, be| block_on(be, ex.read(0, off, buf)))
    }

    fn write(&self, off: u64, data: &[u8]) -> io::Result<()> {
        if let Some(i) = self.intent {
            // The bitmap names the region, durably, before it changes.
            i.mark(off, data.len() as u64, self.members)?;
        }
        self.exec(|ex, be| block_on(be, ex.write(0, off, data)))
    }

    fn flush(&self) -> io::Result<()> {
        self.exec(|ex, be| block_on(be, ex.flush(0)))
    }
}

/// Assemble the real topology `expr` for serving and hand `serve` the
/// volume; once it returns, sync the members and mark the arrays clean.
/// Members must exist (`raidlab create` makes arrays); devices with
/// signatures are refused unless `force`.
pub fn with_volume<R>(
    expr: &str,
    force: bool,
    serve: impl FnOnce(&dyn Store) -> R,
) -> Result<R, Error> {
    let mut topo = crate::topo::parse_real(expr)?;
    topo.take_spares();
    for m in &topo.members {
        if !m.path.exists() {
            return Err(Error::new(
                ErrorKind::Refused,
                format!(
                    "{} does not exist: serve opens members as they are ('raidlab create -t EXPR' makes an array)",
                    m.path.display()
                ),
            ));
        }
    }
    // Served through the page cache: a FLUSH syncs it to the members.
    let opts = RunOptions {
        force,
        direct: false,
        ..RunOptions::default()
    };
    let w = Workload {
        rw: Rw::RandRw,
        ..Workload::default()
    };
    let (arrays, _, _) =
        crate::lifecycle::open_run(&topo, w.bytes_needed(), crate::safety::Access::Write, &opts)?;
    let crate::lifecycle::Arrays {
        mut members,
        sizes,
        asm,
        vol,
        ..
    } = arrays;
    let mut life = crate::lifecycle::mark_active(
        &topo,
        &mut members,
        &vol,
        &asm,
        &sizes,
        crate::safety::Access::Write,
        &opts,
    )?;
    let intent = crate::lifecycle::intent_for(&asm, &vol, life.events);
    let volume = Volume {
        vol: &vol,
        members: &members,
        intent: intent.as_ref(),
        lock: Mutex::new(()),
    };
    let out = serve(&volume);
    if asm.has_metadata() {
        crate::lifecycle::mark_clean(&mut topo, &members, &asm, &sizes, &mut life)?;
    } else {
        for f in &members.files {
            f.sync_data()
                .map_err(|e| Error::io("flushing members", e))?;
        }
    }
    Ok(out)
}

/// Where the server listens.
#[derive(Debug, Clone)]
pub enum Listen {
    /// A unix socket at this path (the default: only this machine's users
    /// with access to the path can connect).
    Unix(std::path::PathBuf),
    /// TCP on exactly this address.
    Tcp(std::net::SocketAddr),
}

impl Listen {
    /// The NBD URI clients connect to.
    pub fn uri(&self) -> String {
        match self {
            Listen::Unix(p) => format!("nbd+unix:///?socket={}", p.display()),
            Listen::Tcp(a) => format!("nbd://{a}/"),
        }
    }
}

/// How to serve.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// Where.
    pub listen: Listen,
    /// Serve devices that carry signatures.
    pub force: bool,
    /// Stop once this many connections have ended (`None`: until SIGINT
    /// or SIGTERM).
    pub connections: Option<u64>,
    /// Most clients served at once; more are closed as they connect.
    pub max_clients: usize,
}

/// Most clients served at once by default: 64.
pub const MAX_CLIENTS: usize = 64;

/// What a serve did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ServeSummary {
    /// Connections served to their end.
    pub connections: u64,
    /// Connections closed at once (over `max_clients`).
    pub refused: u64,
    /// Their requests, errors and bytes, summed.
    pub counts: crate::nbd::Counts,
    /// Clients cut off for breaking the protocol: the first few reasons.
    pub protocol_errors: Vec<String>,
}

/// A client's socket, unix or TCP.
enum Conn {
    Unix(std::os::unix::net::UnixStream),
    Tcp(std::net::TcpStream),
}

impl Conn {
    fn try_clone(&self) -> io::Result<Conn> {
        Ok(match self {
            Conn::Unix(s) => Conn::Unix(s.try_clone()?),
            Conn::Tcp(s) => Conn::Tcp(s.try_clone()?),
        })
    }

    fn write_timeout(&self, t: std::time::Duration) -> io::Result<()> {
        match self {
            Conn::Unix(s) => s.set_write_timeout(Some(t)),
            Conn::Tcp(s) => s.set_write_timeout(Some(t)),
        }
    }

    fn shutdown(&self) {
        let _ = match self {
            Conn::Unix(s) => s.shutdown(std::net::Shutdown::Both),
            Conn::Tcp(s) => s.shutdown(std::net::Shutdown::Both),
        };
    }

    fn blocking(&self) -> io::Result<()> {
        match self {
            Conn::Unix(s) => s.set_nonblocking(false),
            Conn::Tcp(s) => {
                s.set_nodelay(true)?;
                s.set_nonblocking(false)
            }
        }
    }
}

/// A client's socket read through a buffer: one system call takes every
/// request the client has sent so far, a write's payload with its header,
/// instead of one for each header and one for each payload (at queue depth
/// 32 the server's CPU is what limits a served array); writes go straight
/// to the socket.
struct Buffered<'a>(io::BufReader<&'a mut Conn>);

impl<'a> Buffered<'a> {
    /// Room for a few 4 KiB writes with their headers, or one 128 KiB
    /// write; a larger payload is read straight into its own buffer.
    const ROOM: usize = 132 << 10;

    fn new(conn: &'a mut Conn) -> Self {
        Buffered(io::BufReader::with_capacity(Self::ROOM, conn))
    }
}

impl io::Read for Buffered<'_> {
    fn read(&mut self, b: &mut [u8]) -> io::Result<usize> {
        self.0.read(b)
    }
}

impl io::Write for Buffered<'_> {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        self.0.get_mut().write(b)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.0.get_mut().flush()
    }
}

impl io::Read for Conn {
    fn read(&mut self, b: &mut [u8]) -> io::Result<usize> {
        match self {
            Conn::Unix(s) => s.read(b),
            Conn::Tcp(s) => s.read(b),
        }
    }
}

impl io::Write for Conn {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        match self {
            Conn::Unix(s) => s.write(b),
            Conn::Tcp(s) => s.write(b),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            Conn::Unix(s) => s.flush(),
            Conn::Tcp(s) => s.flush(),
        }
    }
}

/// A bound listener.
enum Listener {
    Unix(std::os::unix::net::UnixListener),
    Tcp(std::net::TcpListener),
}

impl Listener {
    /// Bind `l`. A unix socket left by an earlier server is replaced; any
    /// other file at the path is refused, never removed.
    fn bind(l: &Listen) -> Result<Listener, Error> {
        let bad = |what: String| Error::new(ErrorKind::Refused, what);
        let io_err = |e: io::Error| bad(format!("{}: {e}", l.uri()));
        let listener = match l {
            Listen::Unix(p) => {
                use std::os::unix::fs::FileTypeExt;
                match std::fs::symlink_metadata(p) {
                    Ok(m) if m.file_type().is_socket() => {
                        std::fs::remove_file(p).map_err(io_err)?
                    }
                    Ok(_) => {
                        return Err(bad(format!(
                            "{} exists and is not a socket: give another --socket path",
                            p.display()
                        )))
                    }
                    Err(_) => {}
                }
                Listener::Unix(std::os::unix::net::UnixListener::bind(p).map_err(io_err)?)
            }
            Listen::Tcp(a) => Listener::Tcp(std::net::TcpListener::bind(a).map_err(io_err)?),
        };
        match &listener {
            Listener::Unix(u) => u.set_nonblocking(true),
            Listener::Tcp(t) => t.set_nonblocking(true),
        }
        .map_err(io_err)?;
        Ok(listener)
    }

    fn accept(&self) -> io::Result<Conn> {
        Ok(match self {
            Listener::Unix(u) => Conn::Unix(u.accept()?.0),
            Listener::Tcp(t) => Conn::Tcp(t.accept()?.0),
        })
    }
}

/// Set by SIGINT or SIGTERM: stop serving.
static STOP: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    // Only an atomic store: async-signal-safe.
    STOP.store(true, std::sync::atomic::Ordering::SeqCst);
}

/// Stop on SIGINT and SIGTERM instead of dying, so the arrays are marked
/// clean.
fn catch_signals() {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: `on_signal` is an `extern "C" fn(c_int)` that only
        // stores to an atomic, which is async-signal-safe; the sigaction
        // struct is zeroed (a valid empty mask and no flags) before its
        // handler is set, and the old action is not asked for (null).
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

/// Serve the real topology `expr` over NBD until stopped; `ready` is told
/// the volume's size once clients may connect.
pub fn serve(
    expr: &str,
    opts: &ServeOptions,
    ready: impl FnOnce(u64),
) -> Result<ServeSummary, Error> {
    let listener = Listener::bind(&opts.listen)?;
    catch_signals();
    let out = with_volume(expr, opts.force, |store| {
        ready(store.size());
        accept_loop(&listener, opts, &|conn, counts| {
            crate::nbd::serve(&mut Buffered::new(conn), store, counts)
        })
    });
    if let Listen::Unix(p) = &opts.listen {
        let _ = std::fs::remove_file(p);
    }
    out
}

/// Serve `store` (one that answers requests as it chooses: a simulated
/// array) over NBD until stopped, each connection keeping many requests
/// in flight; `ready` is told the size once clients may connect.
pub fn serve_pipelined(
    store: &dyn crate::nbd::Pipelined,
    opts: &ServeOptions,
    ready: impl FnOnce(u64),
) -> Result<ServeSummary, Error> {
    let listener = Listener::bind(&opts.listen)?;
    catch_signals();
    ready(store.size());
    let out = accept_loop(&listener, opts, &|conn, counts| {
        let writer: Box<dyn io::Write + Send> = match conn.try_clone() {
            Ok(w) => match w.write_timeout(REPLY_TIMEOUT) {
                Ok(()) => Box::new(w),
                Err(e) => return crate::nbd::End::Io(e),
            },
            Err(e) => return crate::nbd::End::Io(e),
        };
        crate::nbd::serve_pipelined(&mut Buffered::new(conn), writer, store, counts)
    });
    if let Listen::Unix(p) = &opts.listen {
        let _ = std::fs::remove_file(p);
    }
    Ok(out)
}

/// Let the calling thread's timed waits end within a microsecond of their
/// time instead of Linux's default 50 µs slack (`PR_SET_TIMERSLACK`): a
/// served simulated array wakes to answer requests when its model
/// completes them.
pub fn fine_timer_slack() {
    // SAFETY: prctl with PR_SET_TIMERSLACK takes a plain integer and
    // changes only this thread's timer slack; it touches no memory.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
    }
}

/// How long a reply to a pipelined store's client may wait for room in its
/// socket: 1 s. The store answers from a thread shared by every
/// connection (a simulated array's model); a client that stops reading
/// its replies holds that thread up this long once, then gets no more
/// replies (its connection is left to end).
pub const REPLY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(1);

/// Serves one connection: its socket, and the counts to add to.
type Handler<'a> = dyn Fn(&mut Conn, &mut crate::nbd::Counts) -> crate::nbd::End + Sync + 'a;

/// Accept clients until a signal or the connection count, each served on
/// its own thread; at the end, open connections are shut down and waited
/// for.
fn accept_loop(listener: &Listener, opts: &ServeOptions, handle: &Handler<'_>) -> ServeSummary {
    use std::sync::atomic::{AtomicUsize, Ordering};
    /// How often the loop looks for a signal while no client connects.
    const POLL: std::time::Duration = std::time::Duration::from_millis(20);
    let summary = Mutex::new(ServeSummary::default());
    let active = AtomicUsize::new(0);
    // Each open connection's clone, by number, to shut it down at the end.
    let open: Mutex<Vec<(u64, Conn)>> = Mutex::new(Vec::new());
    let mut next_id = 0u64;
    std::thread::scope(|s| {
        loop {
            let ended = summary
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .connections;
            if STOP.load(Ordering::SeqCst) || opts.connections.is_some_and(|n| ended >= n) {
                break;
            }
            let conn = match listener.accept() {
                Ok(c) => c,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    std::thread::sleep(POLL);
                    continue;
                }
                Err(_) => continue,
            };
            if active.load(Ordering::SeqCst) >= opts.max_clients || conn.blocking().is_err() {
                summary.lock().unwrap_or_else(|e| e.into_inner()).refused += 1;
                continue;
            }
            let id = next_id;
            next_id += 1;
            if let Ok(c) = conn.try_clone() {
                open.lock().unwrap_or_else(|e| e.into_inner()).push((id, c));
            }
            active.fetch_add(1, Ordering::SeqCst);
            let (summary, active, open) = (&summary, &active, &open);
            s.spawn(move || {
                let mut conn = conn;
                let mut counts = crate::nbd::Counts::default();
                let end = handle(&mut conn, &mut counts);
                let mut sm = summary.lock().unwrap_or_else(|e| e.into_inner());
                sm.connections += 1;
                sm.counts.requests += counts.requests;
                sm.counts.errors += counts.errors;
                sm.counts.read_bytes += counts.read_bytes;
                sm.counts.written_bytes += counts.written_bytes;
                if let crate::nbd::End::Protocol(why) = end {
                    if sm.protocol_errors.len() < 8 {
                        sm.protocol_errors.push(why);
                    }
                }
                drop(sm);
                open.lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .retain(|(k, _)| *k != id);
                active.fetch_sub(1, Ordering::SeqCst);
            });
        }
        for (_, c) in open.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            c.shutdown();
        }
    });
    summary.into_inner().unwrap_or_else(|e| e.into_inner())
}
