//! fio job files: `[global]` and job sections, read into workloads. Job
//! sections separated by `stonewall` are phases run one after another on
//! the same array, as fio runs them; sections without `stonewall` run
//! side by side within a phase.

use super::{all_keys, fio_long_name, int, kb_base, werr, Rw, Workload, MAX_NUMJOBS};
use crate::error::{Error, Result};
use crate::units::parse_duration;

/// One job section of a job file, with the `[global]` options above it:
/// a phase that fio runs after the ones before it (`stonewall`).
#[derive(Debug, Clone)]
pub struct JobPhase {
    /// The section's name (`[seq-read]`).
    pub name: String,
    /// The workload it runs.
    pub workload: Workload,
    /// What fio would tell its user about it (see [`parse_job_file_noted`]).
    pub notes: Vec<String>,
    /// Whether, and how, the phase checks its data (fio's `verify`).
    pub check: Check,
    /// The job sections fio runs beside this one (those after it without
    /// `stonewall`), in the file's order. They share its `runtime`,
    /// `ramp_time` and drive state, which this one leads.
    pub beside: Vec<JobSection>,
}

/// How a phase checks its data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// No checks (fio without `verify`).
    Off,
    /// fio's `verify`: the data written carries checked headers and reads
    /// check them (`raidlab run --verify`); a job that writes is followed
    /// by its read-back phase (see [`read_back`]).
    Verify,
    /// fio's verify phase of the job before it: its writes read back and
    /// checked.
    ReadBack,
}

impl Check {
    /// fio's `verify` as set for a job section.
    pub fn of(verify: bool) -> Check {
        if verify {
            Check::Verify
        } else {
            Check::Off
        }
    }

    /// Whether the phase checks what it reads (`raidlab run --verify`).
    pub fn verifies(self) -> bool {
        self != Check::Off
    }
}

/// A job section run beside a phase's first: its name and workload.
#[derive(Debug, Clone)]
pub struct JobSection {
    /// The section's name (`[reader]`).
    pub name: String,
    /// The workload it runs.
    pub workload: Workload,
}

impl JobPhase {
    /// Every job section of the phase, its first (`name`, `workload`)
    /// then those beside it.
    pub fn sections(&self) -> impl Iterator<Item = (&str, &Workload)> {
        std::iter::once((self.name.as_str(), &self.workload))
            .chain(self.beside.iter().map(|s| (s.name.as_str(), &s.workload)))
    }

    /// The first section's workload with the drives starting as the
    /// sections together need, where that differs from its own default:
    /// in random-write steady state when any of them writes at random
    /// offsets and none says `state=` (docs/workloads.md, "How SSDs
    /// start"). `None` when its own start serves all.
    pub fn lead_for_all(&self) -> Option<Workload> {
        let steady = crate::topology::SsdState::Steady;
        let needs = self.workload.state.is_none()
            && self.workload.default_ssd_state() != steady
            && self
                .sections()
                .any(|(_, w)| w.default_ssd_state() == steady);
        needs.then(|| Workload {
            state: Some(steady),
            ..self.workload.clone()
        })
    }
}

/// Read a fio job file: `[global]` plus one job section.
pub fn parse_job_file(text: &str) -> Result<Workload> {
    parse_job_file_noted(text).map(|(w, _)| w)
}

/// Read a fio job file as [`parse_job_file`] does, with what fio would
/// tell its user about it: a queue depth capped by a synchronous engine.
/// A file of several job sections, run in turn or side by side, is
/// refused here: see [`parse_job_phases`].
pub fn parse_job_file_noted(text: &str) -> Result<(Workload, Vec<String>)> {
    let mut phases = parse_job_phases(text)?;
    if let Some(p) = phases.iter().find(|p| !p.beside.is_empty()) {
        let names: Vec<String> = p.sections().map(|(n, _)| format!("[{n}]")).collect();
        return werr(format!(
            "the job file runs job sections side by side ({}); `raidlab sim` and `raidlab run` run them, this command takes one",
            names.join(", ")
        ));
    }
    if phases.len() > 1 {
        let names: Vec<String> = phases.iter().map(|p| format!("[{}]", p.name)).collect();
        return werr(format!(
            "the job file has {} job sections run in turn ({}); `raidlab sim` and `raidlab run` run them, this command takes one",
            phases.len(),
            names.join(", ")
        ));
    }
    let p = phases.remove(0);
    Ok((p.workload, p.notes))
}

/// A section of a job file: its name, the line it starts on, and its
/// option lines (line number, text).
struct Section<'a> {
    name: &'a str,
    lno: usize,
    lines: Vec<(usize, &'a str)>,
}

impl Section<'_> {
    fn is_global(&self) -> bool {
        self.name == "global"
    }
}

/// Most job sections a file may have: fio's own examples have a handful;
/// the bound keeps a hostile file from asking for unbounded work.
pub const MAX_PHASES: usize = 64;

