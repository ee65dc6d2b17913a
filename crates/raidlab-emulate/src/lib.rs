//! A simulated array as a block device (`raidlab serve` over presets): the
//! model runs in real time beside the NBD server. Each request enters the model when it arrives and is
//! answered when the model completes it; its data lives in a sparse file
//! (on disk or in memory). How late each answer went out against the
//! model's completion time (the drift) is measured and reported.
//!
//! Threads: one per connection reads requests, moves their data to or from
//! the sparse file at once, and hands them to the model's thread, which
//! owns the [`Live`] simulation and the clock. That thread runs the model
//! up to the present, answers what it completed, and then waits for the
//! next arrival or the model's next event: asleep while that is more than
//! [`SPIN_NS`] ahead, spinning (yielding its core to any thread ready for
//! it) for the last stretch so that answers leave on time.

#![warn(missing_docs)]

mod drift;

pub use drift::Drift;
use drift::{behind, latency_at_us, mean_latency_us};
use raidlab_core::metrics::Lag;
use raidlab_core::units::Ns;
use raidlab_io::nbd::{Command, Pipelined, Reply, ReplyBatch};
use raidlab_io::sparse::Sparse;
use raidlab_sim::live::{Live, LiveOp, Tag};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// The stretch before an answer falls due that the model's thread spins
/// through instead of sleeping: 20 µs, above a timed wait's wake-up
/// latency on Linux with a 1 ns timer slack (a few µs, up to ~15 µs on a
/// busy machine), so that sleeping never makes an answer late.
pub const SPIN_NS: Ns = 20_000;

/// How long the model's thread keeps spinning after its last arrival or
/// answer before it sleeps: 200 µs. A client at queue depth 1 sends its
/// next request a few tens of µs after an answer (fio over NBD: ~30 µs);
/// waking a sleeping thread for it would add ~5-10 µs to the request.
const SPIN_IDLE_NS: Ns = 200_000;

/// How long the model's thread sleeps at most while the model is idle and
/// nothing arrives, before looking whether serving has ended: 20 ms.
const IDLE_WAIT: Duration = Duration::from_millis(20);

/// Most bytes of requests held between arrival and answer (reads' data
/// waiting for their time, writes' lengths): 256 MiB. A connection whose
/// request would pass it waits until answers free room, so memory stays
/// bounded whatever the clients send.
pub const MAX_IN_FLIGHT_BYTES: u64 = 256 << 20;

/// A request on its way to the model.
struct Arrival {
    at: Instant,
    op: LiveOp,
    offset: u64,
    len: u32,
    /// A read's bytes, answered when the model completes it.
    data: Vec<u8>,
    reply: Reply,
}

/// The bound on bytes in flight.
#[derive(Default)]
struct Gate {
    bytes: Mutex<u64>,
    room: Condvar,
}

/// What each request counts against [`MAX_IN_FLIGHT_BYTES`] at least:
/// 4 KiB, so that requests without data (flushes, small reads) are
/// bounded in number too (64 Ki at most).
const REQUEST_FLOOR: u64 = 4096;

impl Gate {
    /// Wait until `n` more bytes fit (a request alone always does).
    fn enter(&self, n: u64) {
        let n = n.max(REQUEST_FLOOR);
        let mut b = self.bytes.lock().unwrap_or_else(|e| e.into_inner());
        while *b > 0 && *b + n > MAX_IN_FLIGHT_BYTES {
            b = self.room.wait(b).unwrap_or_else(|e| e.into_inner());
        }
        *b += n;
    }

    fn leave(&self, n: u64) {
        self.leave_all(n.max(REQUEST_FLOOR));
    }

    /// Requests that counted `counted` in all (each its bytes, at least
    /// [`REQUEST_FLOOR`]) are done.
    fn leave_all(&self, counted: u64) {
        let mut b = self.bytes.lock().unwrap_or_else(|e| e.into_inner());
        debug_assert!(*b >= counted, "{counted} bytes leave of {}", *b);
        *b -= counted;
        self.room.notify_all();
    }
}

/// The served store: the sparse data and the way to the model.
pub struct Emulated {
    data: Sparse,
    to_model: mpsc::Sender<Arrival>,
    gate: Gate,
}

impl Emulated {
    fn send(&self, a: Arrival) {
        let n = u64::from(a.len);
        if let Err(mpsc::SendError(a)) = self.to_model.send(a) {
            // The model has stopped (serving is ending): the reply, dropped,
            // answers EIO.
            self.gate.leave(n);
            drop(a);
        }
    }
}

