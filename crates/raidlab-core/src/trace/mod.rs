//! Block traces: readers for the formats people record (fio's iolog,
//! blkparse's text, the MSR Cambridge, Alibaba, Tencent CBS and SPC/UMass
//! collections), detected by content, read as a stream in bounded memory.
//!
//! A [`Reader`] yields one [`Record`] per I/O, its time made relative to
//! the trace's first record and in nanoseconds, its offset and length in
//! bytes. A malformed line is a [`TraceError`] naming the file, the line
//! and the field; nothing here panics on input, and no line longer than
//! [`MAX_LINE`] bytes is held.

mod formats;
pub mod replay;
pub mod stats;

use crate::units::Ns;
use std::fmt;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

/// Longest line a reader holds, bytes: fio's own iolog reader reads lines
/// of at most 4,096 bytes (`fgets(str, 4096, ...)` in `read_iolog`); the
/// CSV collections' lines are under 100. 64 KiB leaves room for any
/// process name blkparse appends and still bounds memory.
pub const MAX_LINE: usize = 64 << 10;

/// A reader's file buffer, bytes.
const READ_BUFFER: usize = 64 << 10;

/// Most memory one open reader holds: its file buffer and its longest
/// line (what a replaying job's stream costs beside itself).
pub const READER_BYTES: u64 = (READ_BUFFER + MAX_LINE) as u64;

/// Largest single I/O a trace may carry, bytes: the workload language's
/// largest block size (64 MiB), which bounds both engines' buffers.
pub const MAX_IO: u64 = 64 << 20;

/// A trace format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// fio iolog version 2 (`fio version 2 iolog`).
    IologV2,
    /// fio iolog version 3 (fio ≥ 3.31: a time in µs first).
    IologV3,
    /// blkparse's default text output.
    Blkparse,
    /// MSR Cambridge / SNIA IOTTA CSV.
    Msr,
    /// Alibaba block traces.
    Alibaba,
    /// Tencent CBS.
    Tencent,
    /// SPC / UMass (`ASU,LBA,Size,Opcode,Timestamp`).
    Spc,
}

impl Format {
    /// Every format, in the order the docs list them.
    pub const ALL: [Format; 7] = [
        Format::IologV2,
        Format::IologV3,
        Format::Blkparse,
        Format::Msr,
        Format::Alibaba,
        Format::Tencent,
        Format::Spc,
    ];

    /// The format's name in options and output.
    pub fn word(self) -> &'static str {
        match self {
            Format::IologV2 => "iolog2",
            Format::IologV3 => "iolog3",
            Format::Blkparse => "blkparse",
            Format::Msr => "msr",
            Format::Alibaba => "alibaba",
            Format::Tencent => "tencent",
            Format::Spc => "spc",
        }
    }

    /// The format named `w`.
    pub fn from_word(w: &str) -> Option<Format> {
        Format::ALL.into_iter().find(|f| f.word() == w)
    }

    /// Nanoseconds per tick of the format's clock.
    fn tick_ns(self) -> u64 {
        match self {
            // fio's utime_since_now: µs.
            Format::IologV3 => 1_000,
            // Windows FILETIME: 100 ns ticks.
            Format::Msr => 100,
            // Alibaba: µs.
            Format::Alibaba => 1_000,
            // Tencent CBS: whole seconds.
            Format::Tencent => 1_000_000_000,
            // Parsed exactly into ns (blkparse, SPC); iolog v2 has no clock.
            Format::IologV2 | Format::Blkparse | Format::Spc => 1,
        }
    }
}

/// What a record does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    /// Read.
    Read,
    /// Write.
    Write,
    /// Trim / discard.
    Trim,
    /// Flush (fio's `sync`/`datasync`, blkparse's bare `F`).
    Flush,
}

/// One I/O of a trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record {
    /// When it was issued, ns after the trace's first record (`None`: the
    /// format records no time, fio's iolog v2 before any `wait`).
    pub at: Option<Ns>,
    /// What it does.
    pub op: Op,
    /// Byte offset.
    pub offset: u64,
    /// Length in bytes (0 for a flush).
    pub len: u64,
}

