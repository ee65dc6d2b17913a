//! Member I/O back ends behind one narrow interface, as fio's engines are:
//! a leaf read or write is a future that the worker's executor polls.
//!
//! * `io_uring`: each worker thread owns a ring; leaf operations are queued
//!   as submission entries, submitted in batches and completed by the
//!   worker's wait. Member files are registered with the ring, and the
//!   worker's host buffers too, so reads and writes into them use the
//!   fixed-buffer opcodes.
//! * `psync`: the portable thread engine; a leaf operation is a positioned
//!   `pread`/`pwrite` done when first polled. Queue depth comes from running
//!   `iodepth` such workers per job.

use std::cell::{Cell, RefCell};
use std::fs::File;
use std::future::Future;
use std::io;
use std::marker::PhantomData;
use std::os::unix::fs::FileExt;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::task::{Context, Poll, Waker};
use std::time::Instant;

/// Which back end runs member I/O.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EngineKind {
    /// Linux io_uring.
    IoUring,
    /// Positioned reads and writes from threads.
    Psync,
}

impl EngineKind {
    /// The word used on the command line.
    pub fn word(self) -> &'static str {
        match self {
            EngineKind::IoUring => "io_uring",
            EngineKind::Psync => "psync",
        }
    }

    /// Whether this kernel lets us create a ring.
    pub fn io_uring_available() -> bool {
        #[cfg(target_os = "linux")]
        {
            io_uring::IoUring::new(2).is_ok()
        }
        #[cfg(not(target_os = "linux"))]
        {
            false
        }
    }
}

/// Counters of one member, shared by all workers: only what must be
/// shared while the run goes (whether any worker has an operation in
/// flight on it, for the busy time); each worker counts its completions
/// and its operations in flight in its own [`Tally`] and in-flight count,
/// and touches these only when its own count leaves or returns to zero
/// (rarely, at queue depth), so workers on one member do not pass its
/// cache line between their cores on every operation. Aligned to two
/// cache lines so that workers busy on different members do not share
/// one (the CPU prefetches lines in pairs).
#[derive(Default)]
#[repr(align(128))]
pub(crate) struct MemberCounters {
    /// Reads completed.
    pub reads: AtomicU64,
    /// Writes completed.
    pub writes: AtomicU64,
    /// Bytes read.
    pub read_bytes: AtomicU64,
    /// Bytes written.
    pub write_bytes: AtomicU64,
    /// Workers with operations in flight on the member now.
    active: std::sync::atomic::AtomicU32,
    /// When the member last went from idle to busy, ns since [`epoch`].
    since: AtomicU64,
    /// Time with at least one operation in flight, ns, up to the last
    /// time it went idle.
    busy: AtomicU64,
}

