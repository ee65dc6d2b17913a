//! Replaying a trace as a job's I/O stream, with fio's replay options.
//!
//! fio's semantics (`read_iolog`, `iolog.c`): each I/O waits until its
//! recorded time after the previous one has passed, scaled by
//! `replay_time_scale` (a percentage: 200 replays twice as fast), unless
//! `replay_no_stall` sends them as fast as the job's `iodepth` allows;
//! `replay_scale` divides offsets and `replay_align` rounds them down.
//! raidlab adds what an array of another size needs: offsets past the
//! end of the replayed span are wrapped or scaled into it (`replay_fit`).

use super::{open, BufReader, Extent, Op, Options, Reader, Record, TraceError};
use crate::ioreq::Io;
use crate::units::Ns;
use std::fs::File;
use std::path::PathBuf;

/// Smallest unit either engine addresses: a 512-byte sector. Offsets are
/// rounded down to it and lengths up, so every replayed I/O can go to an
/// O_DIRECT member (the kernel's logical-block minimum).
pub const SECTOR: u64 = 512;

/// How offsets outside the replayed span are brought into it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Fit {
    /// Modulo the span (the default: keeps small-scale locality).
    #[default]
    Wrap,
    /// In proportion: offset × span / the trace's extent (keeps the
    /// trace's spread over the whole array).
    Scale,
}

impl Fit {
    /// The option's word.
    pub fn word(self) -> &'static str {
        match self {
            Fit::Wrap => "wrap",
            Fit::Scale => "scale",
        }
    }
}

/// A workload's trace and how to replay it.
#[derive(Debug, Clone, PartialEq)]
pub struct Replay {
    /// The trace file (fio's `read_iolog`).
    pub path: PathBuf,
    /// How to read it.
    pub opts: Options,
    /// `replay_no_stall`: ignore the times, keep `iodepth` in flight.
    pub no_stall: bool,
    /// `replay_time_scale`, percent (100: as recorded).
    pub time_scale: u32,
    /// `replay_scale`: offsets divided by this.
    pub scale: u64,
    /// `replay_align`: offsets rounded down to a multiple (0: none beyond
    /// the sector).
    pub align: u64,
    /// `replay_fit`.
    pub fit: Fit,
    /// What a pass over the trace found (checked when the workload was read).
    pub extent: Extent,
}

impl Replay {
    /// The replay as workload keys, for echoes and labels.
    pub fn pairs(&self) -> Vec<(String, String)> {
        let mut v = vec![
            ("read_iolog".to_string(), self.path.display().to_string()),
            ("trace_format".into(), self.extent.format.word().into()),
        ];
        if let Some(d) = &self.opts.device {
            v.push(("trace_device".into(), d.clone()));
        }
        if self.opts.event == super::BlkEvent::Dispatch {
            v.push(("trace_event".into(), "D".into()));
        }
        if self.no_stall {
            v.push(("replay_no_stall".into(), "1".into()));
        }
        if self.time_scale != 100 {
            v.push(("replay_time_scale".into(), self.time_scale.to_string()));
        }
        if self.scale != 1 {
            v.push(("replay_scale".into(), self.scale.to_string()));
        }
        if self.align != 0 {
            v.push(("replay_align".into(), self.align.to_string()));
        }
        if self.fit != Fit::Wrap {
            v.push(("replay_fit".into(), self.fit.word().into()));
        }
        v
    }

    /// Whether I/Os are issued at their recorded times.
    pub fn timed(&self) -> bool {
        !self.no_stall && self.extent.timed
    }

    /// A recorded time, scaled by `replay_time_scale`.
    pub fn scaled(&self, at: Ns) -> Ns {
        (at as u128 * 100 / self.time_scale.max(1) as u128).min(u64::MAX as u128) as Ns
    }
}

/// What a replay did beside its I/Os.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    /// Reads and writes replayed.
    pub ios: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Offsets moved into the span by `replay_fit`.
    pub fitted: u64,
    /// Flushes replayed: each went out once the job's I/Os before it
    /// were back, as fio's replay quiesces before a sync.
    pub flushes: u64,
    /// Trims passed over (neither engine replays them), and flushes where
    /// the reader did not ask for them.
    pub skipped: u64,
}

/// One job's stream of a trace.
pub struct Feed {
    reader: Option<Reader<BufReader<File>>>,
    replay: Replay,
    span: u64,
    /// The due time of the I/O last handed out, ns after the job's start.
    due: Option<Ns>,
    /// What was handed out.
    pub tally: Tally,
    /// The error that ended the stream early (the trace changed after it
    /// was checked), if any.
    pub error: Option<TraceError>,
    /// A record read ahead by [`Feed::flush_first`], not yet handed out.
    peeked: Option<Record>,
}

impl std::fmt::Debug for Feed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Feed")
            .field("path", &self.replay.path)
            .field("tally", &self.tally)
            .finish()
    }
}

