//! The real engine's commands besides `run`: `check`/`repair`, `create`,
//! `rebuild`, the fio job of a workload, and the checks a sweep runs first.

use crate::backend::EngineKind;
use crate::error::{Error, ErrorKind};
pub use crate::lifecycle::CreateReport;
use crate::lifecycle::{
    assemble_arrays, check_aliases, create_made, create_replacements, data_areas, device_size,
    needed_leaf_size, needs_array, open_members, resync_if_dirty, Arrays, OpenMode,
};
use crate::options::RunOptions;
use crate::safety::{self, Access, Guard};
use crate::topo::{self, RealTopology};
use crate::{exec, md, meta};
use raidlab_core::workload::{Rw, Workload};
use std::fs::File;
use std::time::Instant;

/// Check that real runs made one after another on the same paths can all
/// run: a member file that does not exist is created by the first run that
/// names it, at the size that run needs, so a later run that needs more (or
/// an existing file smaller than a run needs) would fail midway; and a
/// later run that puts a path in another array (another level, chunk,
/// layout, member count or slot) would find metadata it must refuse, unless
/// `create` makes every run's arrays anew. Returns the index of the first
/// run that would fail, and why.
pub fn check_sequence(runs: &[(&str, &Workload)], create: bool) -> Result<(), (usize, Error)> {
    use std::collections::HashMap;
    // Path -> (bytes it will hold, run that decided it or None if it exists).
    let mut held: HashMap<std::path::PathBuf, (u64, Option<usize>)> = HashMap::new();
    // Path -> (array shape, slot path, first run that put it there).
    let mut placed: HashMap<std::path::PathBuf, (u64, Vec<u16>, usize)> = HashMap::new();
    for (i, (expr, w)) in runs.iter().enumerate() {
        let topo = topo::parse_real(expr).map_err(|e| (i, e))?;
        for leaf in meta::leaves(&topo.root) {
            let path = &topo.members[leaf.member].path;
            let (shape, slot, first) =
                placed
                    .entry(path.clone())
                    .or_insert((topo.shape, leaf.path.clone(), i));
            if !create && (*shape != topo.shape || *slot != leaf.path) {
                return Err((
                    i,
                    Error::new(
                        ErrorKind::Refused,
                        format!(
                            "{} is a member of another array in run {first} than in this run: a real sweep whose arrays change needs --create, which creates each run's arrays anew",
                            path.display()
                        ),
                    ),
                ));
            }
        }
        let mut needed = Vec::new();
        if let Some(span) = w.bytes_needed() {
            needed_leaf_size(&topo.root, span, &mut needed);
        }
        for (j, m) in topo.members.iter().enumerate() {
            let need = m
                .size
                .or_else(|| needed.iter().find(|(k, _)| *k == j).map(|(_, s)| *s));
            let existing = std::fs::metadata(&m.path).ok();
            if existing.as_ref().is_some_and(|md| !md.is_file()) {
                continue; // a block device: its size is checked when it runs
            }
            let Some(need) = need else { continue };
            let (bytes, by) = *held
                .entry(m.path.clone())
                .or_insert_with(|| match existing {
                    Some(md) => (md.len(), None),
                    None => (need, Some(i)),
                });
            if need > bytes {
                let origin = match by {
                    Some(r) => format!("is created by run {r} at {bytes} bytes"),
                    None => format!("holds {bytes} bytes"),
                };
                return Err((
                    i,
                    Error::new(ErrorKind::Size, format!(
                        "{} {origin} but this run needs {need}: order the runs largest size= first, or create the files at the largest size",
                        m.path.display()
                    )),
                ));
            }
        }
    }
    Ok(())
}