/// Which blkparse event stands for an I/O's issue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BlkEvent {
    /// `Q`: queued by the block layer (what the application asked for).
    #[default]
    Queue,
    /// `D`: dispatched to the driver (after merging and scheduling).
    Dispatch,
}

impl BlkEvent {
    fn action(self) -> &'static str {
        match self {
            BlkEvent::Queue => "Q",
            BlkEvent::Dispatch => "D",
        }
    }
}

/// How to read a trace.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Options {
    /// The format (`None`: detected from the first line).
    pub format: Option<Format>,
    /// Only this device, file, volume or ASU (`None`: all of them, into
    /// one address space, as fio's `replay_redirect` does).
    pub device: Option<String>,
    /// blkparse: which event to take.
    pub event: BlkEvent,
}

/// A malformed trace: where and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceError {
    /// The trace's name (its path).
    pub file: String,
    /// 1-based line (0: before any line was read).
    pub line: u64,
    /// The field at fault.
    pub field: String,
    /// What is wrong.
    pub msg: String,
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}: {}: {}",
            self.file, self.line, self.field, self.msg
        )
    }
}

impl std::error::Error for TraceError {}

impl From<TraceError> for crate::error::Error {
    fn from(e: TraceError) -> Self {
        crate::error::Error::Trace(e.to_string())
    }
}

/// A streaming reader of one trace.
pub struct Reader<R> {
    src: R,
    name: String,
    format: Format,
    opts: Options,
    line: u64,
    buf: Vec<u8>,
    /// A line read to detect the format, still to be parsed.
    pending: Option<Vec<u8>>,
    /// The first record's time, in the format's ticks.
    t0: Option<u64>,
    /// iolog v2: the latest `wait`, ns.
    wait: Option<Ns>,
    done: bool,
}

/// Open the trace at `path`.
pub fn open(path: &Path, opts: Options) -> Result<Reader<BufReader<std::fs::File>>, TraceError> {
    let name = path.display().to_string();
    let f = std::fs::File::open(path).map_err(|e| TraceError {
        file: name.clone(),
        line: 0,
        field: "file".into(),
        msg: e.to_string(),
    })?;
    Reader::new(BufReader::with_capacity(READ_BUFFER, f), &name, opts)
}

impl<R: BufRead> Reader<R> {
    /// A reader of `src`, called `name` in errors; the format is detected
    /// from the first line that is neither blank nor a `#` comment unless
    /// `opts` forces one.
    pub fn new(src: R, name: &str, opts: Options) -> Result<Reader<R>, TraceError> {
        let mut r = Reader {
            src,
            name: name.to_string(),
            format: opts.format.unwrap_or(Format::IologV2),
            opts,
            line: 0,
            buf: Vec::new(),
            pending: None,
            t0: None,
            wait: None,
            done: false,
        };
        r.start()?;
        Ok(r)
    }

    /// The format being read.
    pub fn format(&self) -> Format {
        self.format
    }

    /// The line last read (1-based).
    pub fn line(&self) -> u64 {
        self.line
    }

    fn err(&self, field: &str, msg: impl Into<String>) -> TraceError {
        TraceError {
            file: self.name.clone(),
            line: self.line,
            field: field.into(),
            msg: msg.into(),
        }
    }

    /// Read the first meaningful line: the format's version line or
    /// column header is consumed; any other line is kept to be parsed.
    fn start(&mut self) -> Result<(), TraceError> {
        while self.next_line()? {
            let text = String::from_utf8_lossy(&self.buf).trim().to_string();
            if text.is_empty() || text.starts_with('#') {
                continue;
            }
            let seen = formats::looks_like(&text).or_else(|| header_format(&text));
            let format = match (self.opts.format, seen) {
                (Some(f), _) => f,
                (None, Some(f)) => f,
                (None, None) => {
                    return Err(self.err(
                        "format",
                        "not a trace format raidlab reads (fio iolog v2/v3, blkparse, msr, alibaba, tencent, spc); force one with trace_format=",
                    ))
                }
            };
            self.format = format;
            let consumed = text.starts_with("fio version") || formats::is_header(format, &text);
            if matches!(format, Format::IologV2 | Format::IologV3)
                && !text.starts_with("fio version")
            {
                return Err(self.err(
                    "version",
                    "an iolog starts with 'fio version 2 iolog' or 'fio version 3 iolog'",
                ));
            }
            if !consumed {
                self.pending = Some(std::mem::take(&mut self.buf));
            }
            return Ok(());
        }
        Err(self.err("file", "the trace is empty"))
    }

