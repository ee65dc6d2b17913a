//! One line of each trace format, parsed into a [`Raw`] record.
//!
//! Every parser takes one line (its end-of-line removed) and gives either a
//! record, nothing (a line the format defines but that carries no I/O: a
//! file action, a blkparse event other than the one replayed), or a
//! [`Bad`] naming the field at fault. Units are converted here, so that a
//! [`Raw`] is in bytes; its time is in the format's own clock, converted by
//! [`Format::tick_ns`].

use super::{Format, Op};

/// One parsed line, before its time is made relative to the trace's start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Raw<'a> {
    /// Time in the format's ticks ([`Format::tick_ns`]), if the line has one.
    pub time: Option<u64>,
    /// What it does.
    pub op: Op,
    /// Byte offset.
    pub offset: u64,
    /// Length in bytes.
    pub len: u64,
    /// The device, file, volume or ASU it addresses, as written.
    pub device: &'a str,
}

/// A field that does not parse: its name and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Bad {
    pub field: &'static str,
    pub msg: String,
}

/// What one line gives.
pub(super) enum Line<'a> {
    /// An I/O.
    Io(Raw<'a>),
    /// fio v2's `wait`: I/Os after it go no earlier than this many ms
    /// after the start.
    Wait(u64),
    /// A line with nothing to replay.
    Skip,
    /// The end of the events (blkparse's closing summary).
    End,
}

type Parsed<'a> = Result<Line<'a>, Bad>;

fn bad<T>(field: &'static str, msg: impl Into<String>) -> Result<T, Bad> {
    Err(Bad {
        field,
        msg: msg.into(),
    })
}

/// A whole number field.
fn num(field: &'static str, v: &str) -> Result<u64, Bad> {
    v.trim()
        .parse::<u64>()
        .or_else(|_| bad(field, format!("'{v}' is not a whole number")))
}

/// `SECONDS[.FRACTION]` as nanoseconds, exactly (no float rounding).
pub(super) fn seconds_ns(field: &'static str, v: &str) -> Result<u64, Bad> {
    let v = v.trim();
    let (s, f) = v.split_once('.').unwrap_or((v, ""));
    let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
    if !digits(s) || !(f.is_empty() || digits(f)) {
        return bad(field, format!("'{v}' is not a time in seconds"));
    }
    let whole: u64 = s
        .parse()
        .or_else(|_| bad(field, format!("'{v}' is too large")))?;
    // Nanoseconds from the first nine digits of the fraction.
    let mut frac = 0u64;
    for i in 0..9 {
        let d = f.as_bytes().get(i).map_or(0, |b| u64::from(b - b'0'));
        frac = frac * 10 + d;
    }
    whole
        .checked_mul(1_000_000_000)
        .and_then(|n| n.checked_add(frac))
        .ok_or_else(|| Bad {
            field,
            msg: format!("'{v}' is too large"),
        })
}

/// Bytes from a count of 512-byte sectors.
fn sectors(field: &'static str, v: &str) -> Result<u64, Bad> {
    num(field, v)?.checked_mul(512).ok_or_else(|| Bad {
        field,
        msg: format!("'{v}' sectors overflow a 64-bit byte offset"),
    })
}

/// Split a CSV line into exactly `N` fields.
fn fields<'a, const N: usize>(line: &'a str, names: &str) -> Result<[&'a str; N], Bad> {
    let mut out = [""; N];
    let mut it = line.split(',');
    for slot in out.iter_mut() {
        match it.next() {
            Some(f) => *slot = f.trim(),
            None => return bad("line", format!("expected {N} fields ({names})")),
        }
    }
    if it.next().is_some() {
        return bad("line", format!("expected {N} fields ({names})"));
    }
    Ok(out)
}

impl Format {
    /// Parse one line of this format. `event` is blkparse's action to
    /// replay (`Q` or `D`).
    pub(super) fn parse<'a>(self, line: &'a str, event: &str) -> Parsed<'a> {
        match self {
            Format::IologV2 => iolog(line, false),
            Format::IologV3 => iolog(line, true),
            Format::Blkparse => blkparse(line, event),
            Format::Msr => msr(line),
            Format::Alibaba => alibaba(line),
            Format::Tencent => tencent(line),
            Format::Spc => spc(line),
        }
    }
}

