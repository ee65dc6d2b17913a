//! The NBD protocol, server side: the fixed newstyle handshake
//! (`NBD_OPT_EXPORT_NAME`, `NBD_OPT_GO`, `NBD_OPT_INFO`, `NBD_OPT_LIST`,
//! `NBD_OPT_ABORT`) and the transmission phase with simple replies (READ,
//! WRITE with FUA, FLUSH, TRIM, WRITE_ZEROES, CACHE, DISCONNECT), as the
//! NBD protocol document (`doc/proto.md` of the NBD project) states them.
//!
//! The server is generic over a [`Store`]. Every length a client sends is
//! bounded before anything is allocated or read for it; a request the
//! store cannot take gets an NBD error and the connection carries on; a
//! client that breaks the protocol (bad magic, an oversized payload it
//! would have to be read past) is disconnected.

use std::io::{self, Read, Write};

/// `NBDMAGIC`, the handshake's first word.
const NBDMAGIC: u64 = 0x4e42_444d_4147_4943;
/// `IHAVEOPT`: newstyle negotiation, and the prefix of every option.
const IHAVEOPT: u64 = 0x4948_4156_454F_5054;
/// The magic of an option reply.
const REPLY_MAGIC: u64 = 0x0003_e889_0455_65a9;
/// The magic of a request and of a simple reply.
const REQUEST_MAGIC: u32 = 0x2560_9513;
const SIMPLE_REPLY_MAGIC: u32 = 0x6744_6698;

/// Handshake flags: fixed newstyle, no zero padding.
const FLAG_FIXED_NEWSTYLE: u16 = 1;
const FLAG_NO_ZEROES: u16 = 2;

/// Options.
const OPT_EXPORT_NAME: u32 = 1;
const OPT_ABORT: u32 = 2;
const OPT_LIST: u32 = 3;
const OPT_INFO: u32 = 6;
const OPT_GO: u32 = 7;

/// Option replies.
const REP_ACK: u32 = 1;
const REP_SERVER: u32 = 2;
const REP_INFO: u32 = 3;
const REP_ERR_UNSUP: u32 = (1 << 31) + 1;
const REP_ERR_INVALID: u32 = (1 << 31) + 3;
const REP_ERR_TOO_BIG: u32 = (1 << 31) + 9;

/// `NBD_INFO_*` items.
const INFO_EXPORT: u16 = 0;
const INFO_BLOCK_SIZE: u16 = 3;

/// Transmission flags.
const TF_HAS_FLAGS: u16 = 1 << 0;
const TF_SEND_FLUSH: u16 = 1 << 2;
const TF_SEND_FUA: u16 = 1 << 3;
const TF_SEND_TRIM: u16 = 1 << 5;
const TF_SEND_WRITE_ZEROES: u16 = 1 << 6;
const TF_CAN_MULTI_CONN: u16 = 1 << 8;
const TF_SEND_CACHE: u16 = 1 << 10;

/// Commands.
const CMD_READ: u16 = 0;
const CMD_WRITE: u16 = 1;
const CMD_DISC: u16 = 2;
const CMD_FLUSH: u16 = 3;
const CMD_TRIM: u16 = 4;
const CMD_CACHE: u16 = 5;
const CMD_WRITE_ZEROES: u16 = 6;
/// Command flag: force unit access.
const CMD_FLAG_FUA: u16 = 1;

/// Error values of a reply (errno numbers, as the protocol fixes them).
const EIO: u32 = 5;
const EINVAL: u32 = 22;
const ENOSPC: u32 = 28;
const EOVERFLOW: u32 = 75;

/// Longest option payload read, bytes: an export name of up to 4,096
/// bytes (the protocol's limit) and its framing.
pub const MAX_OPTION: u32 = 4096 + 64;
/// Largest read or write one request may ask for: 32 MiB, the largest
/// the NBD document says a server should accept (`NBD_INFO_BLOCK_SIZE`'s
/// customary maximum).
pub const MAX_REQUEST: u32 = 32 << 20;
/// Smallest block the server asks clients to align to: a 512-byte sector.
pub const MIN_BLOCK: u32 = 512;
/// The block size it prefers: a 4 KiB page.
const PREFERRED_BLOCK: u32 = 4096;

/// What a served device can do.
pub trait Store: Sync {
    /// Size in bytes.
    fn size(&self) -> u64;
    /// Read `buf.len()` bytes at `off`.
    fn read(&self, off: u64, buf: &mut [u8]) -> io::Result<()>;
    /// Write `data` at `off`.
    fn write(&self, off: u64, data: &[u8]) -> io::Result<()>;
    /// Make every write completed so far durable.
    fn flush(&self) -> io::Result<()>;
    /// `len` bytes at `off` may be discarded (their content is then
    /// unspecified); the default keeps them.
    fn trim(&self, _off: u64, _len: u64) -> io::Result<()> {
        Ok(())
    }
}

/// Why a connection ended.
#[derive(Debug)]
pub enum End {
    /// The client disconnected (`NBD_CMD_DISC`, `NBD_OPT_ABORT` or EOF).
    Disconnected,
    /// The client broke the protocol: what it did.
    Protocol(String),
    /// The socket failed.
    Io(io::Error),
}

