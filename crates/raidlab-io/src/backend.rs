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
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::task::{Context, Poll};
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

#[derive(Default)]
struct Busy {
    inflight: u32,
    since: Option<Instant>,
    total_ns: u128,
}

/// Counters of one member, shared by all workers.
#[derive(Default)]
pub(crate) struct MemberCounters {
    /// Reads completed.
    pub reads: AtomicU64,
    /// Writes completed.
    pub writes: AtomicU64,
    /// Bytes read.
    pub read_bytes: AtomicU64,
    /// Bytes written.
    pub write_bytes: AtomicU64,
    busy: Mutex<Busy>,
}

impl MemberCounters {
    fn begin(&self, now: Instant) {
        let mut b = self.busy.lock().unwrap_or_else(|e| e.into_inner());
        if b.inflight == 0 {
            b.since = Some(now);
        }
        b.inflight += 1;
    }

    fn end(&self, now: Instant, write: bool, bytes: usize) {
        {
            let mut b = self.busy.lock().unwrap_or_else(|e| e.into_inner());
            b.inflight -= 1;
            if b.inflight == 0 {
                if let Some(s) = b.since.take() {
                    b.total_ns += now.duration_since(s).as_nanos();
                }
            }
        }
        let (n, by) = if write {
            (&self.writes, &self.write_bytes)
        } else {
            (&self.reads, &self.read_bytes)
        };
        n.fetch_add(1, Ordering::Relaxed);
        by.fetch_add(bytes as u64, Ordering::Relaxed);
    }

    /// Time with at least one operation in flight (iostat's %util basis), ns.
    pub fn busy_ns(&self) -> u128 {
        self.busy.lock().unwrap_or_else(|e| e.into_inner()).total_ns
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

/// One worker's back end.
pub(crate) struct Backend<'m> {
    members: &'m Members,
    /// The worker's scheduler.
    pub sched: Sched,
    #[cfg(target_os = "linux")]
    uring: Option<Uring>,
}

impl<'m> Backend<'m> {
    /// A psync back end.
    pub fn psync(members: &'m Members) -> Self {
        Backend {
            members,
            sched: Sched::default(),
            #[cfg(target_os = "linux")]
            uring: None,
        }
    }

    /// An io_uring back end with room for `entries` queued operations; the
    /// buffers in `bufs` are registered for fixed-buffer I/O when the kernel
    /// allows it.
    #[cfg(target_os = "linux")]
    pub fn io_uring(members: &'m Members, entries: u32, bufs: &[&[u8]]) -> io::Result<Self> {
        use std::os::fd::AsRawFd;
        let ring = io_uring::IoUring::new(entries.next_power_of_two().clamp(8, 4096))?;
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
            uring: Some(Uring {
                ring: RefCell::new(ring),
                slots: RefCell::new(Vec::new()),
                free: RefCell::new(Vec::new()),
                inflight: Cell::new(0),
                fixed_files,
                reg,
            }),
        })
    }

    /// Whether host buffers are registered with the kernel.
    pub fn registered_buffers(&self) -> bool {
        #[cfg(target_os = "linux")]
        {
            self.uring.as_ref().is_some_and(|u| !u.reg.is_empty())
        }
        #[cfg(not(target_os = "linux"))]
        {
            false
        }
    }

    /// Read `buf.len()` bytes of member `m` at `off`.
    pub fn read<'a>(&'a self, m: usize, off: u64, buf: &'a mut [u8]) -> Leaf<'a, 'm> {
        Leaf {
            be: self,
            m,
            off,
            ptr: buf.as_mut_ptr(),
            len: buf.len(),
            write: false,
            slot: None,
            _buf: PhantomData,
        }
    }

    /// Write `buf` to member `m` at `off`.
    pub fn write<'a>(&'a self, m: usize, off: u64, buf: &'a [u8]) -> Leaf<'a, 'm> {
        Leaf {
            be: self,
            m,
            off,
            ptr: buf.as_ptr() as *mut u8,
            len: buf.len(),
            write: true,
            slot: None,
            _buf: PhantomData,
        }
    }

    /// Operations queued or in flight in the kernel.
    pub fn inflight(&self) -> u32 {
        #[cfg(target_os = "linux")]
        {
            self.uring.as_ref().map_or(0, |u| u.inflight.get())
        }
        #[cfg(not(target_os = "linux"))]
        {
            0
        }
    }

    /// Submit what is queued and wait for at least one completion; the
    /// tasks that own completed operations become ready.
    pub fn wait(&self) -> io::Result<()> {
        #[cfg(target_os = "linux")]
        if let Some(u) = &self.uring {
            if u.inflight.get() == 0 {
                return Ok(());
            }
            let mut ring = u.ring.borrow_mut();
            loop {
                match ring.submit_and_wait(1) {
                    Ok(_) => break,
                    Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
                    Err(e) if e.raw_os_error() == Some(libc::EBUSY) => break,
                    Err(e) => return Err(e),
                }
            }
            let mut slots = u.slots.borrow_mut();
            let mut ready = self.sched.ready.borrow_mut();
            for cqe in ring.completion() {
                let s = &mut slots[cqe.user_data() as usize];
                s.1 = Some(cqe.result());
                ready.push(s.0);
            }
        }
        Ok(())
    }

    fn err(&self, m: usize, write: bool, off: u64, e: io::Error) -> io::Error {
        io::Error::new(
            e.kind(),
            format!(
                "{} {} at offset {off}: {e}",
                self.members.paths[m],
                if write { "write" } else { "read" }
            ),
        )
    }
}