    /// Read one line into `buf` (without its end); false at the end.
    fn next_line(&mut self) -> Result<bool, TraceError> {
        self.buf.clear();
        loop {
            let avail = match self.src.fill_buf() {
                Ok(a) => a,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(self.err("read", e.to_string())),
            };
            if avail.is_empty() {
                if self.buf.is_empty() {
                    return Ok(false);
                }
                break;
            }
            let (take, end) = match avail.iter().position(|&b| b == b'\n') {
                Some(i) => (i + 1, true),
                None => (avail.len(), false),
            };
            if self.buf.len() + take > MAX_LINE + 1 {
                self.line += 1;
                return Err(self.err("line", format!("longer than {MAX_LINE} bytes")));
            }
            self.buf.extend_from_slice(&avail[..take]);
            self.src.consume(take);
            if end {
                break;
            }
        }
        self.line += 1;
        while matches!(self.buf.last(), Some(b'\n' | b'\r')) {
            self.buf.pop();
        }
        Ok(true)
    }

    /// The next record, `None` at the end of the trace.
    fn next_record(&mut self) -> Result<Option<Record>, TraceError> {
        loop {
            if self.done {
                return Ok(None);
            }
            match self.pending.take() {
                Some(p) => self.buf = p,
                None => {
                    if !self.next_line()? {
                        self.done = true;
                        return Ok(None);
                    }
                }
            }
            let Ok(text) = std::str::from_utf8(&self.buf) else {
                return Err(self.err("line", "not UTF-8 text"));
            };
            let t = text.trim();
            if t.is_empty() || t.starts_with('#') {
                continue;
            }
            let parsed = self.format.parse(t, self.opts.event.action());
            match parsed {
                Err(b) => return Err(self.err(b.field, b.msg)),
                Ok(formats::Line::Skip) => continue,
                Ok(formats::Line::End) => {
                    self.done = true;
                    return Ok(None);
                }
                Ok(formats::Line::Wait(ms)) => {
                    let ns = ms.checked_mul(1_000_000);
                    let Some(ns) = ns else {
                        return Err(self.err("delay", "too large"));
                    };
                    self.wait = Some(ns);
                }
                Ok(formats::Line::Io(raw)) => {
                    if self.opts.device.as_deref().is_some_and(|d| d != raw.device) {
                        continue;
                    }
                    let (time, op, offset, len) = (raw.time, raw.op, raw.offset, raw.len);
                    return self.record(time, op, offset, len).map(Some);
                }
            }
        }
    }

    /// A checked record from a parsed line.
    fn record(
        &mut self,
        time: Option<u64>,
        op: Op,
        offset: u64,
        len: u64,
    ) -> Result<Record, TraceError> {
        // A trim may name gigabytes (fio's own test logs trim 2 GiB at a
        // time); it moves no data, so only reads and writes are bounded.
        if len > MAX_IO && matches!(op, Op::Read | Op::Write) {
            return Err(self.err("length", format!("{len} bytes; at most {MAX_IO}")));
        }
        if len == 0 && matches!(op, Op::Read | Op::Write) {
            return Err(self.err("length", "a read or write of 0 bytes"));
        }
        if offset.checked_add(len).is_none() {
            return Err(self.err("offset", "offset + length overflows 64 bits"));
        }
        let at = match time {
            Some(t) => {
                let t0 = *self.t0.get_or_insert(t);
                // A record stamped before the first (blkparse's CPUs
                // interleave) counts from the start.
                let ticks = t.saturating_sub(t0);
                Some(ticks.checked_mul(self.format.tick_ns()).ok_or_else(|| {
                    self.err("time", "more than 584 years after the first record")
                })?)
            }
            None => self.wait,
        };
        Ok(Record {
            at,
            op,
            offset,
            len,
        })
    }
}