impl From<io::Error> for End {
    fn from(e: io::Error) -> End {
        if e.kind() == io::ErrorKind::UnexpectedEof {
            End::Disconnected
        } else {
            End::Io(e)
        }
    }
}

/// What a connection did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    /// Requests answered.
    pub requests: u64,
    /// Of them, answered with an error.
    pub errors: u64,
    /// Bytes read and written for the client.
    pub read_bytes: u64,
    /// See `read_bytes`.
    pub written_bytes: u64,
}

/// Serve one connection on `conn` from `store` until the client leaves.
pub fn serve<S: Store + ?Sized, C: Read + Write>(
    conn: &mut C,
    store: &S,
    counts: &mut Counts,
) -> End {
    match handshake(conn, store) {
        Ok(true) => {}
        Ok(false) => return End::Disconnected,
        Err(e) => return e,
    }
    match transmission(conn, store, counts) {
        Ok(()) => End::Disconnected,
        Err(e) => e,
    }
}

fn read_u32(c: &mut impl Read) -> io::Result<u32> {
    let mut b = [0; 4];
    c.read_exact(&mut b)?;
    Ok(u32::from_be_bytes(b))
}

fn read_u64(c: &mut impl Read) -> io::Result<u64> {
    let mut b = [0; 8];
    c.read_exact(&mut b)?;
    Ok(u64::from_be_bytes(b))
}

fn transmission_flags() -> u16 {
    TF_HAS_FLAGS
        | TF_SEND_FLUSH
        | TF_SEND_FUA
        | TF_SEND_TRIM
        | TF_SEND_WRITE_ZEROES
        | TF_SEND_CACHE
        // A flush makes every connection's completed writes durable (it
        // syncs the members, not a connection's own buffers).
        | TF_CAN_MULTI_CONN
}

/// The fixed newstyle handshake: true when the client goes on to the
/// transmission phase, false when it aborted.
fn handshake<S: Store + ?Sized, C: Read + Write>(c: &mut C, store: &S) -> Result<bool, End> {
    handshake_sized(c, store.size())
}

/// [`handshake`] for an export of `size` bytes.
fn handshake_sized<C: Read + Write>(c: &mut C, size: u64) -> Result<bool, End> {
    let mut hello = Vec::with_capacity(18);
    hello.extend_from_slice(&NBDMAGIC.to_be_bytes());
    hello.extend_from_slice(&IHAVEOPT.to_be_bytes());
    hello.extend_from_slice(&(FLAG_FIXED_NEWSTYLE | FLAG_NO_ZEROES).to_be_bytes());
    c.write_all(&hello)?;
    c.flush()?;
    let client = read_u32(c)?;
    if client & !u32::from(FLAG_FIXED_NEWSTYLE | FLAG_NO_ZEROES) != 0 {
        return Err(End::Protocol(format!("unknown client flags {client:#x}")));
    }
    let no_zeroes = client & u32::from(FLAG_NO_ZEROES) != 0;
    loop {
        if read_u64(c)? != IHAVEOPT {
            return Err(End::Protocol("an option without IHAVEOPT".into()));
        }
        let opt = read_u32(c)?;
        let len = read_u32(c)?;
        if len > MAX_OPTION {
            // The payload cannot be skipped safely: too big to hold.
            reply(c, opt, REP_ERR_TOO_BIG, b"option too long")?;
            return Err(End::Protocol(format!("an option of {len} bytes")));
        }
        let mut data = vec![0u8; len as usize];
        c.read_exact(&mut data)?;
        match opt {
            OPT_EXPORT_NAME => {
                let mut out = size.to_be_bytes().to_vec();
                out.extend_from_slice(&transmission_flags().to_be_bytes());
                if !no_zeroes {
                    out.extend_from_slice(&[0u8; 124]);
                }
                c.write_all(&out)?;
                c.flush()?;
                return Ok(true);
            }
            OPT_ABORT => {
                reply(c, opt, REP_ACK, &[])?;
                return Ok(false);
            }
            OPT_LIST => {
                if len != 0 {
                    reply(c, opt, REP_ERR_INVALID, b"LIST takes no data")?;
                    continue;
                }
                // One export, the default (empty) name.
                reply(c, opt, REP_SERVER, &0u32.to_be_bytes())?;
                reply(c, opt, REP_ACK, &[])?;
            }
            OPT_INFO | OPT_GO => {
                if answer_info(c, opt, &data, size)? && opt == OPT_GO {
                    return Ok(true);
                }
            }
            _ => reply(c, opt, REP_ERR_UNSUP, b"not supported")?,
        }
    }
}

/// Answer `NBD_OPT_INFO` or `NBD_OPT_GO` (`opt`, its `data`) for an
/// export of `size` bytes: the export's size and flags and its block
/// sizes, then ACK; whether the data was valid (else it was answered
/// `NBD_REP_ERR_INVALID`).
fn answer_info(c: &mut impl Write, opt: u32, data: &[u8], size: u64) -> io::Result<bool> {
    if let Err(msg) = parse_go(data) {
        reply(c, opt, REP_ERR_INVALID, msg.as_bytes())?;
        return Ok(false);
    }
    let mut info = INFO_EXPORT.to_be_bytes().to_vec();
    info.extend_from_slice(&size.to_be_bytes());
    info.extend_from_slice(&transmission_flags().to_be_bytes());
    reply(c, opt, REP_INFO, &info)?;
    let mut bs = INFO_BLOCK_SIZE.to_be_bytes().to_vec();
    for v in [MIN_BLOCK, PREFERRED_BLOCK, MAX_REQUEST] {
        bs.extend_from_slice(&v.to_be_bytes());
    }
    reply(c, opt, REP_INFO, &bs)?;
    reply(c, opt, REP_ACK, &[])?;
    Ok(true)
}

