//! What several commands share: input files (size-capped), presets, the
//! output sink, JSON text, worker threads and the progress bar.

use crate::failure::Failure;
use raidlab_core::preset::PresetDb;
use raidlab_core::workload::{
    expand_includes, expand_keywords, locate_error, parse_job_file_noted, parse_job_phases,
    substitute, JobPhase, Keywords, Origin, Workload,
};
use std::io::{Read, Write};

/// Largest data file raidlab reads (published CSVs, sweep results and
/// slices): a million rows of ~500 bytes fit. Anything larger is refused
/// before it is held in memory (`@/dev/zero` must not read until memory
/// runs out).
pub const MAX_DATA_BYTES: u64 = 512 << 20;

/// Largest description file (topology, fio job, presets): far above any
/// real one, which is a few KiB.
pub const MAX_SPEC_BYTES: u64 = 1 << 20;

/// The text of a description file (`MAX_SPEC_BYTES` at most).
pub fn read_file(path: &str, what: &str) -> Result<String, Failure> {
    read_capped(path, what, MAX_SPEC_BYTES)
}

/// The text of a data file (`MAX_DATA_BYTES` at most).
pub fn read_data(path: &str, what: &str) -> Result<String, Failure> {
    read_capped(path, what, MAX_DATA_BYTES)
}

/// The text of `path`, refused if it is over `cap` bytes or not UTF-8.
fn read_capped(path: &str, what: &str, cap: u64) -> Result<String, Failure> {
    let cannot =
        |e: &dyn std::fmt::Display| Failure::input(format!("cannot read {what} '{path}': {e}"));
    let file = std::fs::File::open(path).map_err(|e| cannot(&e))?;
    let mut bytes = Vec::new();
    file.take(cap + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| cannot(&e))?;
    if bytes.len() as u64 > cap {
        let size = if cap >= 1 << 20 {
            format!("{} MiB", cap >> 20)
        } else {
            format!("{} KiB", cap >> 10)
        };
        return Err(Failure::input(format!(
            "{what} '{path}' is larger than {size}"
        )));
    }
    String::from_utf8(bytes).map_err(|_| cannot(&"not UTF-8 text"))
}

/// A topology argument: the expression itself, or the file `@FILE` names.
pub fn expression(arg: &str) -> Result<String, Failure> {
    match arg.strip_prefix('@') {
        Some(path) => read_file(path, "topology file"),
        None => Ok(arg.to_string()),
    }
}

/// The built-in presets plus those of each `--presets` file.
pub fn load_presets(files: &[String]) -> Result<PresetDb, Failure> {
    let mut db = PresetDb::builtin();
    for f in files {
        let text = read_file(f, "presets file")?;
        db.load_str(&text)
            .map_err(|e| Failure::input(format!("{f}: {e}")))?;
    }
    Ok(db)
}

/// The workload from `--workload` or `--job`.
pub fn workload_of(workload: &Option<String>, job: &Option<String>) -> Result<Workload, Failure> {
    Ok(match (workload, job) {
        (_, Some(path)) => {
            let (text, origins) = job_text(path, &this_machine())?;
            let (w, notes) = parse_job_file_noted(&text).map_err(|e| locate_error(e, &origins))?;
            for n in notes {
                eprintln!("note: {path}: {n}");
            }
            w
        }
        (Some(s), None) => Workload::parse(s)?,
        (None, None) => {
            return Err(Failure::input(
                "give a workload with --workload \"k=v ...\" or --job FILE.fio",
            ))
        }
    })
}

/// The text of the job file at `path`, its `include` directives replaced
/// by the files they name, its `${VAR}` by the environment's values and
/// its reserved keywords (`$ncpus`...) by `k`'s, its arithmetic computed,
/// as fio does; and where each of its lines came from.
fn job_text(path: &str, k: &Keywords) -> Result<(String, Vec<Origin>), Failure> {
    let (text, origins) = expand_includes(&read_file(path, "job file")?, path, &read_included)?;
    let env = |k: &str| std::env::var(k).ok();
    let text = substitute(&text, &env)
        .and_then(|t| expand_keywords(&t, k))
        .map_err(|e| locate_error(e, &origins))?;
    Ok((text, origins))
}