/// fio's iolog, version 2 (`FILE ACTION [OFFSET LENGTH]`) or 3 (a time in
/// µs since the log's start first), as fio's `read_iolog` reads it.
fn iolog(line: &str, timed: bool) -> Parsed<'_> {
    let mut it = line.split_whitespace();
    let time = if timed {
        match it.next() {
            Some(t) => Some(num("time", t)?),
            None => return bad("time", "missing"),
        }
    } else {
        None
    };
    let (Some(file), Some(act)) = (it.next(), it.next()) else {
        return bad("action", "expected FILE ACTION [OFFSET LENGTH]");
    };
    let rest: Vec<&str> = it.collect();
    let op = match act {
        "add" | "open" | "close" if rest.is_empty() => return Ok(Line::Skip),
        "read" => Op::Read,
        "write" => Op::Write,
        "trim" => Op::Trim,
        "sync" | "datasync" => Op::Flush,
        // v2 only: `FILE wait DELAY 0`, DELAY in ms since the job started
        // (fio's read_iolog_get sleeps until mtime_since_genesis reaches it).
        "wait" if !timed && rest.len() == 2 => return Ok(Line::Wait(num("delay", rest[0])?)),
        "wait" if timed => return Ok(Line::Skip), // fio ignores wait in v3
        other => {
            return bad(
                "action",
                format!(
                    "'{other}' is not add, open, close, read, write, trim, sync, datasync or wait"
                ),
            )
        }
    };
    let [o, l] = rest[..] else {
        return bad("offset", "expected OFFSET LENGTH after the action");
    };
    Ok(Line::Io(Raw {
        time,
        op,
        offset: num("offset", o)?,
        len: num("length", l)?,
        device: file,
    }))
}

/// blkparse's default output: `MAJ,MIN CPU SEQ SECONDS.NANOS PID ACTION
/// RWBS [SECTOR + COUNT] [PROCESS]`.
fn blkparse<'a>(line: &'a str, event: &str) -> Parsed<'a> {
    let t = line.trim_start();
    if t.starts_with("CPU") || t.starts_with("Total") {
        return Ok(Line::End);
    }
    let f: Vec<&str> = t.split_whitespace().take(10).collect();
    if f.len() < 7 {
        return bad("line", "expected DEV CPU SEQ TIME PID ACTION RWBS");
    }
    if !f[0].contains(',') {
        return bad("device", format!("'{}' is not MAJOR,MINOR", f[0]));
    }
    let time = seconds_ns("time", f[3])?;
    if f[5] != event {
        return Ok(Line::Skip);
    }
    let rwbs = f[6];
    let extent = match (f.get(7), f.get(8), f.get(9)) {
        (Some(s), Some(&"+"), Some(n)) => Some((sectors("sector", s)?, sectors("count", n)?)),
        _ => None,
    };
    let op = if rwbs.contains('D') {
        Op::Trim
    } else if extent.is_none_or(|(_, n)| n == 0) {
        if rwbs.starts_with('F') {
            Op::Flush
        } else {
            return Ok(Line::Skip); // no data moved (RWBS 'N', a bare barrier)
        }
    } else if rwbs.contains('W') {
        Op::Write
    } else if rwbs.contains('R') {
        Op::Read
    } else {
        return bad(
            "rwbs",
            format!("'{rwbs}' is neither a read, a write nor a discard"),
        );
    };
    let (offset, len) = extent.unwrap_or((0, 0));
    Ok(Line::Io(Raw {
        time: Some(time),
        op,
        offset,
        len,
        device: f[0],
    }))
}

/// Read or write by a word or letter.
fn direction(field: &'static str, v: &str, read: &[&str], write: &[&str]) -> Result<Op, Bad> {
    if read.contains(&v) {
        Ok(Op::Read)
    } else if write.contains(&v) {
        Ok(Op::Write)
    } else {
        bad(field, format!("'{v}' is not {} or {}", read[0], write[0]))
    }
}

/// MSR Cambridge (SNIA IOTTA): `Timestamp,Hostname,DiskNumber,Type,Offset,
/// Size,ResponseTime`, time in Windows filetime ticks (100 ns), bytes.
fn msr(line: &str) -> Parsed<'_> {
    let [ts, _host, disk, ty, off, size, _resp] = fields::<7>(
        line,
        "Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime",
    )?;
    Ok(Line::Io(Raw {
        time: Some(num("Timestamp", ts)?),
        op: direction("Type", ty, &["Read", "read"], &["Write", "write"])?,
        offset: num("Offset", off)?,
        len: num("Size", size)?,
        device: disk,
    }))
}