/// A member read or write in progress.
pub(crate) struct Leaf<'a, 'm> {
    be: &'a Backend<'m>,
    m: usize,
    off: u64,
    ptr: *mut u8,
    len: usize,
    write: bool,
    slot: Option<u32>,
    _buf: PhantomData<&'a mut [u8]>,
}

impl Leaf<'_, '_> {
    fn sync(&self) -> io::Result<()> {
        let f = &self.be.members.files[self.m];
        if self.write {
            // SAFETY: ptr/len come from a `&'a [u8]` that this Leaf borrows.
            let b = unsafe { std::slice::from_raw_parts(self.ptr, self.len) };
            f.write_all_at(b, self.off)
        } else {
            // SAFETY: ptr/len come from a `&'a mut [u8]` that this Leaf borrows
            // exclusively.
            let b = unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) };
            f.read_exact_at(b, self.off)
        }
    }

    #[cfg(target_os = "linux")]
    fn push(&mut self, u: &Uring) -> io::Result<()> {
        use io_uring::{opcode, types};
        let slot = match u.free.borrow_mut().pop() {
            Some(s) => s,
            None => {
                let mut v = u.slots.borrow_mut();
                v.push((0, None));
                (v.len() - 1) as u32
            }
        };
        u.slots.borrow_mut()[slot as usize] = (self.be.sched.current.get(), None);
        let addr = self.ptr as usize;
        let fixed_buf = u
            .reg
            .binary_search_by(|&(s, _)| s.cmp(&addr))
            .map_or_else(|i| i.checked_sub(1), Some)
            .filter(|&i| addr + self.len <= u.reg[i].1)
            .map(|i| i as u16);
        let len = self.len as u32;
        macro_rules! build {
            ($fd:expr) => {
                match (self.write, fixed_buf) {
                    (false, Some(i)) => opcode::ReadFixed::new($fd, self.ptr, len, i)
                        .offset(self.off)
                        .build(),
                    (false, None) => opcode::Read::new($fd, self.ptr, len)
                        .offset(self.off)
                        .build(),
                    (true, Some(i)) => opcode::WriteFixed::new($fd, self.ptr, len, i)
                        .offset(self.off)
                        .build(),
                    (true, None) => opcode::Write::new($fd, self.ptr, len)
                        .offset(self.off)
                        .build(),
                }
            };
        }
        let e = if u.fixed_files {
            build!(types::Fixed(self.m as u32))
        } else {
            use std::os::fd::AsRawFd;
            build!(types::Fd(self.be.members.files[self.m].as_raw_fd()))
        }
        .user_data(slot as u64);
        let mut ring = u.ring.borrow_mut();
        loop {
            // SAFETY: the entry points at a buffer this Leaf borrows for 'a,
            // and its Drop waits for the completion. A Leaf is crate-private
            // and the crate's only user of it (the worker's executor)
            // awaits or drops every Leaf it makes, never forgets one, so the
            // buffer outlives the operation.
            if unsafe { ring.submission().push(&e) }.is_ok() {
                break;
            }
            ring.submit()?;
        }
        u.inflight.set(u.inflight.get() + 1);
        self.slot = Some(slot);
        Ok(())
    }
}

impl Future for Leaf<'_, '_> {
    type Output = io::Result<()>;

    fn poll(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let be = self.be;
        let counters = &be.members.counters[self.m];
        #[cfg(target_os = "linux")]
        if let Some(u) = &be.uring {
            return match self.slot {
                None => {
                    counters.begin(Instant::now());
                    if let Err(e) = self.push(u) {
                        counters.end(Instant::now(), self.write, 0);
                        return Poll::Ready(Err(be.err(self.m, self.write, self.off, e)));
                    }
                    Poll::Pending
                }
                Some(s) => {
                    let res = u.slots.borrow()[s as usize].1;
                    let Some(res) = res else {
                        return Poll::Pending;
                    };
                    self.slot = None;
                    u.free.borrow_mut().push(s);
                    u.inflight.set(u.inflight.get() - 1);
                    counters.end(Instant::now(), self.write, res.max(0) as usize);
                    Poll::Ready(if res < 0 {
                        Err(be.err(
                            self.m,
                            self.write,
                            self.off,
                            io::Error::from_raw_os_error(-res),
                        ))
                    } else if res as usize != self.len {
                        Err(be.err(
                            self.m,
                            self.write,
                            self.off,
                            io::Error::new(
                                io::ErrorKind::UnexpectedEof,
                                format!("short transfer ({res} of {} bytes)", self.len),
                            ),
                        ))
                    } else {
                        Ok(())
                    })
                }
            };
        }
        counters.begin(Instant::now());
        let r = self.sync();
        counters.end(
            Instant::now(),
            self.write,
            if r.is_ok() { self.len } else { 0 },
        );
        Poll::Ready(r.map_err(|e| be.err(self.m, self.write, self.off, e)))
    }
}

impl Drop for Leaf<'_, '_> {
    fn drop(&mut self) {
        // Never let the kernel write into a buffer that is gone: wait for an
        // operation still in flight (only reachable if a task is dropped
        // early, e.g. while unwinding).
        #[cfg(target_os = "linux")]
        if let (Some(s), Some(u)) = (self.slot, &self.be.uring) {
            while u.slots.borrow()[s as usize].1.is_none() {
                if self.be.wait().is_err() {
                    // The buffer cannot be proven free: stop rather than
                    // let the kernel write into reused memory.
                    std::process::abort();
                }
            }
            u.free.borrow_mut().push(s);
            u.inflight.set(u.inflight.get() - 1);
        }
    }
}