/// The path and text of the file `name` that the job file `from`
/// includes: `name` as given where it exists, else beside `from`, as fio
/// resolves it.
fn read_included(from: &str, name: &str) -> raidlab_core::Result<(String, String)> {
    let beside = std::path::Path::new(from).parent().map(|d| d.join(name));
    let path = match beside {
        Some(b) if !std::path::Path::new(name).exists() && !b.as_os_str().is_empty() => {
            b.to_string_lossy().into_owned()
        }
        _ => name.to_string(),
    };
    let text = read_file(&path, "included job file")
        .map_err(|e| raidlab_core::Error::Workload(format!("{from}: include {name}: {e}")))?;
    Ok((path, text))
}

/// fio's reserved keywords on this machine, as fio reads them: the CPUs
/// this process may run on, the memory /proc/meminfo gives (MiB), and the
/// kernel's page size from /proc/self/smaps.
pub fn this_machine() -> Keywords {
    let ncpus = std::thread::available_parallelism().map_or(1, |n| n.get() as u64);
    let field = |path: &str, name: &str| -> Option<u64> {
        let text = std::fs::read_to_string(path).ok()?;
        let line = text.lines().find(|l| l.starts_with(name))?;
        line[name.len()..].split_whitespace().next()?.parse().ok()
    };
    Keywords {
        ncpus: Some(ncpus),
        mb_memory: field("/proc/meminfo", "MemTotal:").map(|kb| kb / 1024),
        pagesize: field("/proc/self/smaps", "KernelPageSize:").map(|kb| kb * 1024),
        whose: "this machine".into(),
    }
}

/// The phases of the job file at `path` (its stonewalled sections), its
/// keywords valued by `k`, its notes said on stderr, each under its
/// section's name when there are several.
pub fn phases_of(path: &str, k: &Keywords) -> Result<Vec<JobPhase>, Failure> {
    let (text, origins) = job_text(path, k)?;
    let phases = parse_job_phases(&text).map_err(|e| locate_error(e, &origins))?;
    let named = phases.len() > 1;
    for p in &phases {
        for n in &p.notes {
            match named {
                true => eprintln!("note: {path}: [{}] {n}", p.name),
                false => eprintln!("note: {path}: {n}"),
            }
        }
    }
    Ok(phases)
}

/// Write `text` to the file `output` names, or to stdout.
pub fn emit(output: &Option<String>, text: &str) -> Result<(), Failure> {
    match output {
        Some(path) => std::fs::write(path, text)
            .map_err(|e| Failure::runtime(format!("cannot write '{path}': {e}"))),
        None => {
            let mut out = std::io::stdout().lock();
            // A closed pipe (e.g. `| head`) is not an error worth a message.
            let _ = out.write_all(text.as_bytes());
            Ok(())
        }
    }
}

/// Check, before any work, that `-o PATH` can be written: its folder exists
/// and it is no folder itself (a long command must not fail at its end on
/// a misspelt path).
pub fn check_output(path: &str) -> Result<(), Failure> {
    let p = std::path::Path::new(path);
    let dir = p
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."));
    if !dir.is_dir() {
        return Err(Failure::input(format!(
            "cannot write '{path}': the folder '{}' does not exist",
            dir.display()
        )));
    }
    if p.is_dir() {
        return Err(Failure::input(format!(
            "cannot write '{path}': it is a folder"
        )));
    }
    Ok(())
}

/// Pretty JSON text of a serialisable value, newline-terminated.
pub fn json_text(v: &impl serde::Serialize) -> Result<String, Failure> {
    serde_json::to_string_pretty(v)
        .map(|t| t + "\n")
        .map_err(|e| Failure::runtime(e.to_string()))
}

/// Worker threads: as asked, or one per core.
pub fn threads(jobs: Option<usize>) -> Result<usize, Failure> {
    match jobs {
        Some(0) => Err(Failure::input("--jobs: at least 1")),
        Some(n) => Ok(n),
        None => Ok(std::thread::available_parallelism().map_or(1, |n| n.get())),
    }
}

/// The verify failure of a real run, if blocks mismatched.
pub fn verify_failure(r: &raidlab_core::result::RunResult) -> Option<Failure> {
    let bad = r
        .real
        .as_ref()
        .and_then(|x| x.verify.as_ref())
        .map_or(0, |v| v.mismatches);
    (bad > 0).then(|| Failure::runtime(format!("verify: {bad} mismatching 512-byte blocks")))
}