/// The instant the busy-time clocks count from (the first use).
fn epoch() -> Instant {
    static EPOCH: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

/// Nanoseconds from [`epoch`] to `t`.
fn since_epoch(t: Instant) -> u64 {
    t.saturating_duration_since(epoch()).as_nanos() as u64
}

impl MemberCounters {
    /// A worker's first operation in flight on the member starts at
    /// `now`: the member is busy from now if it was idle.
    fn begin(&self, now: Instant) {
        if self.active.fetch_add(1, Ordering::AcqRel) == 0 {
            self.since.store(since_epoch(now), Ordering::Release);
        }
    }

    /// A worker's last operation in flight on the member ends at `now`:
    /// the member's busy stretch ends if no other worker has one. (A
    /// worker starting one between the count's fall and the read of
    /// `since` shortens the stretch counted by the time between the two:
    /// busy time, like iostat's, is a measure, not an invariant.)
    fn end(&self, now: Instant) {
        if self.active.fetch_sub(1, Ordering::AcqRel) == 1 {
            let from = self.since.load(Ordering::Acquire);
            self.busy
                .fetch_add(since_epoch(now).saturating_sub(from), Ordering::Relaxed);
        }
    }

    /// Add a worker's tally.
    fn add(&self, t: &Tally) {
        self.reads.fetch_add(t.reads, Ordering::Relaxed);
        self.writes.fetch_add(t.writes, Ordering::Relaxed);
        self.read_bytes.fetch_add(t.read_bytes, Ordering::Relaxed);
        self.write_bytes.fetch_add(t.write_bytes, Ordering::Relaxed);
    }

    /// Time with at least one operation in flight (iostat's %util basis), ns.
    pub fn busy_ns(&self) -> u128 {
        self.busy.load(Ordering::Relaxed) as u128
    }
}

/// One worker's completions on one member, added to its shared
/// [`MemberCounters`] when the worker's back end is dropped: counted in
/// shared atomics on every operation, page-cache reads with two jobs on
/// two cores ran no faster than with one (the counters' cache lines went
/// back and forth between the cores).
#[derive(Default, Clone, Copy)]
struct Tally {
    reads: u64,
    writes: u64,
    read_bytes: u64,
    write_bytes: u64,
}

impl Tally {
    fn count(&mut self, dir: Dir, bytes: usize) {
        match dir {
            Dir::Write => {
                self.writes += 1;
                self.write_bytes += bytes as u64;
            }
            Dir::Read => {
                self.reads += 1;
                self.read_bytes += bytes as u64;
            }
            // A flush moves no data: it counts as busy time only.
            Dir::Flush => {}
        }
    }
}

/// The open member files of a run.
pub(crate) struct Members {
    /// Open files (None: a `missing` member has no file).
    pub files: Vec<File>,
    /// Paths, for messages.
    pub paths: Vec<String>,
    /// Counters.
    pub counters: Vec<MemberCounters>,
    /// Failures: injected faults, and the members failed during the run.
    pub health: Health,
}

/// Which members have failed during a run, and why; and the faults
/// injected into them.
#[derive(Default)]
pub(crate) struct Health {
    faults: Vec<crate::topo::Fault>,
    /// Operations started per member (what `fail_after` counts).
    ops: Vec<AtomicU64>,
    dead: Vec<AtomicBool>,
    /// Deaths so far: a host I/O that failed while this rose is retried.
    deaths: AtomicU64,
    why: Mutex<Vec<Option<String>>>,
}

impl Health {
    /// Health of `n` members with these injected faults.
    pub fn new(faults: Vec<crate::topo::Fault>) -> Self {
        let n = faults.len();
        Health {
            faults,
            ops: (0..n).map(|_| AtomicU64::new(0)).collect(),
            dead: (0..n).map(|_| AtomicBool::new(false)).collect(),
            deaths: AtomicU64::new(0),
            why: Mutex::new(vec![None; n]),
        }
    }

    /// Whether an operation on member `m` at `[off, off+len)` meets an
    /// injected fault.
    fn injected(&self, m: usize, off: u64, len: usize) -> bool {
        let Some(f) = self.faults.get(m) else {
            return false;
        };
        // Only `fail_after` counts the member's operations: without it the
        // shared count is left alone (every worker would pass its cache
        // line back and forth on every operation).
        let nth = if f.after.is_some() {
            self.ops[m].fetch_add(1, Ordering::Relaxed)
        } else {
            0
        };
        f.hits(nth, off, len as u64)
    }

    /// Fail member `m` for the rest of the run, for `why`.
    pub fn fail(&self, m: usize, why: &io::Error) {
        if !self.dead[m].swap(true, Ordering::AcqRel) {
            self.why.lock().unwrap_or_else(|e| e.into_inner())[m] = Some(why.to_string());
            self.deaths.fetch_add(1, Ordering::AcqRel);
        }
    }

    /// Whether member `m` has failed.
    pub fn is_dead(&self, m: usize) -> bool {
        self.dead.get(m).is_some_and(|d| d.load(Ordering::Acquire))
    }

    /// Members failed so far.
    pub fn deaths(&self) -> u64 {
        self.deaths.load(Ordering::Acquire)
    }

    /// Why each member failed (`None`: it did not).
    pub fn reasons(&self) -> Vec<Option<String>> {
        self.why.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// When to run a volume operation again while members fail under it: md
/// fails a member that returns an I/O error and carries on degraded, so
/// the operation is redone without it (correct for writes too: a stripe
/// whose write failed on one member is whole on the others, and redoing a
/// write on a whole stripe leaves it whole). It fails when a try fails
/// without a new member failure — the array itself has lost data — or
/// after as many tries as there are members.
pub(crate) struct Tries<'h> {
    health: &'h Health,
    deaths: u64,
    left: usize,
}

impl<'h> Tries<'h> {
    /// Tries for an operation on a volume of `members` members.
    pub fn new(health: &'h Health, members: usize) -> Self {
        Tries {
            health,
            deaths: health.deaths(),
            left: members,
        }
    }

    /// Whether to try again after outcome `r`.
    pub fn again(&mut self, r: &io::Result<()>) -> bool {
        let now = self.health.deaths();
        let retry = r.is_err() && now > self.deaths && self.left > 0;
        self.deaths = now;
        self.left = self.left.saturating_sub(1);
        retry
    }
}

/// Cooperative scheduling state of one worker's executor.
#[derive(Default)]
pub(crate) struct Sched {
    /// The task being polled.
    pub current: Cell<usize>,
    /// Tasks to poll again.
    pub ready: RefCell<Vec<usize>>,
    /// Tasks waiting for a stripe lock.
    pub lock_wait: RefCell<Vec<usize>>,
}

/// What a member operation does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dir {
    Read,
    Write,
    /// Make the member's written data durable (`fdatasync`).
    Flush,
}

impl Dir {
    fn word(self) -> &'static str {
        match self {
            Dir::Read => "read",
            Dir::Write => "write",
            Dir::Flush => "flush",
        }
    }
}