/// Alibaba block traces: `device_id,opcode,offset,length,timestamp`,
/// bytes, time in µs.
fn alibaba(line: &str) -> Parsed<'_> {
    let [dev, op, off, len, ts] = fields::<5>(line, "device_id,opcode,offset,length,timestamp")?;
    Ok(Line::Io(Raw {
        time: Some(num("timestamp", ts)?),
        op: direction("opcode", op, &["R", "r"], &["W", "w"])?,
        offset: num("offset", off)?,
        len: num("length", len)?,
        device: dev,
    }))
}

/// Tencent CBS: `Timestamp,Offset,Size,IOType,VolumeID`, time in seconds,
/// offset and size in 512-byte sectors, IOType 0 read and 1 write.
fn tencent(line: &str) -> Parsed<'_> {
    let [ts, off, size, ty, vol] = fields::<5>(line, "Timestamp,Offset,Size,IOType,VolumeID")?;
    Ok(Line::Io(Raw {
        time: Some(num("Timestamp", ts)?),
        op: direction("IOType", ty, &["0"], &["1"])?,
        offset: sectors("Offset", off)?,
        len: sectors("Size", size)?,
        device: vol,
    }))
}

/// SPC / UMass: `ASU,LBA,Size,Opcode,Timestamp`, LBA in 512-byte blocks,
/// size in bytes, time in seconds with a fraction.
fn spc(line: &str) -> Parsed<'_> {
    let [asu, lba, size, op, ts] = fields::<5>(line, "ASU,LBA,Size,Opcode,Timestamp")?;
    Ok(Line::Io(Raw {
        time: Some(seconds_ns("Timestamp", ts)?),
        op: direction("Opcode", op, &["r", "R"], &["w", "W"])?,
        offset: sectors("LBA", lba)?,
        len: num("Size", size)?,
        device: asu,
    }))
}

/// The format a line looks like, if any (detection by content).
pub(super) fn looks_like(line: &str) -> Option<Format> {
    let t = line.trim();
    if t.starts_with("fio version 2 iolog") {
        return Some(Format::IologV2);
    }
    if t.starts_with("fio version 3 iolog") {
        return Some(Format::IologV3);
    }
    let ws: Vec<&str> = t.split_whitespace().take(8).collect();
    if ws.len() >= 7
        && ws[0]
            .split_once(',')
            .is_some_and(|(a, b)| is_num(a) && is_num(b))
        && seconds_ns("time", ws[3]).is_ok()
    {
        return Some(Format::Blkparse);
    }
    let cs: Vec<&str> = t.split(',').map(str::trim).collect();
    match cs.len() {
        7 if is_num(cs[0]) && matches!(cs[3], "Read" | "Write" | "read" | "write") => {
            Some(Format::Msr)
        }
        5 if matches!(cs[1], "R" | "W" | "r" | "w") && is_num(cs[4]) => Some(Format::Alibaba),
        5 if matches!(cs[3], "R" | "W" | "r" | "w") && seconds_ns("t", cs[4]).is_ok() => {
            Some(Format::Spc)
        }
        5 if matches!(cs[3], "0" | "1") && cs.iter().all(|f| is_num(f)) => Some(Format::Tencent),
        _ => None,
    }
}

/// Whether a CSV line is a format's column header (skipped).
pub(super) fn is_header(f: Format, line: &str) -> bool {
    let first = line
        .split(',')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    match f {
        Format::Msr | Format::Tencent => first == "timestamp",
        Format::Alibaba => first == "device_id",
        Format::Spc => first == "asu",
        _ => false,
    }
}