/// The failure of a run whose jobs tripped fio's guards (`max_latency`,
/// `rate_min`, `rate_iops_min`): the first job's error, and how many more
/// there were (all are in the result's `errors`); exit status 1, as fio's
/// for a job that ended in error.
pub fn job_failure(r: &raidlab_core::result::RunResult) -> Option<Failure> {
    let first = r.errors.first()?;
    let more = match r.errors.len() - 1 {
        0 => String::new(),
        n => format!(" (and {n} more job(s) in error: the result's errors)"),
    };
    Some(Failure::runtime(format!(
        "job {}{}: {}{more}",
        first.job,
        section_of_job(r, first.job).map_or(String::new(), |n| format!(" [{n}]")),
        first.message
    )))
}

/// The name of the section job `job` belongs to, in a run of sections side
/// by side (jobs numbered on across the sections in order).
fn section_of_job(r: &raidlab_core::result::RunResult, job: u32) -> Option<&str> {
    let mut first = 0;
    r.sections.iter().find_map(|s| {
        let n = s
            .workload
            .get("numjobs")
            .and_then(|v| v.as_u64())
            .unwrap_or(1) as u32;
        first += n;
        (job < first).then_some(s.name.as_str())
    })
}

/// A progress bar on stderr for a job of `what` made of runs; drawn only
/// when stderr is a terminal (indicatif hides it otherwise).
pub fn progress_bar(what: &'static str) -> impl Fn(usize, usize) + Sync {
    use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
    let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template("{msg} [{bar:30}] {pos}/{len} runs, {elapsed} (~{eta} left)")
            .expect("the template is valid")
            .progress_chars("#>."),
    );
    bar.set_message(what);
    move |done, total| {
        bar.set_length(total as u64);
        bar.set_position(done as u64);
        if done == total {
            bar.finish();
        }
    }
}

/// A percentage bar on stderr for one long run (`sim`), drawn only when
/// stderr is a terminal; it clears itself when dropped.
pub struct RunProgress(indicatif::ProgressBar);

impl RunProgress {
    /// A bar labelled `what`.
    pub fn new(what: &'static str) -> Self {
        use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
        let bar = ProgressBar::with_draw_target(Some(1000), ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template("{msg} [{bar:30}] {percent}%, {elapsed} (~{eta} left)")
                .expect("the template is valid")
                .progress_chars("#>."),
        );
        bar.set_message(what);
        RunProgress(bar)
    }

    /// The run has come `fraction` (0 to 1) of the way.
    pub fn set(&self, fraction: f64) {
        self.0
            .set_position((fraction.clamp(0.0, 1.0) * 1000.0) as u64);
    }
}

impl Drop for RunProgress {
    fn drop(&mut self) {
        self.0.finish_and_clear();
    }
}

/// A `--capacity` in bytes: decimal units (k, m, g, t, p, with or without a
/// trailing b) as drive capacities are stated, binary ones with `i` (gi,
/// ti); at most 1 PB, at least 1 MB.
pub fn capacity_bytes(text: &str) -> Result<u64, Failure> {
    let bad = || {
        Failure::input(format!(
            "--capacity {text}: expected a size such as 480g or 7.68t"
        ))
    };
    let t = text.trim().to_ascii_lowercase();
    let t = t.strip_suffix('b').unwrap_or(&t);
    let split = t.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: f64 = num.parse().map_err(|_| bad())?;
    let scale = match unit {
        "" => 1.0,
        "k" => 1e3,
        "m" => 1e6,
        "g" => 1e9,
        "t" => 1e12,
        "p" => 1e15,
        "ki" => 1024.0,
        "mi" => 1024f64.powi(2),
        "gi" => 1024f64.powi(3),
        "ti" => 1024f64.powi(4),
        _ => return Err(bad()),
    };
    let bytes = n * scale;
    if !(1e6..=1e15).contains(&bytes) {
        return Err(Failure::input(format!(
            "--capacity {text}: from 1 MB to 1 PB"
        )));
    }
    Ok(bytes as u64)
}