impl Clone for Feed {
    /// A feed of the same trace from its start (a stream is cloned only
    /// before it is read); one whose trace no longer opens is empty and
    /// holds the error.
    fn clone(&self) -> Feed {
        Feed::open(&self.replay, self.span)
    }
}

impl Feed {
    /// A feed of `replay`'s trace over `span` bytes; one whose trace no
    /// longer opens is empty and holds the error.
    pub fn open(replay: &Replay, span: u64) -> Feed {
        Feed::new(replay, span).unwrap_or_else(|e| Feed {
            reader: None,
            replay: replay.clone(),
            span,
            due: None,
            tally: Tally::default(),
            error: Some(e),
            peeked: None,
        })
    }

    /// A feed of `replay`'s trace over a span of `span` bytes.
    pub fn new(replay: &Replay, span: u64) -> Result<Feed, TraceError> {
        let reader = open(&replay.path, replay.opts.clone())?;
        Ok(Feed {
            reader: Some(reader),
            replay: replay.clone(),
            span,
            due: None,
            tally: Tally::default(),
            error: None,
            peeked: None,
        })
    }

    /// When the I/O last handed out is due, ns after the job's start
    /// (`None`: at once, closed loop).
    pub fn due(&self) -> Option<Ns> {
        self.due
    }

    /// The next record, read ahead or from the trace (`None` at its end or
    /// at an error, which is kept).
    fn record(&mut self) -> Option<Record> {
        if let Some(r) = self.peeked.take() {
            return Some(r);
        }
        match self.reader.as_mut()?.next()? {
            Ok(r) => Some(r),
            Err(e) => {
                self.error = Some(e);
                None
            }
        }
    }

    /// Whether the trace flushes before its next read or write: a flush
    /// record is taken and counted (trims before it passed over), and the
    /// caller flushes once the job's I/Os before it are back. Asked before
    /// each [`Feed::next_io`] by an engine that replays flushes; one that
    /// does not ask has them passed over.
    pub fn flush_first(&mut self) -> bool {
        while let Some(rec) = self.record() {
            match rec.op {
                Op::Flush => {
                    self.tally.flushes += 1;
                    return true;
                }
                Op::Trim => self.tally.skipped += 1,
                Op::Read | Op::Write => {
                    self.peeked = Some(rec);
                    return false;
                }
            }
        }
        false
    }

    /// The next read or write, fitted into the span.
    pub fn next_io(&mut self) -> Option<Io> {
        loop {
            let rec = self.record()?;
            if matches!(rec.op, Op::Trim | Op::Flush) {
                self.tally.skipped += 1;
                continue;
            }
            if self.replay.timed() {
                let t = self.replay.scaled(rec.at.unwrap_or(0));
                // fio waits no time for a record stamped before the last.
                self.due = Some(self.due.map_or(t, |d| d.max(t)));
            }
            let (offset, len) = self.place(rec.offset, rec.len);
            self.tally.ios += 1;
            self.tally.bytes += len;
            return Some(Io {
                offset,
                len: len as u32,
                read: rec.op == Op::Read,
            });
        }
    }

    /// Where a record's bytes go in the span: scaled, aligned, fitted.
    fn place(&mut self, offset: u64, len: u64) -> (u64, u64) {
        let len = len.div_ceil(SECTOR) * SECTOR;
        let len = len.min(self.span / SECTOR * SECTOR).max(SECTOR);
        let mut o = offset / self.replay.scale.max(1);
        if self.replay.align > 0 {
            o -= o % self.replay.align;
        }
        o -= o % SECTOR;
        let room = self.span - len;
        if o > room {
            self.tally.fitted += 1;
            o = match self.replay.fit {
                Fit::Wrap => o % (room + SECTOR),
                Fit::Scale => {
                    let end = (self.replay.extent.end / self.replay.scale.max(1)).max(1);
                    (o as u128 * self.span as u128 / end as u128) as u64
                }
            };
            o = (o - o % SECTOR).min(room - room % SECTOR);
        }
        (o, len)
    }
}

impl Tally {
    /// Another job's tally added.
    pub fn add(&mut self, o: &Tally) {
        self.ios += o.ios;
        self.bytes += o.bytes;
        self.fitted += o.fitted;
        self.flushes += o.flushes;
        self.skipped += o.skipped;
    }
}

/// The result's account of a replay: `tally` summed over the jobs, `lag`
/// their issue lag (timed replays), `error` what cut the trace short.
pub fn stats(
    replay: &Replay,
    tally: Tally,
    lag: &crate::metrics::Lag,
    error: Option<String>,
) -> crate::result::ReplayStats {
    let (mean, p50, p99, max) = lag.micros();
    let timed = replay.timed();
    crate::result::ReplayStats {
        format: replay.extent.format.word().into(),
        event: (replay.extent.format == super::Format::Blkparse).then(|| match replay.opts.event {
            super::BlkEvent::Queue => "Q".to_string(),
            super::BlkEvent::Dispatch => "D".to_string(),
        }),
        timed,
        ios: tally.ios,
        bytes: tally.bytes,
        fitted: tally.fitted,
        fit: replay.fit.word().into(),
        flushes: tally.flushes,
        skipped: tally.skipped,
        late_pct: 100.0 * lag.late as f64 / lag.count.max(1) as f64,
        lag_mean_us: mean,
        lag_p50_us: p50,
        lag_p99_us: p99,
        lag_max_us: max,
        kept_up: !timed || p99 <= crate::result::KEPT_UP_LAG_US,
        error,
    }
}