/// One member operation as an engine sees it: member, offset, and the
/// buffer (address and length) the data comes from or goes to (none for a
/// flush).
struct MemberOp {
    m: usize,
    off: u64,
    ptr: *mut u8,
    len: usize,
    dir: Dir,
}

/// Where an operation stands once an engine was handed it.
enum Started {
    /// Done at once (psync): its result.
    Done(io::Result<()>),
    /// In the kernel's hands: the slot that will hold its result.
    Queued(u32),
}

/// A member I/O engine, as fio's `ioengine_ops` are: the worker's executor
/// hands it operations, learns when they completed, and waits for
/// completions. Every engine goes through this and nothing else.
trait Engine {
    /// Start `op` for task `task` of the executor.
    ///
    /// # Safety
    ///
    /// `op.ptr` must be valid for `op.len` bytes (writable for a read) until
    /// the operation is done: at once for `Started::Done`, or for
    /// `Started::Queued(slot)` until `finish(slot)` returns a result or
    /// `drain(slot)` returns.
    unsafe fn start(&self, members: &Members, task: usize, op: &MemberOp) -> Started;
    /// The result of queued operation `slot` once it completed (the slot is
    /// then free), or `None` while it is in flight.
    fn finish(&self, slot: u32) -> Option<i32>;
    /// Wait until queued operation `slot` completed, and free the slot: for
    /// an operation whose future is dropped in flight.
    fn drain(&self, slot: u32, sched: &Sched);
    /// Submit what is queued and wait for at least one completion; the
    /// tasks that own completed operations become ready.
    fn wait(&self, sched: &Sched) -> io::Result<()>;
    /// Hand what is queued to the kernel now, without waiting (nothing to
    /// do for an engine whose operations run when started).
    fn submit(&self) {}
    /// Operations queued or in flight in the kernel.
    fn inflight(&self) -> u32;
    /// Whether host buffers are registered with the kernel.
    fn registered_buffers(&self) -> bool;
}

/// The portable engine: a positioned `pread`/`pwrite`, done when started.
struct Psync;

impl Engine for Psync {
    unsafe fn start(&self, members: &Members, _task: usize, op: &MemberOp) -> Started {
        let f = &members.files[op.m];
        Started::Done(match op.dir {
            Dir::Write => {
                // SAFETY: the caller keeps ptr/len valid while this runs.
                let b = unsafe { std::slice::from_raw_parts(op.ptr, op.len) };
                f.write_all_at(b, op.off)
            }
            Dir::Read => {
                // SAFETY: the caller keeps ptr/len valid and writable while
                // this runs, and lends them to no one else.
                let b = unsafe { std::slice::from_raw_parts_mut(op.ptr, op.len) };
                f.read_exact_at(b, op.off)
            }
            Dir::Flush => f.sync_data(),
        })
    }