/// The format a column-header line names.
fn header_format(line: &str) -> Option<Format> {
    let l = line.to_ascii_lowercase().replace(' ', "");
    if l.starts_with("timestamp,hostname,disknumber") {
        Some(Format::Msr)
    } else if l.starts_with("device_id,opcode") {
        Some(Format::Alibaba)
    } else if l.starts_with("timestamp,offset,size,iotype") {
        Some(Format::Tencent)
    } else if l.starts_with("asu,lba") {
        Some(Format::Spc)
    } else {
        None
    }
}

impl<R: BufRead> Iterator for Reader<R> {
    type Item = Result<Record, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        match self.next_record() {
            Ok(r) => r.map(Ok),
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

/// What a full pass over a trace found: enough to size a replay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Extent {
    /// The format read.
    pub format: Format,
    /// I/O records (after the device filter).
    pub records: u64,
    /// Reads and writes among them.
    pub reads: u64,
    /// See `reads`.
    pub writes: u64,
    /// Bytes of the reads and writes.
    pub bytes: u64,
    /// Largest I/O, bytes.
    pub max_len: u64,
    /// One past the highest byte addressed.
    pub end: u64,
    /// The last record's time, ns (0 without times).
    pub duration: Ns,
    /// Whether records carry times.
    pub timed: bool,
}

/// Read the trace at `path` once, checking every line. A trace scanned
/// before, unchanged since (same length and modification time), is not
/// read again: `plan` and `sweep` parse one workload many times.
pub fn scan(path: &Path, opts: &Options) -> Result<Extent, TraceError> {
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};
    type Key = (
        std::path::PathBuf,
        String,
        u64,
        Option<std::time::SystemTime>,
    );
    static SEEN: OnceLock<Mutex<HashMap<Key, Extent>>> = OnceLock::new();
    /// Scans remembered; past this the memo starts again (bounded memory).
    const MEMO: usize = 256;
    let meta = std::fs::metadata(path).ok();
    let key = meta.map(|m| {
        let o = format!("{:?}/{:?}/{:?}", opts.format, opts.device, opts.event);
        (path.to_path_buf(), o, m.len(), m.modified().ok())
    });
    let memo = SEEN.get_or_init(Default::default);
    if let Some(k) = &key {
        if let Some(x) = memo.lock().unwrap_or_else(|e| e.into_inner()).get(k) {
            return Ok(x.clone());
        }
    }
    let mut r = open(path, opts.clone())?;
    let x = scan_reader(&mut r)?;
    if let Some(k) = key {
        let mut m = memo.lock().unwrap_or_else(|e| e.into_inner());
        if m.len() >= MEMO {
            m.clear();
        }
        m.insert(k, x.clone());
    }
    Ok(x)
}

/// Read `r` to its end, checking every line.
pub fn scan_reader<R: BufRead>(r: &mut Reader<R>) -> Result<Extent, TraceError> {
    let mut x = Extent {
        format: r.format(),
        records: 0,
        reads: 0,
        writes: 0,
        bytes: 0,
        max_len: 0,
        end: 0,
        duration: 0,
        timed: false,
    };
    for rec in r.by_ref() {
        let rec = rec?;
        x.records += 1;
        match rec.op {
            Op::Read => x.reads += 1,
            Op::Write => x.writes += 1,
            Op::Trim | Op::Flush => {}
        }
        if matches!(rec.op, Op::Read | Op::Write) {
            x.bytes += rec.len;
        }
        x.max_len = x.max_len.max(rec.len);
        x.end = x.end.max(rec.offset + rec.len);
        if let Some(t) = rec.at {
            x.timed = true;
            x.duration = x.duration.max(t);
        }
    }
    x.format = r.format();
    if x.reads + x.writes == 0 {
        return Err(r.err("file", "no reads or writes to replay (check trace_device)"));
    }
    Ok(x)
}

