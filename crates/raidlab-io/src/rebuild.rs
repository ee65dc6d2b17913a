//! Rebuilding replacement members, as md's recovery does after
//! `mdadm --add`: every chunk a replacement holds is computed from the
//! rest of its array — the data read through the degraded array (which
//! reconstructs what the replacement should hold) and, for parity chunks,
//! P and Q computed from the stripe's data — and written to the
//! replacement alone. A rate limit paces it as md's `speed_limit_max`
//! does.

use crate::backend::block_on;
use crate::backend::{Backend, Members};
use crate::buf::ABuf;
use crate::exec::{Exec, VNode, Vol};
use raidlab_layout::{gf, Geometry, Level};
use std::io;
use std::time::{Duration, Instant};

/// What a rebuild moves and how fast it may go.
pub(crate) struct Pace<'p> {
    /// Bytes per second at most (`None`: as fast as the members go).
    pub max_rate: Option<f64>,
    /// Called with (bytes done, bytes in all).
    pub progress: &'p dyn Fn(u64, u64),
}

/// Where a rebuild starts and how it records its progress, as md's
/// recovery does with `recovery_offset`.
pub(crate) struct Resume<'r> {
    /// Replacements a stopped rebuild left part-way: (member, bytes of its
    /// data already rebuilt).
    pub from: &'r [(usize, u64)],
    /// Records that a member's first bytes are rebuilt (its data written;
    /// the recorder makes them durable first).
    pub record: &'r dyn Fn(usize, u64) -> io::Result<()>,
}

impl Resume<'_> {
    /// Nothing to resume, nothing recorded (spares rebuilt within a run).
    pub fn none() -> Resume<'static> {
        Resume {
            from: &[],
            record: &|_, _| Ok(()),
        }
    }
}

/// md records a recovery's progress every 1/16 of the device
/// (`md_do_sync`: `max_sectors >> 4`); raidlab also at most every 256 MiB,
/// so a large member loses little to a crash.
const RECORD_FRACTION: u64 = 16;
/// At most this many bytes between two records of progress.
const RECORD_MAX: u64 = 256 << 20;
/// ... or this much time.
const RECORD_PERIOD: Duration = Duration::from_secs(5);

/// A replacement: its array node, its slot, its own node, its member.
struct Target {
    array: usize,
    slot: usize,
    node: usize,
    member: usize,
}

/// Rebuild every member in `replace` from the rest of its array, each from
/// where `resume` says it was left; returns the bytes written.
pub(crate) fn rebuild(
    vol: &Vol,
    members: &Members,
    replace: &[usize],
    pace: &Pace<'_>,
    resume: &Resume<'_>,
) -> io::Result<u64> {
    let degraded = vol.failing(replace);
    let targets = targets(vol, replace)?;
    let start_of = |t: &Target| {
        let chunk = geometry(vol, t.array).chunk();
        resume
            .from
            .iter()
            .find(|(m, _)| *m == t.member)
            .map_or(0, |(_, b)| b / chunk * chunk)
    };
    let total: u64 = targets
        .iter()
        .map(|t| {
            geometry(vol, t.array)
                .member_size()
                .saturating_sub(start_of(t))
        })
        .sum();
    let be = Backend::psync(members);
    let reader = Exec {
        vol: &degraded,
        be: &be,
        mirror_turn: std::cell::Cell::new(0),
        spares: Default::default(),
    };
    let writer = Exec {
        vol,
        be: &be,
        mirror_turn: std::cell::Cell::new(0),
        spares: Default::default(),
    };
    let start = Instant::now();
    let mut done = 0;
    for t in &targets {
        let geo = geometry(vol, t.array);
        let every = (geo.member_size() / RECORD_FRACTION).clamp(geo.chunk(), RECORD_MAX);
        let mut row = ABuf::zeroed((geo.chunk() * geo.data_disks().max(1) as u64) as usize);
        let mut out = ABuf::zeroed(geo.chunk() as usize);
        let mut off = start_of(t);
        let (mut recorded, mut recorded_at) = (off, Instant::now());
        while off < geo.member_size() {
            let len = geo.chunk().min(geo.member_size() - off) as usize;
            content(&reader, geo, t, off, &mut row, &mut out[..len])?;
            block_on(&be, writer.write(t.node, off, &out[..len]))?;
            off += len as u64;
            done += len as u64;
            (pace.progress)(done, total);
            if off < geo.member_size()
                && (off - recorded >= every || recorded_at.elapsed() >= RECORD_PERIOD)
            {
                (resume.record)(t.member, off)?;
                (recorded, recorded_at) = (off, Instant::now());
            }
            hold_to_rate(pace.max_rate, done, start);
        }
    }
    for t in &targets {
        block_on(&be, writer.flush(t.node))?;
    }
    Ok(done)
}