fn is_num(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn io(f: Format, line: &str) -> Raw<'_> {
        match f.parse(line, "Q") {
            Ok(Line::Io(r)) => r,
            Ok(_) => panic!("{line}: not an I/O"),
            Err(b) => panic!("{line}: {}: {}", b.field, b.msg),
        }
    }

    #[test]
    fn each_format_converts_its_units_to_bytes() {
        let r = io(Format::IologV3, "1500 /dev/sdb write 8192 4096");
        assert_eq!(
            (r.time, r.op, r.offset, r.len),
            (Some(1500), Op::Write, 8192, 4096)
        );
        let r = io(Format::IologV2, "/dev/sdb read 0 512");
        assert_eq!((r.time, r.op, r.len), (None, Op::Read, 512));
        let r = io(
            Format::Blkparse,
            "  8,0    3        1     0.000001234  697  Q   W 223490 + 8 [kjournald]",
        );
        assert_eq!(
            (r.time, r.op, r.offset, r.len),
            (Some(1234), Op::Write, 223490 * 512, 4096)
        );
        assert_eq!(r.device, "8,0");
        let r = io(
            Format::Msr,
            "128166372003061629,hm,1,Read,3154152960,32768,1307",
        );
        assert_eq!(
            (r.op, r.offset, r.len, r.device),
            (Op::Read, 3154152960, 32768, "1")
        );
        let r = io(Format::Alibaba, "0,W,126703644672,4096,1577808000000213");
        assert_eq!(
            (r.op, r.offset, r.time),
            (Op::Write, 126703644672, Some(1577808000000213))
        );
        let r = io(Format::Tencent, "1538323200,12078082,8,1,1283");
        assert_eq!((r.op, r.offset, r.len), (Op::Write, 12078082 * 512, 4096));
        let r = io(Format::Spc, "0,20941264,8192,w,0.551706");
        assert_eq!(
            (r.op, r.offset, r.len, r.time),
            (Op::Write, 20941264 * 512, 8192, Some(551_706_000))
        );
    }

    #[test]
    fn blkparse_takes_the_chosen_event_flushes_and_discards() {
        let q = "8,0 1 5 0.5 100 Q FWS [jbd2]";
        assert!(matches!(
            Format::Blkparse.parse(q, "Q"),
            Ok(Line::Io(Raw { op: Op::Flush, .. }))
        ));
        assert!(matches!(Format::Blkparse.parse(q, "D"), Ok(Line::Skip)));
        let d = "8,0 1 6 0.6 100 D DS 2048 + 16 [fstrim]";
        assert!(matches!(
            Format::Blkparse.parse(d, "D"),
            Ok(Line::Io(Raw {
                op: Op::Trim,
                len: 8192,
                ..
            }))
        ));
        assert!(matches!(
            Format::Blkparse.parse("CPU0 (8,0):", "Q"),
            Ok(Line::End)
        ));
    }

    #[test]
    fn a_bad_field_is_named() {
        let e = Format::Msr.parse("1,h,1,Read,x,4096,1", "Q").err().unwrap();
        assert_eq!(e.field, "Offset");
        let e = Format::Spc.parse("0,1,2,Q,0.1", "Q").err().unwrap();
        assert_eq!(e.field, "Opcode");
        let e = Format::IologV3.parse("12 f write 5", "Q").err().unwrap();
        assert_eq!(e.field, "offset");
        let e = Format::Tencent.parse("1,2,3", "Q").err().unwrap();
        assert_eq!(e.field, "line");
    }

    #[test]
    fn detection_tells_the_formats_apart() {
        let cases = [
            ("fio version 2 iolog", Format::IologV2),
            ("fio version 3 iolog", Format::IologV3),
            (
                "  8,0    3        1     0.000000000  697  Q   W 223490 + 8 [x]",
                Format::Blkparse,
            ),
            (
                "128166372003061629,hm,1,Read,3154152960,32768,1307",
                Format::Msr,
            ),
            ("0,R,126703644672,4096,1577808000000213", Format::Alibaba),
            ("1538323200,12078082,8,1,1283", Format::Tencent),
            ("0,20941264,8192,W,0.551706", Format::Spc),
        ];
        for (line, f) in cases {
            assert_eq!(looks_like(line), Some(f), "{line}");
        }
        assert_eq!(looks_like("hello, world"), None);
    }

    #[test]
    fn seconds_are_exact() {
        assert_eq!(seconds_ns("t", "12.5").unwrap(), 12_500_000_000);
        assert_eq!(seconds_ns("t", "0.000000001999").unwrap(), 1);
        assert!(seconds_ns("t", "1e3").is_err());
        assert!(seconds_ns("t", "99999999999999999999").is_err());
    }
}