/// The size of a file or block device, or `None` when nothing is at `path`.
pub fn member_size(path: &str) -> std::io::Result<Option<u64>> {
    match File::open(path) {
        Ok(f) => device_size(&f).map(Some),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Scrub the arrays of `expr` as md's `check` (`repair` false: read and
/// compare only) or `repair` sync action (rewrite what is wrong); see
/// `scrub.rs`. An array not stopped cleanly is resynchronised by repair and
/// refused by check.
pub fn scrub(expr: &str, repair: bool, force: bool) -> Result<crate::scrub::ScrubReport, Error> {
    let topo: RealTopology = topo::parse_real(expr)?;
    for m in &topo.members {
        if safety::check(
            &m.path,
            Access::from_writes(repair),
            Guard::from_force(force),
        )?
        .is_none()
        {
            return Err(Error::new(
                ErrorKind::Refused,
                format!("{} does not exist", m.path.display()),
            ));
        }
    }
    check_aliases(&topo)?;
    let opts = RunOptions {
        force,
        direct: false,
        ..RunOptions::default()
    };
    let Arrays {
        mut members,
        asm,
        vol,
        ..
    } = assemble_arrays(&topo, Access::from_writes(repair), &opts)?;
    needs_array(&asm, "check")?;
    if asm.dirty && !repair {
        return Err(Error::new(
            ErrorKind::Refused,
            "the array was not stopped cleanly: 'raidlab repair' (or any run with every member) resynchronises it first".to_string(),
        ));
    }
    resync_if_dirty(&topo, &mut members, &vol, &asm, &opts)?;
    let paths: Vec<String> = topo
        .members
        .iter()
        .map(|m| m.path.display().to_string())
        .collect();
    let report = crate::scrub::scrub(&vol, &members, &vol.names(&paths), repair)
        .map_err(|e| Error::io("scrubbing", e))?;
    if repair {
        for f in &members.files {
            f.sync_data()
                .map_err(|e| Error::io("flushing members", e))?;
        }
    }
    Ok(report)
}

/// Create the arrays of `expr` over its members, as `mdadm --create` does:
/// md superblocks (and bitmaps) on every member, then an initial resync
/// that makes parity and copies agree with whatever the members hold, unless
/// `assume_clean` (members known to be zeroed, or data that will be
/// rewritten). Member files that do not exist are created at their
/// `[size=...]`.
pub fn create(expr: &str, assume_clean: bool, force: bool) -> Result<CreateReport, Error> {
    let topo: RealTopology = topo::parse_real(expr)?;
    let mut made = Vec::new();
    let out = create_made(&topo, assume_clean, Guard::from_force(force), &mut made);
    if out.is_err() {
        // A create that failed leaves no member file it made.
        for p in made {
            let _ = std::fs::remove_file(p);
        }
    }
    out
}

/// What `rebuild` did.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RebuildReport {
    /// UUID of the root array.
    pub uuid: String,
    /// The members rebuilt.
    pub rebuilt: Vec<String>,
    /// Bytes written to them.
    pub bytes: u64,
    /// Bytes a stopped rebuild had already recovered (recorded in the
    /// replacements' superblocks), which this one did not rebuild again.
    pub resumed_bytes: u64,
    /// Wall-clock seconds.
    pub seconds: f64,
    /// Event count on the members afterwards.
    pub events: u64,
}

/// Rebuild the blank or stale members of the arrays of `expr` (replacement
/// files or devices) from the rest of their arrays, at most `max_rate`
/// bytes per second; `progress` is told (bytes done, bytes in all). A
/// replacement file that does not exist is created at the size of the
/// largest member. See `rebuild.rs`.
pub fn rebuild(
    expr: &str,
    max_rate: Option<f64>,
    force: bool,
    progress: &dyn Fn(u64, u64),
) -> Result<RebuildReport, Error> {
    let started = Instant::now();
    let topo: RealTopology = topo::parse_real(expr)?;
    create_replacements(&topo, Guard::from_force(force))?;
    check_aliases(&topo)?;
    let (members, sizes, _) = open_members(&topo, OpenMode::writing(Guard::from_force(force)))?;
    let asm = meta::assemble(
        &topo,
        &members.files,
        &sizes,
        meta::Intent::Rebuild { force },
    )?;
    needs_array(&asm, "rebuild")?;
    if asm.dirty && !force {
        return Err(Error::new(
            ErrorKind::Refused,
            "the array was not stopped cleanly: run it once with its current members to resynchronise it before rebuilding (or --force)".to_string(),
        ));
    }
    let vol = exec::Vol::build(&topo.root, &data_areas(&sizes, &asm), &asm.offsets)?;
    let pace = crate::rebuild::Pace { max_rate, progress };
    let used = vol.member_use(sizes.len());
    let record = |m: usize, bytes: u64| asm.write_recovery(&members.files, &sizes, &used, m, bytes);
    let resume = crate::rebuild::Resume {
        from: &asm.resume,
        record: &record,
    };
    let bytes = crate::rebuild::rebuild(&vol, &members, &asm.rebuild, &pace, &resume)
        .map_err(|e| Error::io("rebuilding", e))?;
    let events = asm.events + 1;
    asm.write(&members.files, &sizes, &used, events, true, &[])
        .map_err(|e| Error::io("writing metadata", e))?;
    Ok(RebuildReport {
        uuid: md::uuid_text(&asm.root_uuid),
        rebuilt: asm
            .rebuild
            .iter()
            .map(|&m| topo.members[m].path.display().to_string())
            .collect(),
        bytes,
        resumed_bytes: asm.resume.iter().map(|r| r.1).sum(),
        seconds: started.elapsed().as_secs_f64(),
        events,
    })
}

/// An fio job file equivalent to `w` on `filename` (`raidlab export-fio`).
pub fn fio_job(
    w: &Workload,
    seed: u64,
    filename: Option<&str>,
    engine: EngineKind,
    direct: bool,
) -> String {
    let mut s = String::from("; written by raidlab export-fio\n[global]\n");
    s += &format!("ioengine={}\n", engine.word());
    s += &format!("direct={}\n", u8::from(direct));
    // Where raidlab picks random offsets with replacement, fio must too
    // (no random map); where it keeps one, so does fio by default.
    if !w.uses_random_map() {
        s += "norandommap=1\n";
    }
    s += "randrepeat=0\n";
    s += &format!("randseed={}\n", w.seed.unwrap_or(seed));
    s += "group_reporting=1\n";
    if let Some(f) = filename {
        s += &format!("filename={f}\n");
    }
    // fio applies percentage_random to the rand* patterns only.
    let rw = match (w.rw, w.percentage_random) {
        (Rw::Read, 1..) => "randread",
        (Rw::Write, 1..) => "randwrite",
        (Rw::Rw, 1..) => "randrw",
        (Rw::RandRead, 0) => "read",
        (Rw::RandWrite, 0) => "write",
        (Rw::RandRw, 0) => "rw",
        (r, _) => r.word(),
    };
    // The modifier after `rw=` is a count on a random mode and a size on
    // a sequential one: it goes out only where the mode keeps its kind.
    let postfix = w.sequencer.postfix();
    let kept = rw.starts_with("rand") == w.rw.is_random();
    for (k, v) in w.to_pairs() {
        match k.as_str() {
            "rw" if kept => s += &format!("rw={rw}{postfix}\n"),
            "rw" => {
                s += &format!("rw={rw}\n");
                if !postfix.is_empty() {
                    s += &format!("; rw modifier {postfix} left out: fio reads it as a {} on rw={rw}\n", if w.rw.is_random() { "size" } else { "count" });
                }
            }
            "seq_position" => {
                s += "; seq_position=shared left out: fio keeps one position a direction (IOMeter's shared one has no fio option)\n"
            }
            "percentage_random" if w.percentage_random == 0 || w.percentage_random == 100 => {}
            "norandommap" => {}
            // fio polls with io_uring and pvsync2 only.
            "hipri" if engine != EngineKind::IoUring => {
                s += "; hipri=1 left out: fio polls only with io_uring or pvsync2\n"
            }
            _ => s += &format!("{k}={v}\n"),
        }
    }
    if engine == EngineKind::Psync && w.iodepth > 1 {
        // fio's psync does one I/O at a time per job: it caps iodepth at
        // 1, and raidlab reading the file back does too.
        s += &format!(
            "; iodepth={0}: fio's psync does one I/O at a time and caps it at 1, as raidlab does reading this file; export with --engine io_uring for a queue of {0}\n",
            w.iodepth
        );
    }
    if w.runtime.is_some() {
        s += "time_based=1\n";
    }
    s += "\n[raidlab]\n";
    s
}