/// Check `NBD_OPT_GO`/`INFO` data: a name (any: the one export is served
/// under every name, as qemu-nbd does without `-x`) and a list of info
/// requests, lengths consistent.
fn parse_go(d: &[u8]) -> Result<(), &'static str> {
    let name_len = d
        .get(..4)
        .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize)
        .ok_or("GO data too short")?;
    let rest = d
        .get(4 + name_len..)
        .ok_or("export name longer than the data")?;
    let n = rest
        .get(..2)
        .map(|b| u16::from_be_bytes([b[0], b[1]]) as usize)
        .ok_or("no info request count")?;
    if rest.len() != 2 + 2 * n {
        return Err("info request count does not match the data");
    }
    Ok(())
}

/// An option reply.
fn reply(c: &mut impl Write, opt: u32, ty: u32, data: &[u8]) -> io::Result<()> {
    let mut out = Vec::with_capacity(20 + data.len());
    out.extend_from_slice(&REPLY_MAGIC.to_be_bytes());
    out.extend_from_slice(&opt.to_be_bytes());
    out.extend_from_slice(&ty.to_be_bytes());
    out.extend_from_slice(&(data.len() as u32).to_be_bytes());
    out.extend_from_slice(data);
    c.write_all(&out)?;
    c.flush()
}

/// One request's header.
struct Request {
    flags: u16,
    ty: u16,
    cookie: u64,
    offset: u64,
    len: u32,
}

fn read_request(c: &mut impl Read) -> Result<Request, End> {
    let mut h = [0u8; 28];
    c.read_exact(&mut h)?;
    let magic = u32::from_be_bytes([h[0], h[1], h[2], h[3]]);
    if magic != REQUEST_MAGIC {
        return Err(End::Protocol(format!("request magic {magic:#x}")));
    }
    let word = |i: usize| u64::from_be_bytes(h[i..i + 8].try_into().expect("8 bytes"));
    Ok(Request {
        flags: u16::from_be_bytes([h[4], h[5]]),
        ty: u16::from_be_bytes([h[6], h[7]]),
        cookie: word(8),
        offset: word(16),
        len: u32::from_be_bytes([h[24], h[25], h[26], h[27]]),
    })
}

/// A simple reply's 16-byte header.
fn reply_head(cookie: u64, err: u32) -> [u8; 16] {
    let mut head = [0u8; 16];
    head[..4].copy_from_slice(&SIMPLE_REPLY_MAGIC.to_be_bytes());
    head[4..8].copy_from_slice(&err.to_be_bytes());
    head[8..].copy_from_slice(&cookie.to_be_bytes());
    head
}

/// A simple reply, with `data` after it when the request succeeded.
fn simple_reply(
    c: &mut (impl Write + ?Sized),
    cookie: u64,
    err: u32,
    data: &[u8],
) -> io::Result<()> {
    let head = reply_head(cookie, err);
    /// Largest payload copied behind its header to go out in one write
    /// (a copy costs less than a second system call up to about here).
    const ONE_WRITE: usize = 64 << 10;
    let data = if err == 0 { data } else { &[] };
    if data.len() <= ONE_WRITE {
        let mut out = Vec::with_capacity(16 + data.len());
        out.extend_from_slice(&head);
        out.extend_from_slice(data);
        c.write_all(&out)?;
    } else {
        c.write_all(&head)?;
        c.write_all(data)?;
    }
    c.flush()
}

/// The error a request's range earns: past the end, unaligned or too big.
fn range_error(r: &Request, size: u64, limit: bool) -> Option<u32> {
    if limit && r.len > MAX_REQUEST {
        return Some(EOVERFLOW);
    }
    let end = r.offset.checked_add(r.len as u64)?;
    if end > size {
        return Some(if r.ty == CMD_WRITE { ENOSPC } else { EINVAL });
    }
    let align = u64::from(MIN_BLOCK);
    if !r.offset.is_multiple_of(align) || !(r.len as u64).is_multiple_of(align) {
        return Some(EINVAL);
    }
    None
}

fn errno(e: &io::Error) -> u32 {
    match e.raw_os_error() {
        Some(n) if n == libc::ENOSPC => ENOSPC,
        Some(n) if n == libc::EINVAL => EINVAL,
        _ => EIO,
    }
}