impl Pipelined for Emulated {
    fn size(&self) -> u64 {
        self.data.size()
    }

    fn take(&self, cmd: Command, reply: Reply) {
        let at = Instant::now();
        let len = match &cmd {
            Command::Read { len, .. } => *len,
            Command::Write { data, .. } => data.len() as u32,
            _ => 0,
        };
        self.gate.enter(u64::from(len));
        match self.store(cmd) {
            Ok(Some((op, offset, data))) => self.send(Arrival {
                at,
                op,
                offset,
                len,
                data,
                reply,
            }),
            Ok(None) => {
                self.gate.leave(u64::from(len));
                reply.ok(&[])
            }
            Err(e) => {
                self.gate.leave(u64::from(len));
                reply.fail(&e)
            }
        }
    }
}

impl Emulated {
    /// Move `cmd`'s data to or from the sparse file now; what goes on to
    /// the model (its operation, offset, and a read's bytes), or `None`
    /// for what the model does not time: TRIM and WRITE_ZEROES (the
    /// simulated devices take no TRIM; the bytes read as zero from now on).
    fn store(&self, cmd: Command) -> std::io::Result<Option<(LiveOp, u64, Vec<u8>)>> {
        let sync_if = |fua: bool| if fua { self.data.sync() } else { Ok(()) };
        Ok(match cmd {
            Command::Read { offset, len } => {
                let mut data = vec![0u8; len as usize];
                self.data.read(offset, &mut data)?;
                Some((LiveOp::Read, offset, data))
            }
            Command::Write { offset, data, fua } => {
                self.data.write(offset, &data)?;
                sync_if(fua)?;
                Some((LiveOp::Write { fua }, offset, Vec::new()))
            }
            Command::Flush => {
                self.data.sync()?;
                Some((LiveOp::Flush, 0, Vec::new()))
            }
            Command::Trim { offset, len, fua } | Command::WriteZeroes { offset, len, fua } => {
                self.data.zero(offset, u64::from(len))?;
                sync_if(fua)?;
                None
            }
        })
    }
}

/// A request in the model: its answer, and how late the model took it in.
struct Pending {
    reply: Reply,
    data: Vec<u8>,
    late_in: Ns,
    bytes: u64,
}

/// The model's thread: the live simulation, its clock, the requests in it.
struct Model<'a> {
    live: Live,
    t0: Instant,
    pending: Vec<Option<Pending>>,
    free: Vec<usize>,
    done: Vec<(Tag, Ns)>,
    late: Lag,
    second: Lag,
    next_second: Ns,
    /// When the thread last took a request in or answered one.
    last_active: Ns,
    behind_seconds: u64,
    stats: bool,
    gate: &'a Gate,
}