/// Check the trace `path` and size its replay: every line read once.
pub fn prepare(path: PathBuf, opts: Options) -> Result<Replay, TraceError> {
    let extent = super::scan(&path, &opts)?;
    Ok(Replay {
        path,
        opts,
        no_stall: false,
        time_scale: 100,
        scale: 1,
        align: 0,
        fit: Fit::Wrap,
        extent,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn replay_of(text: &str) -> (tempfile_path::TempPath, Replay) {
        let p = tempfile_path::TempPath::with(text);
        let r = prepare(p.0.clone(), Options::default()).unwrap();
        (p, r)
    }

    /// A file removed when dropped (std only).
    mod tempfile_path {
        pub struct TempPath(pub std::path::PathBuf);
        impl TempPath {
            pub fn with(text: &str) -> TempPath {
                use std::sync::atomic::{AtomicU64, Ordering};
                static N: AtomicU64 = AtomicU64::new(0);
                let p = std::env::temp_dir().join(format!(
                    "raidlab-replay-{}-{}.trace",
                    std::process::id(),
                    N.fetch_add(1, Ordering::Relaxed)
                ));
                std::fs::write(&p, text).unwrap();
                TempPath(p)
            }
        }
        impl Drop for TempPath {
            fn drop(&mut self) {
                let _ = std::fs::remove_file(&self.0);
            }
        }
    }

    #[test]
    fn timed_replay_scales_times_and_never_goes_back() {
        let (_p, mut r) = replay_of("0,R,0,4096,1000\n0,W,4096,4096,3000\n0,R,0,4096,2000\n");
        r.time_scale = 200;
        let mut f = Feed::new(&r, 1 << 20).unwrap();
        let mut dues = Vec::new();
        while let Some(io) = f.next_io() {
            dues.push((io.read, f.due()));
        }
        assert_eq!(
            dues,
            vec![
                (true, Some(0)),
                (false, Some(1_000_000)),
                (true, Some(1_000_000))
            ]
        );
        r.no_stall = true;
        let mut f = Feed::new(&r, 1 << 20).unwrap();
        f.next_io();
        assert_eq!(f.due(), None);
    }

    /// Flushes are handed out where they stand between the I/Os to a
    /// reader that asks; trims are passed over; a reader that does not ask
    /// has flushes passed over too.
    #[test]
    fn flushes_stand_between_the_ios_they_follow() {
        let log = "fio version 2 iolog\nf add\nf open\nf write 0 4096\nf sync 0 0\n\
                   f trim 0 4096\nf datasync 0 0\nf read 0 4096\nf sync 0 0\n";
        let (_p, r) = replay_of(log);
        let mut f = Feed::new(&r, 1 << 20).unwrap();
        let mut seen = String::new();
        loop {
            while f.flush_first() {
                seen.push('F');
            }
            match f.next_io() {
                Some(io) => seen.push(if io.read { 'R' } else { 'W' }),
                None => break,
            }
        }
        assert_eq!(seen, "WFFRF");
        assert_eq!((f.tally.ios, f.tally.flushes, f.tally.skipped), (2, 3, 1));
        let mut f = Feed::new(&r, 1 << 20).unwrap();
        while f.next_io().is_some() {}
        assert_eq!((f.tally.ios, f.tally.flushes, f.tally.skipped), (2, 0, 4));
    }

    #[test]
    fn offsets_past_the_span_wrap_or_scale() {
        let (_p, mut r) = replay_of("0,R,0,4096,1\n0,R,1048576,4096,2\n0,R,2093056,4096,3\n");
        let mut f = Feed::new(&r, 1 << 20).unwrap();
        let offs: Vec<u64> = std::iter::from_fn(|| f.next_io())
            .map(|io| io.offset)
            .collect();
        assert_eq!(
            offs,
            vec![
                0,
                1048576 % (1048576 - 4096 + 512),
                2093056 % (1048576 - 4096 + 512)
            ]
        );
        assert_eq!(f.tally.fitted, 2);
        r.fit = Fit::Scale;
        let mut f = Feed::new(&r, 1 << 20).unwrap();
        let offs: Vec<u64> = std::iter::from_fn(|| f.next_io())
            .map(|io| io.offset)
            .collect();
        assert_eq!(offs, vec![0, 524288, 1044480]);
        for o in offs {
            assert!(o + 4096 <= 1 << 20 && o % SECTOR == 0);
        }
    }
}