/// The transmission phase: requests answered one at a time, in order.
fn transmission<S: Store + ?Sized, C: Read + Write>(
    c: &mut C,
    store: &S,
    counts: &mut Counts,
) -> Result<(), End> {
    let size = store.size();
    let mut buf: Vec<u8> = Vec::new();
    loop {
        let r = read_request(c)?;
        if r.ty == CMD_DISC {
            return Ok(());
        }
        let (err, data_len) = match step_of(c, &r, size)? {
            Step::Answer(err) => (err, 0),
            Step::Take(cmd) => execute(store, cmd, &mut buf, counts),
            Step::CutOff(why) => {
                simple_reply(c, r.cookie, EOVERFLOW, &[])?;
                return Err(End::Protocol(why));
            }
        };
        counts.requests += 1;
        counts.errors += u64::from(err != 0);
        simple_reply(c, r.cookie, err, &buf[..data_len])?;
    }
}

/// Carry out `cmd` on `store` now: the error to answer (0: none) and how
/// many bytes of `buf` (a read's) go with the answer.
fn execute<S: Store + ?Sized>(
    store: &S,
    cmd: Command,
    buf: &mut Vec<u8>,
    counts: &mut Counts,
) -> (u32, usize) {
    let then_flush = |fua: bool| if fua { store.flush() } else { Ok(()) };
    let err = |r: io::Result<()>| r.err().map_or(0, |e| errno(&e));
    match cmd {
        Command::Read { offset, len } => {
            buf.resize(len as usize, 0);
            match store.read(offset, buf) {
                Ok(()) => {
                    counts.read_bytes += u64::from(len);
                    (0, len as usize)
                }
                Err(e) => (errno(&e), 0),
            }
        }
        Command::Write { offset, data, fua } => {
            let e = err(store.write(offset, &data).and_then(|()| then_flush(fua)));
            if e == 0 {
                counts.written_bytes += data.len() as u64;
            }
            (e, 0)
        }
        Command::Flush => (err(store.flush()), 0),
        Command::Trim { offset, len, fua } => (
            err(store
                .trim(offset, u64::from(len))
                .and_then(|()| then_flush(fua))),
            0,
        ),
        Command::WriteZeroes { offset, len, fua } => {
            (write_zeroes(store, offset, u64::from(len), fua), 0)
        }
    }
}

/// A request the server hands a [`Pipelined`] store, its range checked
/// against the store's size and the protocol's limits.
#[derive(Debug)]
pub enum Command {
    /// Read `len` bytes at `offset`.
    Read {
        /// Byte offset.
        offset: u64,
        /// Bytes.
        len: u32,
    },
    /// Write `data` at `offset`, durably first with `fua`.
    Write {
        /// Byte offset.
        offset: u64,
        /// The payload.
        data: Vec<u8>,
        /// Force unit access.
        fua: bool,
    },
    /// Make every write answered so far durable.
    Flush,
    /// `len` bytes at `offset` may be discarded.
    Trim {
        /// Byte offset.
        offset: u64,
        /// Bytes.
        len: u32,
        /// Force unit access.
        fua: bool,
    },
    /// `len` bytes at `offset` become zeroes.
    WriteZeroes {
        /// Byte offset.
        offset: u64,
        /// Bytes.
        len: u32,
        /// Force unit access.
        fua: bool,
    },
}

/// A store that answers each request when it chooses, from any thread,
/// in any order (NBD replies carry the request's cookie): a simulated
/// array answers each when its model completes it, so one connection
/// keeps many requests in flight.
pub trait Pipelined: Sync {
    /// Size in bytes.
    fn size(&self) -> u64;
    /// Take `cmd`; answer it through `reply`, now or later.
    fn take(&self, cmd: Command, reply: Reply);
}

/// A connection's reply side, shared by its reader and whoever answers.
struct Replies {
    writer: std::sync::Mutex<Box<dyn Write + Send>>,
    /// Requests taken and not yet answered.
    outstanding: std::sync::Mutex<usize>,
    answered: std::sync::Condvar,
    /// Requests answered with an error by the store.
    errors: std::sync::atomic::AtomicU64,
    /// A reply could not be written (the client is gone, or stopped
    /// reading past the socket's write timeout): no more are tried, so
    /// whoever answers is never held up by this client again.
    broken: std::sync::atomic::AtomicBool,
}

impl Replies {
    fn send(&self, cookie: u64, err: u32, data: &[u8]) {
        use std::sync::atomic::Ordering::Relaxed;
        if self.broken.load(Relaxed) {
            return;
        }
        let mut w = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        // A client that cannot be answered is left to its reader, which
        // sees the end of the connection.
        if simple_reply(&mut **w, cookie, err, data).is_err() {
            self.broken.store(true, Relaxed);
        }
    }

    /// Write `bytes`, whole replies one after another, in one go.
    fn send_encoded(&self, bytes: &[u8]) {
        use std::sync::atomic::Ordering::Relaxed;
        if self.broken.load(Relaxed) {
            return;
        }
        let mut w = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        if w.write_all(bytes).and_then(|()| w.flush()).is_err() {
            self.broken.store(true, Relaxed);
        }
    }

    /// `n` requests have been answered.
    fn answered(&self, n: usize) {
        let mut left = self.outstanding.lock().unwrap_or_else(|e| e.into_inner());
        debug_assert!(*left >= n, "{n} answers for {} requests", *left);
        *left -= n;
        self.answered.notify_all();
    }