/// Sleep until `done` bytes since `start` are within `max_rate` (bytes
/// per second), if one is set: md's `speed_limit_max`.
fn hold_to_rate(max_rate: Option<f64>, done: u64, start: Instant) {
    if let Some(rate) = max_rate {
        let due = Duration::from_secs_f64(done as f64 / rate);
        if let Some(wait) = due.checked_sub(start.elapsed()) {
            std::thread::sleep(wait);
        }
    }
}

fn geometry(vol: &Vol, n: usize) -> &Geometry {
    match &vol.nodes[n] {
        VNode::Array { geo, .. } => geo,
        _ => unreachable!("targets name array nodes"),
    }
}

/// Each replacement's array and slot; only arrays with redundancy can
/// rebuild a member.
fn targets(vol: &Vol, replace: &[usize]) -> io::Result<Vec<Target>> {
    let mut out = Vec::new();
    for (array, node) in vol.nodes.iter().enumerate() {
        let VNode::Array { geo, children, .. } = node else {
            continue;
        };
        for (slot, &c) in children.iter().enumerate() {
            if let VNode::Member { idx, .. } = vol.nodes[c] {
                if !replace.contains(&idx) {
                    continue;
                }
                if matches!(geo.level(), Level::Raid0 | Level::Concat) {
                    return Err(io::Error::other(format!(
                        "a member of {} holds the only copy of its data: it cannot be rebuilt",
                        geo.level().word()
                    )));
                }
                out.push(Target {
                    array,
                    slot,
                    node: c,
                    member: idx,
                });
            }
        }
    }
    Ok(out)
}

/// What slot `t.slot` of its array holds at member offset `off`: read
/// through the degraded array, parity computed from the stripe's data.
fn content(
    reader: &Exec<'_, '_>,
    geo: &Geometry,
    t: &Target,
    off: u64,
    row: &mut [u8],
    out: &mut [u8],
) -> io::Result<()> {
    let c = geo.chunk();
    let read = |at: u64, buf: &mut [u8]| block_on(reader.be, reader.read(t.array, at, buf));
    match geo.level() {
        Level::Raid1 => read(off, out),
        // The volume bytes this chunk holds a copy of, read from the
        // surviving copy; a chunk no data lives in (the end of a member
        // the layout leaves unused) is written as zeros.
        Level::Raid10 => match geo.held(t.slot, off) {
            Some(v) => read(v, out),
            None => {
                out.fill(0);
                Ok(())
            }
        },
        Level::Raid4 | Level::Raid5 | Level::Raid6 => {
            let s = off / c;
            let dd = geo.data_disks();
            read(s * dd as u64 * c, row)?;
            let (pd, qd) = geo.parity_of(s);
            if let Some(k) = (0..dd).find(|&k| geo.data_member(s, k) == t.slot) {
                out.copy_from_slice(&row[k * c as usize..(k + 1) * c as usize]);
                return Ok(());
            }
            let mut data: Vec<&[u8]> = vec![&[]; dd];
            for k in 0..dd {
                let m = geo.data_member(s, k);
                let i = if geo.level() == Level::Raid6 {
                    geo.q_index(s, m)
                } else {
                    k
                };
                data[i] = &row[k * c as usize..(k + 1) * c as usize];
            }
            let mut other = vec![0u8; c as usize];
            if t.slot == pd {
                gf::gen_pq(&data, out, &mut other);
            } else {
                debug_assert_eq!(Some(t.slot), qd);
                gf::gen_pq(&data, &mut other, out);
            }
            Ok(())
        }
        Level::Raid0 | Level::Concat => unreachable!("refused in targets"),
    }
}