    fn finish(&self, _slot: u32) -> Option<i32> {
        unreachable!("psync queues nothing")
    }

    fn drain(&self, _slot: u32, _sched: &Sched) {}

    fn wait(&self, _sched: &Sched) -> io::Result<()> {
        Ok(())
    }

    fn inflight(&self) -> u32 {
        0
    }

    fn registered_buffers(&self) -> bool {
        false
    }
}

#[cfg(target_os = "linux")]
struct Uring {
    ring: RefCell<io_uring::IoUring>,
    /// Per in-flight operation: owning task and result once complete.
    slots: RefCell<Vec<(usize, Option<i32>)>>,
    free: RefCell<Vec<u32>>,
    inflight: Cell<u32>,
    fixed_files: bool,
    /// Registered buffers: (start address, end address), sorted.
    reg: Vec<(usize, usize)>,
}

/// One worker's back end: its engine and its executor's scheduling state.
pub(crate) struct Backend<'m> {
    members: &'m Members,
    /// The worker's scheduler.
    pub sched: Sched,
    engine: Box<dyn Engine>,
    /// The worker's completions per member, added to the members' shared
    /// counters when it is dropped.
    tallies: Vec<std::cell::Cell<Tally>>,
    /// The worker's operations in flight per member.
    inflight: Vec<Cell<u32>>,
}

/// An empty tally per member.
fn tallies(members: &Members) -> Vec<std::cell::Cell<Tally>> {
    vec![std::cell::Cell::new(Tally::default()); members.counters.len()]
}

/// No operations in flight on any member.
fn inflight(members: &Members) -> Vec<Cell<u32>> {
    vec![Cell::new(0); members.counters.len()]
}

impl Drop for Backend<'_> {
    fn drop(&mut self) {
        for (c, t) in self.members.counters.iter().zip(&self.tallies) {
            c.add(&t.get());
        }
    }
}

impl<'m> Backend<'m> {
    /// A psync back end.
    pub fn psync(members: &'m Members) -> Self {
        Backend {
            members,
            sched: Sched::default(),
            engine: Box::new(Psync),
            tallies: tallies(members),
            inflight: inflight(members),
        }
    }

    /// An io_uring back end with room for `entries` queued operations; the
    /// buffers in `bufs` are registered for fixed-buffer I/O when the kernel
    /// allows it.
    #[cfg(target_os = "linux")]
    pub fn io_uring(members: &'m Members, entries: u32, bufs: &[&[u8]]) -> io::Result<Self> {
        use std::os::fd::AsRawFd;
        let ring = new_ring(entries.next_power_of_two().clamp(8, 4096))?;
        let fds: Vec<i32> = members.files.iter().map(|f| f.as_raw_fd()).collect();
        let fixed_files = !fds.is_empty() && ring.submitter().register_files(&fds).is_ok();
        let iov: Vec<libc::iovec> = bufs
            .iter()
            .filter(|b| !b.is_empty())
            .map(|b| libc::iovec {
                iov_base: b.as_ptr() as *mut libc::c_void,
                iov_len: b.len(),
            })
            .collect();
        // SAFETY: the iovecs describe buffers the worker keeps alive (and
        // does not move) for the ring's whole life; the ring is dropped
        // before them (it lives in this Backend, which the worker drops
        // first).
        let registered =
            !iov.is_empty() && unsafe { ring.submitter().register_buffers(&iov) }.is_ok();
        let reg = if registered {
            iov.iter()
                .map(|v| (v.iov_base as usize, v.iov_base as usize + v.iov_len))
                .collect()
        } else {
            Vec::new()
        };
        Ok(Backend {
            members,
            sched: Sched::default(),
            engine: Box::new(Uring {
                ring: RefCell::new(ring),
                slots: RefCell::new(Vec::new()),
                free: RefCell::new(Vec::new()),
                inflight: Cell::new(0),
                fixed_files,
                reg,
            }),
            tallies: tallies(members),
            inflight: inflight(members),
        })
    }