    fn wait_idle(&self) {
        let mut n = self.outstanding.lock().unwrap_or_else(|e| e.into_inner());
        while *n > 0 {
            n = self.answered.wait(n).unwrap_or_else(|e| e.into_inner());
        }
    }
}

/// The answer to one request, sent once: by [`Reply::ok`] or
/// [`Reply::fail`], or as EIO if dropped unanswered (a client never
/// waits forever).
pub struct Reply {
    to: std::sync::Arc<Replies>,
    cookie: u64,
    sent: bool,
}

impl Reply {
    /// Answer success, with `data` (a read's bytes; empty otherwise).
    pub fn ok(mut self, data: &[u8]) {
        self.finish(0, data);
    }

    /// Answer with the error `e` stands for.
    pub fn fail(mut self, e: &io::Error) {
        self.to
            .errors
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.finish(errno(e), &[]);
    }

    /// Answer success with `data` as part of `batch`: it goes out, with
    /// the batch's other answers to the same connection, in one write when
    /// the batch is sent.
    pub fn ok_in(mut self, data: &[u8], batch: &mut ReplyBatch) {
        self.sent = true;
        batch.add(&self.to, self.cookie, data);
    }

    fn finish(&mut self, err: u32, data: &[u8]) {
        self.to.send(self.cookie, err, data);
        self.sent = true;
        self.to.answered(1);
    }
}

/// Successful answers gathered to go out together: each connection's in
/// one write instead of one per reply (a served simulated array answers the
/// requests its model completes at one instant together). Sent by
/// [`ReplyBatch::send`], or when dropped.
#[derive(Default)]
pub struct ReplyBatch {
    /// Per connection: its reply side, its replies encoded, how many.
    conns: Vec<(std::sync::Arc<Replies>, Vec<u8>, usize)>,
}

impl ReplyBatch {
    fn add(&mut self, to: &std::sync::Arc<Replies>, cookie: u64, data: &[u8]) {
        let i = match self
            .conns
            .iter()
            .position(|(r, _, _)| std::sync::Arc::ptr_eq(r, to))
        {
            Some(i) => i,
            None => {
                self.conns.push((to.clone(), Vec::new(), 0));
                self.conns.len() - 1
            }
        };
        let (_, bytes, n) = &mut self.conns[i];
        bytes.extend_from_slice(&reply_head(cookie, 0));
        bytes.extend_from_slice(data);
        *n += 1;
    }

    /// Write every connection's answers, each connection's in one go.
    pub fn send(&mut self) {
        for (to, bytes, n) in self.conns.drain(..) {
            to.send_encoded(&bytes);
            to.answered(n);
        }
    }
}

impl Drop for ReplyBatch {
    fn drop(&mut self) {
        self.send();
    }
}

impl Drop for Reply {
    fn drop(&mut self) {
        if !self.sent {
            self.to
                .errors
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            self.finish(EIO, &[]);
        }
    }
}

/// Serve one connection from a [`Pipelined`] store: the handshake on
/// `conn`, then requests read from `conn` and handed on as they come,
/// their replies written to `writer` (a clone of the same socket) as the
/// store answers them. At the client's end every request taken is
/// answered before this returns.
pub fn serve_pipelined<S: Pipelined + ?Sized, C: Read + Write>(
    conn: &mut C,
    writer: Box<dyn Write + Send>,
    store: &S,
    counts: &mut Counts,
) -> End {
    let size = store.size();
    match handshake_sized(conn, size) {
        Ok(true) => {}
        Ok(false) => return End::Disconnected,
        Err(e) => return e,
    }
    let replies = std::sync::Arc::new(Replies {
        writer: std::sync::Mutex::new(writer),
        outstanding: std::sync::Mutex::new(0),
        answered: std::sync::Condvar::new(),
        errors: std::sync::atomic::AtomicU64::new(0),
        broken: std::sync::atomic::AtomicBool::new(false),
    });
    let end = pipeline(conn, &replies, store, counts);
    replies.wait_idle();
    counts.errors += replies.errors.load(std::sync::atomic::Ordering::Relaxed);
    match end {
        Ok(()) => End::Disconnected,
        Err(e) => e,
    }
}

/// What the server does with a request: answer it at once (an error, or
/// nothing to do), hand it to the store, or (a write too large to read
/// past) answer EOVERFLOW and cut the client off, for this reason.
enum Step {
    Answer(u32),
    Take(Command),
    CutOff(String),
}

impl Step {
    /// Answer `err` if there is one, else take `cmd`.
    fn unless(err: Option<u32>, cmd: Command) -> Step {
        err.map_or(Step::Take(cmd), Step::Answer)
    }
}

/// The pipelined transmission phase: each request checked and handed to
/// the store, or answered at once with its error.
fn pipeline<S: Pipelined + ?Sized>(
    c: &mut impl Read,
    replies: &std::sync::Arc<Replies>,
    store: &S,
    counts: &mut Counts,
) -> Result<(), End> {
    let size = store.size();
    loop {
        let r = read_request(c)?;
        if r.ty == CMD_DISC {
            return Ok(());
        }
        counts.requests += 1;
        match step_of(c, &r, size)? {
            Step::CutOff(why) => {
                replies.send(r.cookie, EOVERFLOW, &[]);
                return Err(End::Protocol(why));
            }
            Step::Answer(err) => {
                counts.errors += u64::from(err != 0);
                replies.send(r.cookie, err, &[]);
            }
            Step::Take(cmd) => {
                match &cmd {
                    Command::Read { len, .. } => counts.read_bytes += *len as u64,
                    Command::Write { data, .. } => counts.written_bytes += data.len() as u64,
                    _ => {}
                }
                *replies
                    .outstanding
                    .lock()
                    .unwrap_or_else(|e| e.into_inner()) += 1;
                let reply = Reply {
                    to: replies.clone(),
                    cookie: r.cookie,
                    sent: false,
                };
                store.take(cmd, reply);
            }
        }
    }
}

