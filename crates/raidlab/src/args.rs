//! Arguments that several subcommands share.

use crate::common::{emit, expression, json_text, phases_of, workload_of};
use crate::failure::Failure;
use clap::ValueEnum;
use raidlab_core::result::{Phased, RunResult};
use raidlab_core::workload::{JobPhase, Workload};

/// Output of a report (`validate`, `reproduce`, `model`).
#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum ReportFormat {
    /// A text table.
    Table,
    /// One JSON document.
    Json,
}

/// Output of one run (`sim`, `run`).
#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum RunFormat {
    /// A text table.
    Table,
    /// raidlab's result schema (docs/results.md).
    Json,
    /// fio's `--output-format=json` layout.
    #[value(name = "fio-json")]
    FioJson,
    /// The timeline (`log_avg_msec`) as CSV: one row per interval.
    #[value(name = "timeline-csv")]
    TimelineCsv,
}

/// The real engine's I/O back end.
#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum EngineArg {
    /// Linux io_uring.
    #[value(name = "io_uring")]
    IoUring,
    /// Positioned reads and writes from threads.
    Psync,
}

impl From<EngineArg> for raidlab_io::backend::EngineKind {
    fn from(e: EngineArg) -> Self {
        match e {
            EngineArg::IoUring => raidlab_io::backend::EngineKind::IoUring,
            EngineArg::Psync => raidlab_io::backend::EngineKind::Psync,
        }
    }
}

/// How a real run treats its members (`run`, `sweep --engine real`).
#[derive(clap::Args)]
pub struct RealArgs {
    /// Go through the page cache (no O_DIRECT).
    #[arg(long)]
    pub buffered: bool,
    /// Write self-describing blocks and check every read; mismatches make
    /// the exit status 1.
    #[arg(long)]
    pub verify: bool,
    /// Write even to devices that are in use or carry signatures.
    #[arg(long)]
    pub force: bool,
    /// Create new arrays over the members, replacing the md metadata they
    /// carry (their data is lost), as `mdadm --create` does; without it,
    /// members with metadata are assembled and checked.
    #[arg(long)]
    pub create: bool,
    /// With --verify: keep the generation of every block written in FILE
    /// (fio's verify state). A run that writes saves it; a later verified
    /// run that names it finds blocks older than recorded (lost writes).
    #[arg(long, value_name = "FILE")]
    pub verify_state: Option<std::path::PathBuf>,
}

impl RealArgs {
    /// The real engine's options for workload `w` with this back end:
    /// `--buffered` or the workload's `direct=0` go through the page cache.
    pub fn options(&self, engine: Option<EngineArg>, w: &Workload) -> raidlab_io::RunOptions {
        raidlab_io::RunOptions {
            engine: engine.map(Into::into),
            direct: !self.buffered && !w.buffered,
            verify: self.verify,
            force: self.force,
            trace: false,
            create: self.create,
            verify_state: self.verify_state.clone(),
        }
    }
}

/// What `sim` and `run` are told to run, and where the result goes.
#[derive(clap::Args)]
pub struct JobArgs {
    /// Topology expression, or @FILE holding one (`#` starts a comment).
    #[arg(long, short = 't')]
    pub topology: String,
    /// Workload as fio-style `key=value` pairs.
    #[arg(long, short = 'w', conflicts_with = "job")]
    pub workload: Option<String>,
    /// fio job file (`[global]` plus job sections; sections after the
    /// first run in turn, each after a `stonewall`).
    #[arg(long)]
    pub job: Option<String>,
    /// Random seed (the workload's `seed=` wins).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Output format.
    #[arg(long, value_enum, default_value_t = RunFormat::Table)]
    pub format: RunFormat,
    /// Write the result to FILE instead of stdout.
    #[arg(long, short = 'o')]
    pub output: Option<String>,
}

impl JobArgs {
    /// The topology expression, read from the file `@FILE` names.
    pub fn expr(&self) -> Result<String, Failure> {
        expression(&self.topology)
    }

    /// The workload of `--workload` or `--job`.
    pub fn workload(&self) -> Result<Workload, Failure> {
        workload_of(&self.workload, &self.job)
    }