    /// Whether host buffers are registered with the kernel.
    pub fn registered_buffers(&self) -> bool {
        self.engine.registered_buffers()
    }

    /// This worker's operations in flight on member `m` now: what its
    /// mirror reads balance on. md's `read_balance` counts every
    /// submitter's (`nr_pending`); a count shared by the workers would cost
    /// two contended atomic operations per I/O, and each worker balancing
    /// its own reads spreads them alike when the workers issue alike.
    pub fn pending(&self, m: usize) -> u32 {
        self.inflight[m].get()
    }

    /// An operation on member `m` goes out: the member is busy from now
    /// if none of this worker's was in flight there (and no other
    /// worker's).
    fn op_begins(&self, m: usize) {
        let n = &self.inflight[m];
        if n.get() == 0 {
            self.members.counters[m].begin(Instant::now());
        }
        n.set(n.get() + 1);
    }

    /// An operation on member `m` is done: see [`Backend::op_begins`].
    fn op_ends(&self, m: usize) {
        let n = &self.inflight[m];
        debug_assert!(n.get() > 0, "an operation ends that began");
        n.set(n.get() - 1);
        if n.get() == 0 {
            self.members.counters[m].end(Instant::now());
        }
    }

    /// The members' health: injected faults and failures.
    pub fn health(&self) -> &Health {
        &self.members.health
    }

    /// Read `buf.len()` bytes of member `m` at `off`.
    pub fn read<'a>(&'a self, m: usize, off: u64, buf: &'a mut [u8]) -> Leaf<'a, 'm> {
        Leaf::new(self, m, off, buf.as_mut_ptr(), buf.len(), Dir::Read)
    }

    /// Write `buf` to member `m` at `off`.
    pub fn write<'a>(&'a self, m: usize, off: u64, buf: &'a [u8]) -> Leaf<'a, 'm> {
        Leaf::new(self, m, off, buf.as_ptr() as *mut u8, buf.len(), Dir::Write)
    }

    /// Make member `m`'s written data durable (`fdatasync`). It moves no
    /// data: the null buffer of length 0 is never touched.
    pub fn flush<'a>(&'a self, m: usize) -> Leaf<'a, 'm> {
        Leaf::new(self, m, 0, std::ptr::null_mut(), 0, Dir::Flush)
    }

    /// Operations queued or in flight in the kernel.
    pub fn inflight(&self) -> u32 {
        self.engine.inflight()
    }

    /// Hand the member operations queued so far to the kernel, as fio
    /// submits each I/O when it is queued (`iodepth_batch_submit=1`, its
    /// default): on a virtual disk, operations held back to go in one batch
    /// wait for it, and batches run slower there (measured with
    /// `bench/real_vs_fio.sh`: 4 KiB O_DIRECT random reads at queue depth 32
    /// rose from 63-66 k to 71-77 k IOPS, fio's 72-80 k).
    pub fn submit(&self) {
        self.engine.submit();
    }

    /// Submit what is queued and wait for at least one completion; the
    /// tasks that own completed operations become ready.
    pub fn wait(&self) -> io::Result<()> {
        self.engine.wait(&self.sched)
    }

    fn err(&self, op: &MemberOp, e: io::Error) -> io::Error {
        io::Error::new(
            e.kind(),
            format!(
                "{} {} at offset {}: {e}",
                self.members.paths[op.m],
                op.dir.word(),
                op.off
            ),
        )
    }
}