/// A reader of in-memory text (tests, fuzzing).
pub fn from_text(text: &str, opts: Options) -> Result<Reader<&[u8]>, TraceError> {
    Reader::new(text.as_bytes(), "<text>", opts)
}

/// Count the bytes of `src` (the floor a parser's speed is compared with).
pub fn read_all<R: Read>(mut src: R) -> std::io::Result<u64> {
    let mut buf = vec![0u8; 1 << 16];
    let mut n = 0u64;
    loop {
        match src.read(&mut buf)? {
            0 => return Ok(n),
            k => n += k as u64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Read `bytes` as `format` (or detected) to the end: every record
    /// within the bounds, every error on a line, nothing panics.
    fn fuzz_one(bytes: &[u8], format: Option<Format>) -> Result<(), TestCaseError> {
        let opts = Options {
            format,
            ..Options::default()
        };
        if let Ok(r) = Reader::new(bytes, "fuzz", opts) {
            for rec in r.take(1000) {
                match rec {
                    Ok(rec) => {
                        prop_assert!(rec.len <= MAX_IO);
                        prop_assert!(rec.offset.checked_add(rec.len).is_some());
                    }
                    Err(e) => prop_assert!(e.line >= 1),
                }
            }
        }
        Ok(())
    }

    /// One fuzz target per reader: arbitrary bytes after the format's own
    /// first line, read as that format.
    macro_rules! fuzz_reader {
        ($($name:ident: $format:expr, $head:expr;)*) => {$(
            proptest! {
                #![proptest_config(ProptestConfig::with_cases(300))]
                #[test]
                fn $name(
                    bytes in proptest::collection::vec(any::<u8>(), 0..400),
                    text in "[0-9a-zA-Z,.+ \\n-]{0,300}",
                ) {
                    let mut input = $head.as_bytes().to_vec();
                    input.extend_from_slice(text.as_bytes());
                    fuzz_one(&input, Some($format))?;
                    input.extend_from_slice(&bytes);
                    fuzz_one(&input, Some($format))?;
                }
            }
        )*};
    }

    fuzz_reader! {
        fuzz_iolog2: Format::IologV2, "fio version 2 iolog\n";
        fuzz_iolog3: Format::IologV3, "fio version 3 iolog\n";
        fuzz_blkparse: Format::Blkparse, "  8,0    1        1     0.000000000  1  Q   W 8 + 8 [x]\n";
        fuzz_msr: Format::Msr, "1,h,0,Read,0,4096,1\n";
        fuzz_alibaba: Format::Alibaba, "0,R,0,4096,1\n";
        fuzz_tencent: Format::Tencent, "1,0,8,0,1\n";
        fuzz_spc: Format::Spc, "0,0,4096,r,0.1\n";
    }

    fn all(text: &str, opts: Options) -> Result<Vec<Record>, TraceError> {
        from_text(text, opts)?.collect()
    }

    #[test]
    fn times_count_from_the_first_record() {
        let t = "fio version 3 iolog\n100 f add\n100 f open\n150 f read 0 4096\n400 f write 4096 4096\n";
        let r = all(t, Options::default()).unwrap();
        assert_eq!(r.len(), 2);
        assert_eq!(r[0].at, Some(0));
        assert_eq!(r[1].at, Some(250_000));
    }

    #[test]
    fn a_log_as_fio_writes_it_with_large_trims() {
        // The shape of fio's trim-then-write logs: trims far larger than
        // any read or write, file actions stamped too.
        let t = "fio version 3 iolog\n20 /dev/null add\n9000 /dev/null open\n\
                 9005 /dev/null trim 0 2147483648\n9020 /dev/null write 0 4096\n\
                 9050 /dev/null trim 4096 2147483648\n9051 /dev/null write 4096 4096\n";
        let r = all(t, Options::default()).unwrap();
        assert_eq!(r.len(), 4);
        assert_eq!((r[0].op, r[0].len, r[0].at), (Op::Trim, 2 << 30, Some(0)));
        assert_eq!((r[3].op, r[3].at), (Op::Write, Some(46_000)));
    }

    #[test]
    fn v2_waits_hold_later_ios() {
        let t = "fio version 2 iolog\nf add\nf open\nf read 0 4096\nf wait 5 0\nf write 0 4096\n";
        let r = all(t, Options::default()).unwrap();
        assert_eq!(r[0].at, None);
        assert_eq!(r[1].at, Some(5_000_000));
    }

    #[test]
    fn device_filter_and_headers() {
        let t = "Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime\n\
                 10,h,0,Read,0,4096,1\n20,h,1,Write,4096,512,1\n30,h,0,Write,8192,4096,1\n";
        let o = Options {
            device: Some("0".into()),
            ..Options::default()
        };
        let r = all(t, o).unwrap();
        assert_eq!(r.len(), 2);
        assert_eq!(r[1].at, Some(2_000));
    }

    #[test]
    fn errors_name_file_line_and_field() {
        let e = all("0,R,0,4096,1\n0,R,zz,4096,2\n", Options::default()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "<text>:2: offset: 'zz' is not a whole number"
        );
        let e = all("hello\n", Options::default()).unwrap_err();
        assert_eq!((e.line, e.field.as_str()), (1, "format"));
        let e = all("0,R,0,134217728,1\n", Options::default()).unwrap_err();
        assert_eq!(e.field, "length");
        let long = format!("0,R,0,4096,1\n{}\n", "9".repeat(MAX_LINE + 10));
        let e = all(&long, Options::default()).unwrap_err();
        assert_eq!((e.line, e.field.as_str()), (2, "line"));
    }

    #[test]
    fn scan_sizes_the_trace() {
        let mut r = from_text("0,W,8192,4096,10\n0,R,0,65536,30\n", Options::default()).unwrap();
        let x = scan_reader(&mut r).unwrap();
        assert_eq!(
            (x.records, x.max_len, x.end, x.duration),
            (2, 65536, 65536, 20_000)
        );
        assert_eq!(x.format, Format::Alibaba);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(600))]
        /// Any bytes, detected: records or one error, never a panic.
        #[test]
        fn arbitrary_input_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
            fuzz_one(&bytes, None)?;
        }

        /// Lines built from each format's own fields, with fields swapped
        /// for junk: a record or an error naming a line, never a panic.
        #[test]
        fn near_valid_lines_never_panic(
            i in 0usize..7,
            a in 0u64..u64::MAX, b in 0u64..(1u64 << 30), t in 0u64..u64::MAX,
            junk in "[ -~]{0,12}", which in 0usize..6,
        ) {
            let mut fs = match Format::ALL[i] {
                Format::IologV2 => vec!["f".to_string(), "write".into(), a.to_string(), b.to_string()],
                Format::IologV3 => vec![t.to_string(), "f".into(), "read".into(), a.to_string(), b.to_string()],
                Format::Blkparse => vec!["8,0".into(), "1".into(), "2".into(), format!("{}.{}", t % 1000, b), "9".into(), "Q".into(), "W".into(), a.to_string(), "+".into(), b.to_string()],
                Format::Msr => vec![t.to_string(), "h".into(), "0".into(), "Read".into(), a.to_string(), b.to_string(), "1".into()],
                Format::Alibaba => vec!["1".into(), "W".into(), a.to_string(), b.to_string(), t.to_string()],
                Format::Tencent => vec![t.to_string(), a.to_string(), b.to_string(), "1".into(), "7".into()],
                Format::Spc => vec!["0".into(), a.to_string(), b.to_string(), "r".into(), format!("{}.5", t % 100000)],
            };
            let k = which % fs.len();
            fs[k] = junk;
            let sep = if matches!(Format::ALL[i], Format::IologV2 | Format::IologV3 | Format::Blkparse) { " " } else { "," };
            let head = match Format::ALL[i] { Format::IologV2 => "fio version 2 iolog\n", Format::IologV3 => "fio version 3 iolog\n", _ => "" };
            let text = format!("{head}{}\n", fs.join(sep));
            let opts = Options { format: Some(Format::ALL[i]), ..Options::default() };
            if let Ok(r) = from_text(&text, opts) {
                for rec in r.flatten() {
                    prop_assert!(rec.offset.checked_add(rec.len).is_some());
                }
            }
        }
    }
}