/// Cut a job file into its sections, skipping blank and comment lines.
/// As fio's `strip_blank_end` does, a line ends at its first `;` or `#`:
/// `numjobs=4 ; four threads` is `numjobs=4`.
fn sections(text: &str) -> Result<Vec<Section<'_>>> {
    let mut out: Vec<Section> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.split([';', '#']).next().unwrap_or_default().trim();
        if line.is_empty() {
            continue;
        }
        let lno = i + 1;
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            out.push(Section {
                name,
                lno,
                lines: Vec::new(),
            });
            continue;
        }
        match out.last_mut() {
            Some(s) => s.lines.push((lno, line)),
            None => return line_err(lno, "option outside a section"),
        }
    }
    Ok(out)
}

/// Whether an option line sets fio's `stonewall` (or its alias
/// `wait_for_previous`): a bare line or any value but 0.
fn sets_stonewall(line: &str) -> bool {
    let (k, v) = match line.split_once('=') {
        Some((k, v)) => (k.trim(), v.trim()),
        None => (line, ""),
    };
    matches!(k, "stonewall" | "wait_for_previous") && v != "0"
}

/// Longest option line after `${VAR}` substitution: fio's `OPT_LEN_MAX`
/// (parse.h), past which fio refuses the option.
pub const MAX_LINE: usize = 8192;

/// Most text a job file may grow to once `${VAR}` are substituted: 4 MiB,
/// four times the largest job file read (1 MiB), so that many lines each
/// grown to [`MAX_LINE`] cannot ask for gigabytes.
pub const MAX_TEXT: usize = 4 << 20;