/// What to do with request `r` (a write's payload read from `c`) on an
/// export of `size` bytes.
fn step_of(c: &mut impl Read, r: &Request, size: u64) -> Result<Step, End> {
    let fua = r.flags & CMD_FLAG_FUA != 0;
    let overflow = r.offset.checked_add(r.len as u64).is_none();
    let checked = |limit| range_error(r, size, limit).or(overflow.then_some(EINVAL));
    let (offset, len) = (r.offset, r.len);
    Ok(match r.ty {
        CMD_READ => Step::unless(checked(true), Command::Read { offset, len }),
        CMD_WRITE => {
            if len > MAX_REQUEST {
                // Its payload would have to be read past: the stream cannot
                // be trusted after it.
                return Ok(Step::CutOff(format!("a write of {len} bytes")));
            }
            let mut data = vec![0u8; len as usize];
            c.read_exact(&mut data)?;
            Step::unless(checked(true), Command::Write { offset, data, fua })
        }
        CMD_FLUSH => Step::Take(Command::Flush),
        CMD_TRIM => Step::unless(checked(false), Command::Trim { offset, len, fua }),
        CMD_WRITE_ZEROES => Step::unless(checked(false), Command::WriteZeroes { offset, len, fua }),
        CMD_CACHE => Step::Answer(range_error(r, size, false).unwrap_or(0)),
        _ => Step::Answer(EINVAL),
    })
}