impl Model<'_> {
    /// Nanoseconds on the serve's clock.
    fn clock(&self) -> Ns {
        self.t0.elapsed().as_nanos() as Ns
    }

    fn hand_in(&mut self, a: Arrival) {
        let at = a.at.saturating_duration_since(self.t0).as_nanos() as Ns;
        let late_in = self.live.now().saturating_sub(at);
        self.last_active = self.clock();
        let p = Pending {
            reply: a.reply,
            data: a.data,
            late_in,
            bytes: u64::from(a.len),
        };
        let slot = match self.free.pop() {
            Some(s) => {
                self.pending[s] = Some(p);
                s
            }
            None => {
                self.pending.push(Some(p));
                self.pending.len() - 1
            }
        };
        self.live
            .hand_in(at, Tag(slot as u64), a.op, a.offset, a.len);
    }

    /// Answer every request the model has completed, each connection's
    /// answers in one write.
    fn answer(&mut self) {
        let done = std::mem::take(&mut self.done);
        let mut batch = ReplyBatch::default();
        let mut left = 0;
        for &(Tag(tag), t) in &done {
            let slot = tag as usize;
            let p = self.pending[slot].take().expect("a request in the model");
            self.free.push(slot);
            // Late by when its answer is ready to go out, as a served file's
            // answer is when the round trip is measured: the write that
            // takes it out is the protocol's.
            let late = self.clock().saturating_sub(t) + p.late_in;
            self.late.record(late);
            self.second.record(late);
            p.reply.ok_in(&p.data, &mut batch);
            left += p.bytes.max(REQUEST_FLOOR);
        }
        batch.send();
        // The answers' bytes are out of memory only now.
        self.gate.leave_all(left);
        if !done.is_empty() {
            self.last_active = self.clock();
        }
        self.done = done;
        self.done.clear();
    }

    /// Wait for the next arrival or until the model's next event is due.
    fn wait(&mut self, arrivals: &mpsc::Receiver<Arrival>) {
        let now = self.clock();
        let until = self
            .live
            .next_time()
            .unwrap_or(now + IDLE_WAIT.as_nanos() as Ns)
            .min(self.next_second);
        // Spin through the last stretch before the model's next event, and
        // for a while after the last activity (the next arrival is near).
        let busy_until = self.last_active + SPIN_IDLE_NS;
        let end = if until <= now + SPIN_NS {
            until
        } else if now < busy_until {
            busy_until.min(until - SPIN_NS)
        } else {
            let sleep = Duration::from_nanos(until - SPIN_NS - now);
            if let Ok(a) = arrivals.recv_timeout(sleep) {
                self.hand_in(a);
            }
            return;
        };
        while self.clock() < end {
            if let Ok(a) = arrivals.try_recv() {
                self.hand_in(a);
                return;
            }
            // Give the core to any other thread ready on it (a client or a
            // connection's reader on a machine of few cores): spinning
            // must not delay the requests it waits for.
            std::thread::yield_now();
        }
    }

    /// Once a second: the figures of the second past (with `--stats`), or
    /// a warning when answers fell behind the model.
    fn each_second(&mut self, now: Ns) {
        if now < self.next_second {
            return;
        }
        self.next_second = now + 1_000_000_000;
        let second = std::mem::take(&mut self.second);
        let (mean, p50, p99, max) = second.micros();
        let model = self.live.metrics();
        let model_mean_us = mean_latency_us(model);
        let behind = second.count > 0 && behind(p99, model_mean_us);
        self.behind_seconds += u64::from(behind);
        if self.stats && (second.count > 0 || self.live.in_flight() > 0) {
            eprintln!(
                "raidlab: {:.0} s: {} answers/s; model latency mean {model_mean_us:.1} us; answers late mean {mean:.1} us, p50 {p50:.1}, p99 {p99:.1}, max {max:.1}; {} in flight",
                now as f64 / 1e9,
                second.count,
                self.live.in_flight()
            );
        }
        if behind && (self.stats || self.behind_seconds.is_power_of_two()) {
            eprintln!(
                "raidlab: the host is not keeping up with the model: answers went out late by {p99:.0} us at the 99th percentile over the last second (times a client measures are that much longer than the array's)"
            );
        }
    }

    /// Run until `stop`, once every request taken in has been answered.
    fn run(mut self, arrivals: mpsc::Receiver<Arrival>, stop: &AtomicBool) -> Drift {
        raidlab_io::serve::fine_timer_slack();
        loop {
            while let Ok(a) = arrivals.try_recv() {
                self.hand_in(a);
            }
            let now = self.clock();
            self.live.advance(now, &mut self.done);
            self.answer();
            self.each_second(now);
            // Serving has ended and every request is answered (the model's
            // own background work, a cache destaging, is not waited for).
            if stop.load(Ordering::SeqCst) && self.free.len() == self.pending.len() {
                break;
            }
            self.wait(&arrivals);
        }
        Drift {
            answered: self.late.count,
            model_mean_us: mean_latency_us(self.live.metrics()),
            model_tail_us: [0.98, 0.99, 0.995].map(|q| latency_at_us(self.live.metrics(), q)),
            late: self.late,
            behind_seconds: self.behind_seconds,
        }
    }
}

/// Serve `live` over NBD with its data in `data`, as `opts` says; `ready`
/// is told the size once clients may connect. Returns the server's summary
/// and the emulation's drift.
pub fn serve(
    live: Live,
    data: Sparse,
    opts: &raidlab_io::serve::ServeOptions,
    stats: bool,
    ready: impl FnOnce(u64),
) -> Result<(raidlab_io::serve::ServeSummary, Drift), raidlab_io::Error> {
    let (tx, rx) = mpsc::channel();
    let store = Emulated {
        data,
        to_model: tx,
        gate: Gate::default(),
    };
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        let model = Model {
            live,
            t0: Instant::now(),
            pending: Vec::new(),
            free: Vec::new(),
            done: Vec::new(),
            late: Lag::default(),
            second: Lag::default(),
            next_second: 1_000_000_000,
            last_active: 0,
            behind_seconds: 0,
            stats,
            gate: &store.gate,
        };
        let stop_ref = &stop;
        let thread = s.spawn(move || model.run(rx, stop_ref));
        let served = raidlab_io::serve::serve_pipelined(&store, opts, ready);
        stop.store(true, Ordering::SeqCst);
        let drift = thread.join().expect("the model's thread does not panic");
        served.map(|s| (s, drift))
    })
}