/// Substitute `${NAME}` in a job file's text with what `lookup` gives for
/// NAME, as fio's `fio_option_dup_subs` does with the environment: an
/// undefined name becomes nothing, and a `$` not opening `${...}` stays.
/// A line that grows past [`MAX_LINE`] is an error naming it, as is text
/// that grows past [`MAX_TEXT`].
pub fn substitute(text: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Result<String> {
    let mut out = String::with_capacity(text.len());
    for (i, line) in text.split_inclusive('\n').enumerate() {
        let start = out.len();
        let mut rest = line;
        while let Some(at) = rest.find("${") {
            let Some(len) = rest[at + 2..].find('}') else {
                break;
            };
            out += &rest[..at];
            out += &lookup(&rest[at + 2..at + 2 + len]).unwrap_or_default();
            rest = &rest[at + 3 + len..];
            if out.len() - start > MAX_LINE {
                break;
            }
        }
        out += rest;
        if out.len() - start > MAX_LINE {
            return line_err(
                i + 1,
                format!("longer than fio's {MAX_LINE} characters once ${{...}} are substituted"),
            );
        }
        if out.len() > MAX_TEXT {
            return line_err(
                i + 1,
                format!(
                    "the file passes {} MiB once ${{...}} are substituted",
                    MAX_TEXT >> 20
                ),
            );
        }
    }
    Ok(out)
}

/// Read a fio job file into its phases: each job section, with the
/// `[global]` sections above it (fio applies a `[global]` to the jobs
/// after it), is one workload. fio runs job sections side by side unless
/// a section says `stonewall` (wait for the ones before it): a section
/// with it starts a phase, run after the one before on the same array; one
/// without joins the phase before, beside its sections
/// ([`JobPhase::beside`]).
pub fn parse_job_phases(text: &str) -> Result<Vec<JobPhase>> {
    let secs = sections(text)?;
    let jobs: Vec<&Section> = secs.iter().filter(|s| !s.is_global()).collect();
    if jobs.is_empty() {
        return werr("job file has no job section");
    }
    if jobs.len() > MAX_PHASES {
        return line_err(
            jobs[MAX_PHASES].lno,
            format!("more than {MAX_PHASES} job sections"),
        );
    }
    let mut phases = Vec::with_capacity(jobs.len());
    let mut globals: Vec<(usize, &str)> = Vec::new();
    let mut prev: Option<&str> = None;
    for s in &secs {
        if s.is_global() {
            globals.extend(&s.lines);
            continue;
        }
        let lines: Vec<(usize, &str)> = globals.iter().chain(&s.lines).copied().collect();
        let (workload, notes, verify) = read_job(&lines)?;
        if prev.is_some() && !lines.iter().any(|(_, l)| sets_stonewall(l)) {
            let phase = phases.last_mut().expect("a section before this one");
            join_beside(phase, s.lno, s.name, workload, verify)?;
            phase
                .notes
                .extend(notes.into_iter().map(|n| format!("[{}] {n}", s.name)));
            continue;
        }
        if let Some(first) = phases.first().map(|p: &JobPhase| p.workload.state) {
            if workload.state != first {
                return line_err(
                    s.lno,
                    format!(
                        "[{}] sets state= apart from the first job's; state= is how the drives start, before the first phase (give it in [global] or the first job)",
                        s.name
                    ),
                );
            }
        }
        // With verify_backlog the job reads its writes back as it goes,
        // and what is left after them (fio's `do_verify`), itself.
        let back = match verify && workload.writes() && workload.backlog.is_none() {
            true => Some(read_back(s.lno, s.name, &workload)?),
            false => None,
        };
        phases.push(JobPhase {
            name: s.name.to_string(),
            workload,
            notes,
            check: Check::of(verify),
            beside: Vec::new(),
        });
        phases.extend(back);
        prev = Some(s.name);
    }
    Ok(phases)
}

/// Add section `name` (at line `lno`), which fio runs beside `phase`'s,
/// to the phase: it must keep to what the phase's first section sets for
/// all of them (how long they run, the drives' start), and a phase of
/// several sections neither verifies nor replays.
fn join_beside(
    phase: &mut JobPhase,
    lno: usize,
    name: &str,
    w: Workload,
    verify: bool,
) -> Result<()> {
    let first = &phase.workload;
    let clash = |what: &str| {
        line_err(lno, format!(
            "[{name}] runs beside [{}] (no stonewall between them) with {what}; sections side by side share the first's runtime, ramp_time, state= and log_avg_msec (or add stonewall to run [{name}] after)",
            phase.name
        ))
    };
    if w.runtime != first.runtime {
        return clash("a runtime of its own");
    }
    if w.ramp_time != first.ramp_time {
        return clash("a ramp_time of its own");
    }
    if w.state != first.state {
        return clash("a state= of its own");
    }
    if w.log_avg_msec != first.log_avg_msec {
        return clash("a log_avg_msec of its own");
    }
    if phase.check == Check::ReadBack {
        return clash("the verify read-back before it");
    }
    if verify || phase.check.verifies() || w.replay.is_some() || first.replay.is_some() {
        return line_err(lno, format!(
            "[{name}] runs beside [{}] (no stonewall between them); sections side by side neither verify nor replay a trace: add stonewall to run it after",
            phase.name
        ));
    }
    let jobs: u32 = phase.sections().map(|(_, w)| w.numjobs).sum::<u32>() + w.numjobs;
    if jobs > MAX_NUMJOBS {
        return line_err(
            lno,
            format!(
                "the sections beside [{}] run {jobs} jobs together, more than {MAX_NUMJOBS}",
                phase.name
            ),
        );
    }
    phase.beside.push(JobSection {
        name: name.to_string(),
        workload: w,
    });
    Ok(())
}

/// fio options accepted in job files but without effect on the model
/// (they describe how fio itself runs, which raidlab fixes by construction).
const FIO_ACCEPTED: &[&str] = &[
    "name",
    "filename",
    "ioengine",
    "time_based",
    "group_reporting",
    "randrepeat",
    "invalidate",
    "thread",
    "description",
    "stonewall",
    // options.c's alias of `stonewall`.
    "wait_for_previous",
    "new_group",
    // Which seed the other generators take (`allrandrepeat` sets
    // `randrepeat` for all of them): raidlab's draws come from `seed`.
    "allrandrepeat",
    // What fio measures and reports, not what it issues.
    "gtod_reduce",
    "clat_percentiles",
    "lat_percentiles",
    "slat_percentiles",
    "percentile_list",
    "disable_lat",
    "disable_clat",
    "disable_slat",
    "unified_rw_reporting",
    "per_job_logs",
    "disable_bw_measurement",
    "disable_bw",
    "significant_figures",
    "disk_util",
    "cpus_allowed",
    "cpus_allowed_policy",
    // Which generator draws the offsets: raidlab has its own.
    "random_generator",
    // Data contents and file preparation: the drives model neither
    // compression nor deduplication, and raidlab lays out its files whole.
    "refill_buffers",
    "scramble_buffers",
    "overwrite",
    "zero_buffers",
    "buffer_compress_percentage",
    "buffer_compress_chunk",
    "dedupe_percentage",
    "buffer_pattern",
    "create_on_open",
    // Logs fio writes beside its report, and how it reads its clock.
    "write_lat_log",
    "write_bw_log",
    "write_iops_log",
    "write_hist_log",
    "log_hist_msec",
    "log_offset",
    "log_prio",
    "clocksource",
    // The spans fio averages its bandwidth and IOPS samples over, and
    // whether it prints bits or bytes: its report, not its I/O.
    "bwavgtime",
    "iopsavgtime",
    "unit_base",
    // Where fio's threads and buffers live, and what it may open.
    "numa_cpu_nodes",
    "numa_mem_policy",
    "lockmem",
    "allow_mounted_write",
    // Where and how fio allocates its I/O buffers (malloc, shared memory,
    // huge pages, their alignment): host memory the model does not hold.
    "mem",
    "iomem",
    "mem_align",
    "iomem_align",
    "hugepage-size",
    // io_uring set-up that `run` always does: registered files and fixed
    // buffers (raidlab-io's backend).
    "fixedbufs",
    "registerfiles",
    // Where fio makes its files and what it does with them before and
    // after: the topology names the volumes, as for `filename`.
    "directory",
    "unlink",
    "allow_file_create",
    "create_serialize",
    "fallocate",
];

/// What fio does with a job file's workload that raidlab must say: a
/// synchronous engine caps `iodepth` at 1 (applied to `w`), and a
/// `runtime` without `time_based` may end sooner in fio.
fn run_as_fio(w: &mut Workload, engine: Option<&str>, time_based: bool) -> Vec<String> {
    let mut notes = Vec::new();
    let engine = engine.unwrap_or(FIO_DEFAULT_ENGINE);
    if SYNC_ENGINES.contains(&engine) && w.iodepth > 1 && !w.rate.offload {
        notes.push(format!(
            "ioengine={engine} does one I/O at a time: fio caps iodepth={} at 1, and so does raidlab (name an asynchronous engine, e.g. ioengine=io_uring, for a deeper queue)",
            w.iodepth
        ));
        w.iodepth = 1;
    }
    if w.runtime.is_some() && !time_based && w.replay.is_none() {
        let ios = if w.number_ios.is_some() {
            " (or number_ios)"
        } else {
            ""
        };
        notes.push(format!(
            "runtime without time_based: fio stops after one pass over the job's region{ios} if that comes first; raidlab runs for the whole runtime, as with time_based=1",
        ));
    }
    notes
}

/// fio's `nrfiles`: how many files fio makes for a job in its
/// `directory`. One is fio's default and what raidlab does (the topology
/// names the volumes, one file each); more would cut the job's size over
/// several files of one volume, which raidlab does not lay out.
fn one_file(lno: usize, k: &str, v: &str) -> Result<()> {
    match v.parse::<u64>() {
        Ok(1) => Ok(()),
        _ => line_err(lno, format!(
            "{k}={v}: raidlab gives a job one file a volume (the topology names the volumes: list several, e.g. -t 'host(a, b)', for a job over several files)"
        )),
    }
}

/// fio's `startdelay` (a time, seconds unless a unit is given, or a range
/// `A-B` each job draws from): whether it is a range. One delay for every
/// job of the group delays the whole run and changes nothing fio measures
/// (each job's runtime counts from its own start).
fn start_delay_spread(lno: usize, v: &str) -> Result<bool> {
    let ends: Vec<&str> = v.splitn(2, '-').collect();
    if ends.iter().any(|e| parse_duration(e).is_err()) {
        return line_err(
            lno,
            format!("startdelay={v}: expected a time or a range of times (5, 500ms, 1-10)"),
        );
    }
    Ok(ends.len() == 2 && ends[0] != ends[1])
}

/// fio's engines that do one I/O at a time, in the calling thread (those
/// its source flags `FIO_SYNCIO`: engines/sync.c, mmap.c, splice.c,
/// sg.c). fio caps a job on one of them at queue depth 1 whatever its
/// `iodepth` says, unless `io_submit_mode=offload` (backend.c
/// `thread_main`: "queue depth will be capped at 1").
const SYNC_ENGINES: &[&str] = &[
    "sync", "psync", "vsync", "pvsync", "pvsync2", "mmap", "splice", "sg",
];

/// fio's engine when a job file names none: `psync` (fio's HOWTO: the
/// default on every system but Windows).
const FIO_DEFAULT_ENGINE: &str = "psync";

/// fio's verify methods (options.c, `verify`): each writes a header
/// with a checksum of its kind into every block and checks it on reading.
/// raidlab's own header stands for all of them.
const VERIFY_METHODS: &[&str] = &[
    "md5",
    "crc64",
    "crc32",
    "crc32c-intel",
    "crc32c",
    "crc16",
    "crc7",
    "sha1",
    "sha256",
    "sha512",
    "sha3-224",
    "sha3-256",
    "sha3-384",
    "sha3-512",
    "xxhash",
    "meta",
    "pattern",
    "pattern_hdr",
];

/// fio's verify phase after job `name` (section line `lno`), which writes
/// `w`: backend.c's `do_verify` reads back what the job wrote, piece by
/// piece in offset order (the pieces logged sorted), at the job's depth,
/// once the job's writes are done. raidlab reads the job's region once
/// in order with the job's blocks, which is the same I/O where the job
/// wrote every block of its region once: a one-pass sequential job, or a
/// random one on fio's random map. Other writing jobs are refused (fio
/// verifies only the pieces it logged, which raidlab does not keep).
fn read_back(lno: usize, name: &str, w: &Workload) -> Result<JobPhase> {
    let once = match w.rw {
        Rw::Write => w.percentage_random == 0 && w.sequencer.postfix().is_empty(),
        Rw::RandWrite => w.percentage_random == 100 && w.uses_random_map(),
        _ => false,
    };
    // Strided zones leave parts of the region unwritten, and exitall may
    // stop a job's clones before their regions are.
    let whole = w.runtime.is_none()
        && w.loops <= 1
        && w.number_ios.is_none()
        && w.io_size.is_none()
        && w.replay.is_none()
        && w.strided.is_none()
        && !(w.exitall && w.numjobs > 1);
    if !(once && whole) {
        return line_err(lno, format!(
            "[{name}] verify: raidlab reads back after the job only jobs that write each block of their region once (rw=write, or rw=randwrite with fio's random map, one pass, no runtime, loops, number_ios, io_size, zones or exitall over several jobs); fio verifies the pieces it logged of any other, as verify_backlog=N has raidlab do as the job goes"
        ));
    }
    let mut back = w.clone();
    back.rw = Rw::Read;
    back.percentage_random = 0;
    Ok(JobPhase {
        name: format!("{name} verify"),
        workload: back,
        notes: vec![format!(
            "fio's verify phase of [{name}]: its writes read back and checked, in offset order, reported on their own"
        )],
        check: Check::ReadBack,
        beside: Vec::new(),
    })
}

/// Read one job's option lines (its `[global]` lines first, then its
/// own, which override them), with what fio would tell its user about it,
/// and whether it verifies.
fn read_job(lines: &[(usize, &str)]) -> Result<(Workload, Vec<String>, bool)> {
    let mut job = JobOptions::default();
    for &(lno, line) in lines {
        let (k, v) = match line.split_once('=') {
            Some((k, v)) => (k.trim(), v.trim()),
            None => (line, ""),
        };
        job.take(lno, k, v)?;
    }
    job.finish()
}

/// One job's options as read so far: the workload's key-value pairs, and
/// what fio decides beside them.
struct JobOptions {
    /// The `ioengine` named last (a job section's over `[global]`'s).
    engine: Option<String>,
    time_based: bool,
    /// A `startdelay` range: each clone draws its own start.
    start_spread: bool,
    /// fio's unit base for sizes (`kb_base`).
    kb: u64,
    pairs: Vec<(String, String)>,
    /// `verify` set to a method (not `0` or `null`), and `do_verify`.
    verify: bool,
    do_verify: bool,
}

impl Default for JobOptions {
    fn default() -> Self {
        JobOptions {
            engine: None,
            time_based: false,
            start_spread: false,
            // fio's default unit base: k = 1024 (see `kb_base`).
            kb: 1024,
            pairs: Vec::new(),
            verify: false,
            // fio: "Run the verify phase after a write phase ... Default: true."
            do_verify: true,
        }
    }
}

impl JobOptions {
    /// Set `k` to `v`, over any earlier value (job sections override
    /// `[global]`).
    fn set(&mut self, k: &str, v: String) {
        self.pairs.retain(|(pk, _)| pk != k);
        self.pairs.push((k.to_string(), v));
    }

    /// Take the option `k=v` of line `lno` (`v` empty for a bare line).
    fn take(&mut self, lno: usize, k: &str, v: &str) -> Result<()> {
        let k = fio_long_name(k);
        match k {
            "rwmixwrite" => {
                let w = int(k, v, 0, 100)?;
                self.set("rwmixread", (100 - w).to_string());
            }
            // fio's `buffered` is `direct` turned round (a bare line: 1).
            "buffered" => {
                let b = if v.is_empty() { 1 } else { int(k, v, 0, 1)? };
                self.set("direct", (1 - b).to_string());
            }
            "startdelay" => self.start_spread = start_delay_spread(lno, v)?,
            "kb_base" => {
                self.kb = kb_base::parse_kb_base(v).ok_or_else(|| Error::JobLine {
                    line: lno,
                    msg: format!("kb_base={v}: expected 1000 or 1024"),
                })?;
            }
            "nrfiles" | "nr_files" => one_file(lno, k, v)?,
            "verify" => {
                self.verify = match v {
                    "0" | "null" => false,
                    _ if VERIFY_METHODS.contains(&v) => true,
                    _ => {
                        return line_err(
                            lno,
                            format!(
                                "verify={v}: expected 0, null or one of fio's methods ({})",
                                VERIFY_METHODS.join(", ")
                            ),
                        )
                    }
                }
            }
            "do_verify" => self.do_verify = v.is_empty() || int(k, v, 0, 1)? == 1,
            // Which jobs exitall stops: raidlab stops those of the phase,
            // fio's group (its default) or, with `stonewall`, everything
            // running before the next stonewall.
            "exit_what" => {
                if !matches!(v, "group" | "stonewall") {
                    return line_err(
                        lno,
                        format!("exit_what={v}: raidlab stops the jobs of the phase (group or stonewall); all is not modelled"),
                    );
                }
            }
            // fio stops at the first mismatch with it; raidlab's verified
            // runs exit 1 on any, with every mismatch counted.
            "verify_fatal" => {}
            _ if FIO_ACCEPTED.contains(&k) => {
                if k == "ioengine" {
                    self.engine = Some(v.to_string());
                }
                if k == "time_based" {
                    self.time_based = v.is_empty() || v != "0";
                }
            }
            "norandommap" | "hipri" | "exitall" | "exitall_on_error" | "bs_is_seq_rand"
            | "latency_run"
                if v.is_empty() =>
            {
                self.set(k, "1".to_string())
            }
            _ if !all_keys().any(|n| *n == k) => {
                return line_err(lno, format!("unsupported fio option '{k}'"));
            }
            _ if v.is_empty() => {
                return line_err(lno, format!("option '{k}' needs a value"));
            }
            _ => self.set(k, v.to_string()),
        }
        Ok(())
    }

    /// The workload the options give, fio's notes on it, and whether it
    /// verifies.
    fn finish(mut self) -> Result<(Workload, Vec<String>, bool)> {
        // Sizes as fio reads them under the file's kb_base, wherever it came.
        let iec_note = kb_base::read_sizes(&mut self.pairs, self.kb);
        if !(self.verify && self.do_verify) {
            // fio logs no writes to read back without a verify phase.
            self.pairs.retain(|(k, _)| !k.starts_with("verify_backlog"));
        }
        let refs: Vec<(&str, &str)> = self
            .pairs
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let mut w = Workload::from_pairs(&refs).map_err(|e| match (e, &iec_note) {
            (Error::Workload(m), Some(n)) => Error::Workload(format!("{m} ({n})")),
            (e, _) => e,
        })?;
        if self.start_spread && w.numjobs > 1 {
            return werr(format!(
                "startdelay with a range starts each of the {} jobs at its own time; raidlab starts a job's clones together (give one delay, which moves nothing measured)",
                w.numjobs
            ));
        }
        let mut notes: Vec<String> = iec_note.into_iter().collect();
        notes.extend(run_as_fio(&mut w, self.engine.as_deref(), self.time_based));
        Ok((w, notes, self.verify && self.do_verify))
    }
}

/// An error about line `line` of the job file's text.
fn line_err<T>(line: usize, msg: impl Into<String>) -> Result<T> {
    Err(Error::JobLine {
        line,
        msg: msg.into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::Rw;

    /// fio's examples/ssd-test.fio: four sections, each after a stonewall,
    /// sharing `[global]`.
    const SSD_TEST: &str = "[global]\nbs=4k\nioengine=libaio\niodepth=4\nsize=1g\ndirect=1\nruntime=60\n[seq-read]\nrw=read\nstonewall\n[rand-read]\nrw=randread\nstonewall\n[seq-write]\nrw=write\nstonewall\n[rand-write]\nrw=randwrite\nstonewall\n";

    #[test]
    fn stonewalled_sections_are_phases_with_the_globals_above_them() {
        let p = parse_job_phases(SSD_TEST).unwrap();
        let names: Vec<&str> = p.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["seq-read", "rand-read", "seq-write", "rand-write"]);
        let rw: Vec<Rw> = p.iter().map(|p| p.workload.rw).collect();
        assert_eq!(rw, [Rw::Read, Rw::RandRead, Rw::Write, Rw::RandWrite]);
        for phase in &p {
            assert_eq!(phase.workload.iodepth, 4);
            assert_eq!(phase.workload.runtime, Some(60_000_000_000));
        }
        // Each phase reads as the one-section file of its lines does.
        let alone = parse_job_file("[global]\nbs=4k\niodepth=4\nsize=1g\ndirect=1\nruntime=60\nioengine=libaio\n[w]\nrw=randwrite\n").unwrap();
        assert_eq!(p[3].workload, alone);
    }

    /// fio's `${VAR}`: the environment's value, nothing for a name not
    /// set, a lone `$` kept; bounded lines.
    #[test]
    fn variables_are_substituted_as_fio_does() {
        let env = |k: &str| match k {
            "QD" => Some("32".to_string()),
            "BIG" => Some("x".repeat(5000)),
            _ => None,
        };
        let t = substitute(
            "[j]\nioengine=libaio\niodepth=${QD}\nbs=4k${NOPE}\nname=$x ${}${ }{ ${\n",
            &env,
        )
        .unwrap();
        assert_eq!(t, "[j]\nioengine=libaio\niodepth=32\nbs=4k\nname=$x { ${\n");
        let p = parse_job_phases(&t).unwrap();
        assert_eq!(p[0].workload.iodepth, 32);
        let many = "name=${BIG}\n".repeat(1000);
        let e = substitute(&many, &env).unwrap_err().to_string();
        assert!(e.contains("line 838") && e.contains("4 MiB"), "{e}");
        let e = substitute("[j]\nname=${BIG}${BIG}\n", &env)
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 2") && e.contains("8192"), "{e}");
    }

    /// fio ends a line at its first `;` or `#` (fio's
    /// examples/tiobench-example.fio: `numjobs=4\t; 4 simultaneous
    /// threads for each job`).
    #[test]
    fn comments_end_a_line_as_in_fio() {
        let p = parse_job_phases(
            "# a job\n[j] ; its section\nnumjobs=4\t; four\nbs=8k#eight\n  ; indented\n",
        )
        .unwrap();
        assert_eq!(
            (p[0].name.as_str(), p[0].workload.numjobs, p[0].workload.bs),
            ("j", 4, 8192)
        );
    }

    /// `state=` sets the drives before the first phase; a later phase
    /// asking for another start is refused.
    #[test]
    fn drives_start_once() {
        assert!(parse_job_phases("[global]\nstate=fob\n[a]\n[b]\nstonewall\n").is_ok());
        let e = parse_job_phases("[a]\nstate=fob\n[b]\nstonewall\nstate=steady\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 3") && e.contains("[b] sets state="), "{e}");
    }

    #[test]
    fn a_global_applies_to_the_sections_after_it_only() {
        let text = "[a]\nrw=read\n[global]\nbs=64k\nstonewall\n[b]\nrw=write\n";
        let p = parse_job_phases(text).unwrap();
        assert_eq!(p[0].workload.bs, 4096);
        assert_eq!(p[1].workload.bs, 65536);
    }

    #[test]
    fn sections_without_stonewall_run_beside_the_phase_before() {
        for text in [
            "[a]\nrw=read\n[b]\nrw=write\n",
            "[a]\nrw=read\n[b]\nrw=write\nstonewall=0\n",
            "[a]\nrw=read\nstonewall\n[b]\nrw=write\nnew_group\n",
        ] {
            let p = parse_job_phases(text).unwrap();
            assert_eq!(p.len(), 1, "{text}");
            let names: Vec<&str> = p[0].sections().map(|(n, _)| n).collect();
            assert_eq!(names, ["a", "b"]);
            assert!(p[0].beside[0].workload.writes());
        }
        // A stonewall starts the next phase, and the sections after it
        // without one run beside it.
        let p = parse_job_phases("[a]\n[b]\nstonewall\n[c]\n[d]\nwait_for_previous=1\n").unwrap();
        let phases: Vec<Vec<&str>> = p
            .iter()
            .map(|p| p.sections().map(|(n, _)| n).collect())
            .collect();
        assert_eq!(phases, [vec!["a"], vec!["b", "c"], vec!["d"]]);
        // Commands that take one workload refuse them.
        let e = parse_job_file("[a]\n[b]\n").unwrap_err().to_string();
        assert!(e.contains("side by side ([a], [b])"), "{e}");
    }

    /// Sections side by side share what the first sets for all of them:
    /// how long they run and how the drives start; they neither verify nor
    /// replay; together they run at most MAX_NUMJOBS jobs.
    #[test]
    fn sections_side_by_side_keep_to_the_first() {
        for (text, what) in [
            ("[a]\nruntime=1\n[b]\nruntime=2\n", "a runtime of its own"),
            ("[a]\n[b]\nruntime=2\n", "a runtime of its own"),
            (
                "[a]\nruntime=1\n[b]\nruntime=1\nramp_time=1\n",
                "a ramp_time of its own",
            ),
            ("[a]\n[b]\nstate=fob\n", "a state= of its own"),
            ("[a]\nlog_avg_msec=10\n[b]\n", "a log_avg_msec of its own"),
            ("[a]\n[b]\nrw=write\nverify=crc32c\n", "neither verify"),
            ("[a]\nrw=write\nverify=crc32c\n[b]\n", "read-back"),
            (
                "[a]\nnumjobs=4000\n[b]\nnumjobs=100\n",
                "4100 jobs together",
            ),
        ] {
            let e = parse_job_phases(text).unwrap_err().to_string();
            assert!(e.contains("line ") && e.contains(what), "{text}: {e}");
        }
    }

    /// The drives start as the first phase's sections together need: a
    /// random writer beside a reader starts them in steady state.
    #[test]
    fn a_random_writer_beside_a_reader_starts_the_drives_steady() {
        let steady = Some(crate::topology::SsdState::Steady);
        let p = parse_job_phases("[r]\nrw=randread\n[w]\nrw=randwrite\n").unwrap();
        assert_eq!(p[0].lead_for_all().and_then(|w| w.state), steady);
        // The file itself is as written (`run` uses the drives as they are).
        assert_eq!(p[0].workload.state, None);
        let p = parse_job_phases("[r]\nrw=randread\n[w]\nrw=write\n").unwrap();
        assert!(p[0].lead_for_all().is_none());
        let p = parse_job_phases("[r]\nrw=randread\nstate=fob\n[w]\nrw=randwrite\nstate=fob\n")
            .unwrap();
        assert!(p[0].lead_for_all().is_none());
        let p = parse_job_phases("[w]\nrw=randwrite\n[r]\nrw=randread\n").unwrap();
        assert!(
            p[0].lead_for_all().is_none(),
            "the first's own start serves"
        );
    }

    /// fio's verify: a job that writes each block once is followed by its
    /// read-back, in offset order at the job's depth; `do_verify=0`,
    /// `verify=0` and `null` verify nothing; a job fio would verify piece
    /// by piece is refused.
    #[test]
    fn verifying_jobs_get_their_read_back_phase() {
        let p = parse_job_phases(
            "[w]\nrw=randwrite\nbs=8k\niodepth=16\nsize=8m\nioengine=libaio\nverify=crc32c\n",
        )
        .unwrap();
        assert_eq!(p.len(), 2);
        assert_eq!(p[0].check, Check::Verify);
        assert_eq!(
            (p[1].name.as_str(), p[1].check),
            ("w verify", Check::ReadBack)
        );
        let back = &p[1].workload;
        assert_eq!(
            (back.rw, back.bs, back.iodepth, back.size),
            (Rw::Read, 8192, 16, Some(8 << 20))
        );
        // A read job verifies what it reads, with no phase added.
        let r = parse_job_phases("[r]\nrw=randread\nverify=md5\n").unwrap();
        assert_eq!((r.len(), r[0].check), (1, Check::Verify));
        for off in ["verify=crc32c\ndo_verify=0", "verify=0", "verify=null", ""] {
            let p = parse_job_phases(&format!("[w]\nrw=write\n{off}\n")).unwrap();
            assert_eq!((p.len(), p[0].check), (1, Check::Off), "{off}");
        }
        for (bad, says) in [
            (
                "rw=randwrite\nruntime=5\nverify=crc32c",
                "write each block of their region once",
            ),
            (
                "rw=randwrite\nnorandommap\nverify=crc32c",
                "write each block of their region once",
            ),
            (
                "rw=randrw\nverify=crc32c",
                "write each block of their region once",
            ),
            (
                "rw=write\nzonemode=strided\nzonesize=64k\nzonerange=1m\nverify=crc32c",
                "write each block of their region once",
            ),
            (
                "rw=write\nnumjobs=2\nexitall\nverify=crc32c",
                "write each block of their region once",
            ),
            (
                "rw=write\nverify=crc33",
                "verify=crc33: expected 0, null or one of",
            ),
        ] {
            let e = parse_job_phases(&format!("[w]\n{bad}\n"))
                .unwrap_err()
                .to_string();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    /// With verify_backlog a job reads back as it goes: no read-back phase
    /// after it, and jobs refused above (time-based, without the random
    /// map, mixed) are taken. Without verify fio logs nothing to read
    /// back, so the backlog is dropped.
    #[test]
    fn verify_backlog_reads_back_in_the_job() {
        for job in [
            "rw=randwrite\nruntime=5\nverify=crc32c\nverify_backlog=64",
            "rw=randwrite\nnorandommap\nverify=crc32c\nverify_backlog=8\nverify_backlog_batch=2",
            "rw=randrw\nverify=md5\nverify_backlog=16",
        ] {
            let p = parse_job_phases(&format!("[w]\n{job}\n")).unwrap();
            assert_eq!((p.len(), p[0].check), (1, Check::Verify), "{job}");
            assert!(p[0].workload.backlog.is_some(), "{job}");
        }
        for off in ["verify=0", "verify=crc32c\ndo_verify=0", ""] {
            let p = parse_job_phases(&format!("[w]\nrw=write\nverify_backlog=4\n{off}\n")).unwrap();
            assert_eq!(p[0].workload.backlog, None, "{off}");
        }
        let e = parse_job_phases("[w]\nrw=write\nverify=crc32c\nverify_backlog=lots\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("verify_backlog=lots"), "{e}");
        let e = parse_job_phases(
            "[w]\nrw=write\nnumjobs=4096\nverify=crc32c\nverify_backlog=1048576\n",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("pieces logged at once"), "{e}");
    }

    #[test]
    fn one_workload_commands_refuse_phases_and_files_are_bounded() {
        let e = parse_job_file(SSD_TEST).unwrap_err().to_string();
        assert!(
            e.contains("4 job sections") && e.contains("[seq-read], [rand-read]"),
            "{e}"
        );
        let many: String = (0..=MAX_PHASES)
            .map(|i| format!("[j{i}]\nstonewall\n"))
            .collect();
        let e = parse_job_phases(&many).unwrap_err().to_string();
        assert!(e.contains("more than 64 job sections"), "{e}");
        let e = parse_job_phases("[global]\nbs=4k\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("no job section"), "{e}");
        let e = parse_job_phases("bs=4k\n[j]\n").unwrap_err().to_string();
        assert!(e.contains("line 1: option outside a section"), "{e}");
    }
}