#[cfg(target_os = "linux")]
impl Engine for Uring {
    unsafe fn start(&self, members: &Members, task: usize, op: &MemberOp) -> Started {
        use io_uring::{opcode, types};
        let slot = match self.free.borrow_mut().pop() {
            Some(s) => s,
            None => {
                let mut v = self.slots.borrow_mut();
                v.push((0, None));
                (v.len() - 1) as u32
            }
        };
        self.slots.borrow_mut()[slot as usize] = (task, None);
        let addr = op.ptr as usize;
        let fixed_buf = self
            .reg
            .binary_search_by(|&(s, _)| s.cmp(&addr))
            .map_or_else(|i| i.checked_sub(1), Some)
            .filter(|&i| addr + op.len <= self.reg[i].1)
            .map(|i| i as u16);
        let len = op.len as u32;
        macro_rules! build {
            ($fd:expr) => {
                match (op.dir, fixed_buf) {
                    (Dir::Read, Some(i)) => opcode::ReadFixed::new($fd, op.ptr, len, i)
                        .offset(op.off)
                        .build(),
                    (Dir::Read, None) => opcode::Read::new($fd, op.ptr, len).offset(op.off).build(),
                    (Dir::Write, Some(i)) => opcode::WriteFixed::new($fd, op.ptr, len, i)
                        .offset(op.off)
                        .build(),
                    (Dir::Write, None) => {
                        opcode::Write::new($fd, op.ptr, len).offset(op.off).build()
                    }
                    (Dir::Flush, _) => opcode::Fsync::new($fd)
                        .flags(types::FsyncFlags::DATASYNC)
                        .build(),
                }
            };
        }
        let e = if self.fixed_files {
            build!(types::Fixed(op.m as u32))
        } else {
            use std::os::fd::AsRawFd;
            build!(types::Fd(members.files[op.m].as_raw_fd()))
        }
        .user_data(slot as u64);
        let mut ring = self.ring.borrow_mut();
        loop {
            // SAFETY: the entry points at a buffer the caller keeps valid
            // until the operation completes (this method's contract: until
            // `finish` returns its result or `drain` returns).
            if unsafe { ring.submission().push(&e) }.is_ok() {
                break;
            }
            if let Err(err) = ring.submit() {
                self.free.borrow_mut().push(slot);
                return Started::Done(Err(err));
            }
        }
        self.inflight.set(self.inflight.get() + 1);
        Started::Queued(slot)
    }

    fn finish(&self, slot: u32) -> Option<i32> {
        let res = self.slots.borrow()[slot as usize].1?;
        self.free.borrow_mut().push(slot);
        self.inflight.set(self.inflight.get() - 1);
        Some(res)
    }

    fn drain(&self, slot: u32, sched: &Sched) {
        while self.slots.borrow()[slot as usize].1.is_none() {
            if self.wait(sched).is_err() {
                // The buffer cannot be proven free: stop rather than let the
                // kernel write into reused memory.
                std::process::abort();
            }
        }
        self.finish(slot);
    }

    fn wait(&self, sched: &Sched) -> io::Result<()> {
        if self.inflight.get() == 0 {
            return Ok(());
        }
        let mut ring = self.ring.borrow_mut();
        loop {
            match ring.submit_and_wait(1) {
                Ok(_) => break,
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) => break,
                Err(e) => return Err(e),
            }
        }
        let mut slots = self.slots.borrow_mut();
        let mut ready = sched.ready.borrow_mut();
        for cqe in ring.completion() {
            let s = &mut slots[cqe.user_data() as usize];
            s.1 = Some(cqe.result());
            ready.push(s.0);
        }
        Ok(())
    }

    fn submit(&self) {
        let mut ring = self.ring.borrow_mut();
        if !ring.submission().is_empty() {
            // An error here is met again, and reported, by the next wait.
            let _ = ring.submit();
        }
    }

    fn inflight(&self) -> u32 {
        self.inflight.get()
    }

    fn registered_buffers(&self) -> bool {
        !self.reg.is_empty()
    }
}

/// An io_uring of `entries` for one worker thread, set up as fio's io_uring
/// engine sets its rings up where the kernel allows (fio 3.33,
/// engines/io_uring.c): completion work is run when the thread next enters
/// the kernel to wait, not by interrupting it (`COOP_TASKRUN`, and
/// `DEFER_TASKRUN` for a ring only its thread uses: `SINGLE_ISSUER`). The
/// engine reaps completions only in `submit_and_wait`, which is what
/// deferred task work needs. Older kernels refuse the flags: then fewer,
/// then none.
#[cfg(target_os = "linux")]
fn new_ring(entries: u32) -> io::Result<io_uring::IoUring> {
    let deferred = io_uring::IoUring::builder()
        .setup_coop_taskrun()
        .setup_single_issuer()
        .setup_defer_taskrun()
        .build(entries);
    deferred
        .or_else(|_| {
            io_uring::IoUring::builder()
                .setup_coop_taskrun()
                .build(entries)
        })
        .or_else(|_| io_uring::IoUring::new(entries))
}