/// Zeroes over `len` bytes at `off`, written a bounded piece at a time.
fn write_zeroes<S: Store + ?Sized>(store: &S, off: u64, len: u64, fua: bool) -> u32 {
    /// Zeroes written per store call: 1 MiB.
    const PIECE: u64 = 1 << 20;
    let zeros = vec![0u8; PIECE.min(len) as usize];
    let mut at = 0;
    while at < len {
        let n = PIECE.min(len - at);
        if let Err(e) = store.write(off + at, &zeros[..n as usize]) {
            return errno(&e);
        }
        at += n;
    }
    match fua.then(|| store.flush()) {
        Some(Err(e)) => errno(&e),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// A store in memory.
    struct Mem(Mutex<Vec<u8>>);

    impl Store for Mem {
        fn size(&self) -> u64 {
            self.0.lock().unwrap().len() as u64
        }
        fn read(&self, off: u64, buf: &mut [u8]) -> io::Result<()> {
            let d = self.0.lock().unwrap();
            buf.copy_from_slice(&d[off as usize..off as usize + buf.len()]);
            Ok(())
        }
        fn write(&self, off: u64, data: &[u8]) -> io::Result<()> {
            let mut d = self.0.lock().unwrap();
            d[off as usize..off as usize + data.len()].copy_from_slice(data);
            Ok(())
        }
        fn flush(&self) -> io::Result<()> {
            Ok(())
        }
    }

    /// A connection: what the client sent, and what the server wrote.
    struct Conn {
        input: io::Cursor<Vec<u8>>,
        output: Vec<u8>,
    }

    impl Read for Conn {
        fn read(&mut self, b: &mut [u8]) -> io::Result<usize> {
            self.input.read(b)
        }
    }

    impl Write for Conn {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            self.output.write(b)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn request(ty: u16, flags: u16, cookie: u64, off: u64, len: u32) -> Vec<u8> {
        let mut v = REQUEST_MAGIC.to_be_bytes().to_vec();
        v.extend_from_slice(&flags.to_be_bytes());
        v.extend_from_slice(&ty.to_be_bytes());
        v.extend_from_slice(&cookie.to_be_bytes());
        v.extend_from_slice(&off.to_be_bytes());
        v.extend_from_slice(&len.to_be_bytes());
        v
    }

    fn go() -> Vec<u8> {
        let mut v = 3u32.to_be_bytes().to_vec(); // client flags
        v.extend_from_slice(&IHAVEOPT.to_be_bytes());
        v.extend_from_slice(&OPT_GO.to_be_bytes());
        v.extend_from_slice(&6u32.to_be_bytes());
        v.extend_from_slice(&0u32.to_be_bytes()); // name ""
        v.extend_from_slice(&0u16.to_be_bytes()); // no info requests
        v
    }

    fn run(input: Vec<u8>, store: &Mem) -> (End, Vec<u8>, Counts) {
        let mut c = Conn {
            input: io::Cursor::new(input),
            output: Vec::new(),
        };
        let mut n = Counts::default();
        let end = serve(&mut c, store, &mut n);
        (end, c.output, n)
    }

    #[test]
    fn go_write_read_back_and_errors() {
        let store = Mem(Mutex::new(vec![0; 1 << 20]));
        let mut input = go();
        input.extend(request(CMD_WRITE, CMD_FLAG_FUA, 7, 4096, 512));
        input.extend(std::iter::repeat_n(0xAB, 512));
        input.extend(request(CMD_READ, 0, 8, 4096, 512));
        input.extend(request(CMD_READ, 0, 9, 1 << 20, 512)); // past the end
        input.extend(request(CMD_READ, 0, 10, 100, 512)); // unaligned
        input.extend(request(CMD_FLUSH, 0, 11, 0, 0));
        input.extend(request(CMD_DISC, 0, 12, 0, 0));
        let (end, out, n) = run(input, &store);
        assert!(matches!(end, End::Disconnected), "{end:?}");
        assert_eq!((n.requests, n.errors, n.written_bytes), (5, 2, 512));
        // The read's reply carries the written bytes.
        let at = out
            .windows(16)
            .position(|w| {
                w[..4] == SIMPLE_REPLY_MAGIC.to_be_bytes()
                    && w[4..8] == [0; 4]
                    && w[8..] == 8u64.to_be_bytes()
            })
            .expect("read reply");
        assert_eq!(&out[at + 16..at + 16 + 512], &[0xAB; 512][..]);
    }

    #[test]
    fn oversized_and_broken_clients_are_cut_off() {
        let store = Mem(Mutex::new(vec![0; 1 << 20]));
        let mut input = go();
        input.extend(request(CMD_WRITE, 0, 1, 0, MAX_REQUEST + 1));
        let (end, _, _) = run(input, &store);
        assert!(matches!(end, End::Protocol(_)), "{end:?}");
        let mut input = 3u32.to_be_bytes().to_vec();
        input.extend_from_slice(&IHAVEOPT.to_be_bytes());
        input.extend_from_slice(&OPT_GO.to_be_bytes());
        input.extend_from_slice(&u32::MAX.to_be_bytes());
        let (end, _, _) = run(input, &store);
        assert!(matches!(end, End::Protocol(_)), "{end:?}");
    }

    /// A pipelined store in memory that answers requests of a whole KiB
    /// from another thread 2 ms later and the rest at once: replies out of
    /// order.
    struct Held {
        mem: Mem,
    }

    impl Pipelined for Held {
        fn size(&self) -> u64 {
            self.mem.size()
        }
        fn take(&self, cmd: Command, reply: Reply) {
            let data = match cmd {
                Command::Read { offset, len } => {
                    let mut b = vec![0; len as usize];
                    self.mem.read(offset, &mut b).unwrap();
                    b
                }
                Command::Write { offset, data, .. } => {
                    self.mem.write(offset, &data).unwrap();
                    Vec::new()
                }
                _ => Vec::new(),
            };
            if !data.is_empty() && data.len() % 1024 == 0 {
                std::thread::spawn(move || {
                    std::thread::sleep(std::time::Duration::from_millis(2));
                    reply.ok(&data)
                });
            } else {
                reply.ok(&data);
            }
        }
    }

    /// Replies written by whoever answers, kept for the test.
    #[derive(Clone, Default)]
    struct Shared(std::sync::Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn run_pipelined(input: Vec<u8>, store: &Held) -> (End, Vec<u8>, Counts) {
        let mut c = Conn {
            input: io::Cursor::new(input),
            output: Vec::new(),
        };
        let out = Shared::default();
        let mut n = Counts::default();
        let end = serve_pipelined(&mut c, Box::new(out.clone()), store, &mut n);
        let replies = out.0.lock().unwrap().clone();
        (end, replies, n)
    }

    fn held(size: usize) -> Held {
        Held {
            mem: Mem(Mutex::new(vec![0; size])),
        }
    }

    #[test]
    fn pipelined_replies_carry_their_cookies_in_any_order() {
        let store = held(1 << 20);
        let mut input = go();
        input.extend(request(CMD_WRITE, 0, 1, 8192, 512));
        input.extend(std::iter::repeat_n(0xCD, 512));
        input.extend(request(CMD_READ, 0, 2, 8192, 1024));
        input.extend(request(CMD_READ, 0, 3, 8192, 512));
        input.extend(request(CMD_READ, 0, 4, 1 << 20, 512)); // past the end
        input.extend(request(CMD_DISC, 0, 5, 0, 0));
        let (end, out, n) = run_pipelined(input, &store);
        assert!(matches!(end, End::Disconnected), "{end:?}");
        assert_eq!((n.requests, n.written_bytes), (4, 512));
        let reply_at = |cookie: u64| {
            out.windows(16)
                .position(|w| {
                    w[..4] == SIMPLE_REPLY_MAGIC.to_be_bytes() && w[8..] == cookie.to_be_bytes()
                })
                .unwrap_or_else(|| panic!("no reply to {cookie}"))
        };
        // The 512-byte read was answered at once, before the held 1 KiB one.
        assert!(reply_at(3) < reply_at(2));
        let at = reply_at(3);
        assert_eq!(&out[at + 16..at + 16 + 512], &[0xCD; 512][..]);
        assert_eq!(
            &out[reply_at(4) + 4..reply_at(4) + 8],
            &EINVAL.to_be_bytes()
        );
    }

    /// A store that holds its answers until it has three, then sends them
    /// as one batch.
    struct Batched {
        mem: Mem,
        held: Mutex<Vec<(Reply, Vec<u8>)>>,
    }

    impl Pipelined for Batched {
        fn size(&self) -> u64 {
            self.mem.size()
        }
        fn take(&self, cmd: Command, reply: Reply) {
            let Command::Read { offset, len } = cmd else {
                return reply.ok(&[]);
            };
            let mut b = vec![0; len as usize];
            self.mem.read(offset, &mut b).unwrap();
            let mut held = self.held.lock().unwrap();
            held.push((reply, b));
            if held.len() == 3 {
                let mut batch = ReplyBatch::default();
                for (r, b) in held.drain(..) {
                    r.ok_in(&b, &mut batch);
                }
                batch.send();
            }
        }
    }

    /// Replies kept with the sizes of the writes they came in.
    #[derive(Clone, Default)]
    struct Writes(std::sync::Arc<Mutex<(Vec<u8>, Vec<usize>)>>);

    impl Write for Writes {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            let mut w = self.0.lock().unwrap();
            w.0.extend_from_slice(b);
            w.1.push(b.len());
            Ok(b.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// Answers sent as a batch go out in one write, each with its cookie
    /// and its data, and the connection ends only once they are out.
    #[test]
    fn batched_answers_go_out_in_one_write() {
        let store = Batched {
            mem: Mem(Mutex::new((0..4096u32).map(|i| i as u8).collect())),
            held: Mutex::new(Vec::new()),
        };
        let mut input = go();
        for (cookie, off) in [(7u64, 0u64), (8, 512), (9, 1024)] {
            input.extend(request(CMD_READ, 0, cookie, off, 512));
        }
        input.extend(request(CMD_DISC, 0, 10, 0, 0));
        let mut c = Conn {
            input: io::Cursor::new(input),
            output: Vec::new(),
        };
        let out = Writes::default();
        let end = serve_pipelined(
            &mut c,
            Box::new(out.clone()),
            &store,
            &mut Counts::default(),
        );
        assert!(matches!(end, End::Disconnected), "{end:?}");
        let (bytes, sizes) = out.0.lock().unwrap().clone();
        assert_eq!(sizes, vec![3 * (16 + 512)], "one write of three answers");
        for (k, (cookie, off)) in [(7u64, 0usize), (8, 512), (9, 1024)]
            .into_iter()
            .enumerate()
        {
            let r = &bytes[k * 528..(k + 1) * 528];
            assert_eq!(r[..4], SIMPLE_REPLY_MAGIC.to_be_bytes());
            assert_eq!(r[4..8], [0; 4]);
            assert_eq!(r[8..16], cookie.to_be_bytes());
            let want: Vec<u8> = (off..off + 512).map(|i| i as u8).collect();
            assert_eq!(&r[16..], &want[..]);
        }
    }

    /// A socket whose writes fail (a client that stopped reading).
    struct Stuck(std::sync::Arc<Mutex<u32>>);

    impl Write for Stuck {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            *self.0.lock().unwrap() += 1;
            Err(io::ErrorKind::TimedOut.into())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn replies_that_cannot_be_written_are_given_up_after_the_first() {
        let store = held(1 << 20);
        let mut input = go();
        for cookie in 0..50 {
            input.extend(request(CMD_READ, 0, cookie, 0, 512));
        }
        let mut c = Conn {
            input: io::Cursor::new(input),
            output: Vec::new(),
        };
        let tries = std::sync::Arc::new(Mutex::new(0));
        let mut n = Counts::default();
        let end = serve_pipelined(&mut c, Box::new(Stuck(tries.clone())), &store, &mut n);
        assert!(matches!(end, End::Disconnected), "{end:?}");
        assert_eq!(n.requests, 50, "every request still taken and answered");
        assert_eq!(*tries.lock().unwrap(), 1, "one write tried, then none");
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(500))]
        /// Any bytes after a valid GO, to the pipelined server: it answers
        /// or cuts the client off, never panics, never hangs.
        #[test]
        fn fuzzed_pipelined_requests_never_crash(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..2000), magic in proptest::prelude::any::<bool>()) {
            let store = held(64 << 10);
            let mut input = go();
            if magic {
                input.extend(REQUEST_MAGIC.to_be_bytes());
            }
            input.extend(bytes);
            let _ = run_pipelined(input, &store);
        }

        /// Any bytes after a valid GO: the server answers or cuts the
        /// client off, never panics, never reads past what it bounds.
        #[test]
        fn fuzzed_requests_never_crash(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..2000), magic in proptest::prelude::any::<bool>()) {
            let store = Mem(Mutex::new(vec![0; 64 << 10]));
            let mut input = go();
            if magic {
                // Keep the request magic so the fuzz reaches the commands.
                input.extend(REQUEST_MAGIC.to_be_bytes());
            }
            input.extend(bytes);
            let _ = run(input, &store);
        }

        /// Any bytes as a handshake.
        #[test]
        fn fuzzed_handshakes_never_crash(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..600)) {
            let store = Mem(Mutex::new(vec![0; 4096]));
            let _ = run(bytes, &store);
        }
    }
}