    /// The phases to run in turn: a job file's stonewalled sections (its
    /// reserved keywords valued by `k`), or the one workload of
    /// `--workload` (named `job`).
    pub fn phases(&self, k: &raidlab_core::workload::Keywords) -> Result<Vec<JobPhase>, Failure> {
        match &self.job {
            Some(path) => phases_of(path, k),
            None => Ok(vec![JobPhase {
                name: "job".into(),
                workload: self.workload()?,
                notes: Vec::new(),
                check: raidlab_core::workload::Check::Off,
                beside: Vec::new(),
            }]),
        }
    }

    /// Write the results of a job file's phases (two or more) in the
    /// format asked for: each phase's table under its name; one JSON
    /// document listing them (`phases`); fio's JSON with a job a phase,
    /// each its own group, as fio reports stonewalled jobs; or one
    /// timeline with a phase column.
    pub fn emit_phases(&self, runs: &[(String, RunResult)], timestamp: u64) -> Result<(), Failure> {
        let n = runs.len();
        let text = match self.format {
            RunFormat::Json => json_text(&Phased::of(runs))?,
            RunFormat::FioJson => {
                json_text(&raidlab_report::fio::fio_json_phases(runs, timestamp))?
            }
            RunFormat::Table => runs
                .iter()
                .enumerate()
                .map(|(i, (name, r))| {
                    format!(
                        "phase {} of {n}: [{name}]\n{}",
                        i + 1,
                        raidlab_report::text::sim_table(r)
                    )
                })
                .collect::<Vec<_>>()
                .join("\n"),
            RunFormat::TimelineCsv => {
                let mut o = format!("phase,{TIMELINE_HEADER}\n");
                for (name, r) in runs {
                    let rows =
                        timeline_rows(r).map_err(|f| f.context(format!("phase [{name}]")))?;
                    for row in rows {
                        o += &format!("{name},{row}\n");
                    }
                }
                o
            }
        };
        emit(&self.output, &text)
    }

    /// Write one run's result in the format asked for; `timestamp` is the
    /// start time fio-json reports.
    pub fn emit_result(&self, r: &RunResult, timestamp: u64, extra: &str) -> Result<(), Failure> {
        let text = match self.format {
            RunFormat::Json => json_text(r)?,
            RunFormat::FioJson => json_text(&raidlab_report::fio::fio_json(r, timestamp))?,
            RunFormat::Table => raidlab_report::text::sim_table(r) + extra,
            RunFormat::TimelineCsv => timeline_csv(r)?,
        };
        emit(&self.output, &text)
    }
}

/// The timeline CSV's columns: seconds, I/Os per second, 10^6 B/s and µs.
const TIMELINE_HEADER: &str = "t_s,iops,mb_s,lat_mean_us,lat_max_us";

/// A run's timeline as CSV ([`TIMELINE_HEADER`]).
fn timeline_csv(r: &RunResult) -> Result<String, Failure> {
    let mut o = format!("{TIMELINE_HEADER}\n");
    for row in timeline_rows(r)? {
        o += &row;
        o.push('\n');
    }
    Ok(o)
}

/// A run's timeline, a CSV row an interval; an error if it has none.
fn timeline_rows(r: &RunResult) -> Result<Vec<String>, Failure> {
    if r.intervals.is_empty() {
        return Err(Failure::input(
            "--format timeline-csv needs a timeline: add log_avg_msec=MS to the workload (and a window longer than one interval)",
        ));
    }
    Ok(r.intervals
        .iter()
        .map(|i| {
            format!(
                "{},{:.1},{:.3},{:.3},{:.3}",
                i.t_s, i.iops, i.mbps, i.lat_mean_us, i.lat_max_us
            )
        })
        .collect())
}

/// Options shared by the commands that simulate published rows.
#[derive(clap::Args)]
pub struct RowsRun {
    /// Output format.
    #[arg(long, value_enum, default_value_t = ReportFormat::Table)]
    pub format: ReportFormat,
    /// Random seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Worker threads (default: all cores).
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Write the result to FILE instead of stdout.
    #[arg(long, short = 'o')]
    pub output: Option<String>,
}

/// Extra preset files (`--presets FILE.toml`, repeatable).
#[derive(clap::Args, serde::Serialize, serde::Deserialize, Clone)]
pub struct PresetFiles {
    /// Extra presets (TOML; tables may derive from built-ins with `base = "NAME"`).
    #[arg(long = "presets", value_name = "FILE")]
    pub files: Vec<String>,
}

impl PresetFiles {
    /// The built-in presets plus these files'.
    pub fn load(&self) -> Result<raidlab_core::preset::PresetDb, Failure> {
        crate::common::load_presets(&self.files)
    }
}