/// A member read or write in progress: a future over the buffer it
/// borrows for `'a`.
pub(crate) struct Leaf<'a, 'm> {
    be: &'a Backend<'m>,
    op: MemberOp,
    /// The engine's slot while the operation is queued.
    slot: Option<u32>,
    _buf: PhantomData<&'a mut [u8]>,
}

impl<'a, 'm> Leaf<'a, 'm> {
    fn new(be: &'a Backend<'m>, m: usize, off: u64, ptr: *mut u8, len: usize, dir: Dir) -> Self {
        Leaf {
            be,
            op: MemberOp {
                m,
                off,
                ptr,
                len,
                dir,
            },
            slot: None,
            _buf: PhantomData,
        }
    }

    /// The outcome of a completed operation that moved `res` bytes (or
    /// failed with `-res`).
    fn outcome(&self, res: i32) -> io::Result<()> {
        let op = &self.op;
        if res < 0 {
            Err(self.be.err(op, io::Error::from_raw_os_error(-res)))
        } else if res as usize != op.len {
            Err(self.be.err(
                op,
                io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!("short transfer ({res} of {} bytes)", op.len),
                ),
            ))
        } else {
            Ok(())
        }
    }
}

impl Future for Leaf<'_, '_> {
    type Output = io::Result<()>;

    fn poll(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let be = self.be;
        let m = self.op.m;
        let done = |dir, bytes| {
            let t = &be.tallies[m];
            let mut x = t.get();
            x.count(dir, bytes);
            t.set(x);
        };
        let (dir, len) = (self.op.dir, self.op.len);
        match self.slot {
            None => {
                if be.members.health.injected(self.op.m, self.op.off, len) {
                    let e = io::Error::other("injected fault");
                    return Poll::Ready(Err(be.err(&self.op, e)));
                }
                be.op_begins(m);
                // SAFETY: `op` points into the buffer this Leaf borrows for
                // 'a, which outlives it; while the operation is queued the
                // Leaf holds its slot, and its Drop drains the slot before
                // the borrow ends. A Leaf is crate-private, and the crate's
                // executor awaits or drops every Leaf it makes, never
                // forgets one.
                match unsafe {
                    be.engine
                        .start(be.members, be.sched.current.get(), &self.op)
                } {
                    Started::Done(r) => {
                        be.op_ends(m);
                        done(dir, if r.is_ok() { len } else { 0 });
                        Poll::Ready(r.map_err(|e| be.err(&self.op, e)))
                    }
                    Started::Queued(slot) => {
                        self.slot = Some(slot);
                        Poll::Pending
                    }
                }
            }
            Some(s) => match be.engine.finish(s) {
                None => Poll::Pending,
                Some(res) => {
                    self.slot = None;
                    be.op_ends(m);
                    done(dir, res.max(0) as usize);
                    Poll::Ready(self.outcome(res))
                }
            },
        }
    }
}

impl Drop for Leaf<'_, '_> {
    fn drop(&mut self) {
        // Never let the kernel write into a buffer that is gone: wait for an
        // operation still in flight (only reachable if a task is dropped
        // early, e.g. while unwinding).
        if let Some(s) = self.slot {
            self.be.engine.drain(s, &self.be.sched);
            self.be.op_ends(self.op.m);
        }
    }
}

/// Drive one volume operation to completion on a psync back end.
pub(crate) fn block_on<F: Future<Output = io::Result<()>>>(
    be: &Backend<'_>,
    fut: F,
) -> io::Result<()> {
    let mut fut = std::pin::pin!(fut);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(r) = fut.as_mut().poll(&mut cx) {
            be.sched.ready.borrow_mut().clear();
            return r;
        }
        if be.inflight() == 0 {
            // Nothing in flight and not done: only a lock could hold it,
            // and a resync takes none.
            return Err(io::Error::other("resync stalled"));
        }
        be.wait()?;
    }
}
