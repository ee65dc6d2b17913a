//! `raidlab`: simulate SSD/HDD RAID arrays under fio-style workloads.
//!
//! A thin front end: it parses arguments, calls the library crates and turns
//! their typed errors into one-line messages and exit codes (2 = bad input,
//! 1 = runtime failure).

use raidlab_report::text as table;

use clap::{Parser, Subcommand, ValueEnum};
use raidlab_core::preset::{Preset, PresetDb};
use raidlab_core::topology;
use raidlab_core::workload::{parse_job_file, Workload};
use std::io::Write;
use std::process::ExitCode;

/// The published measurements raidlab ships (SPEC §5 CSV).
const CALIBRATION: &str = include_str!("../../../data/published/calibration.csv");

/// raidlab — a laboratory for storage built from flash SSDs in RAID arrays.
#[derive(Parser)]
#[command(name = "raidlab", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
enum SimFormat {
    Table,
    Json,
}

/// Output of one run (`sim`, `run`).
#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
enum RunFormat {
    Table,
    Json,
    /// fio's `--output-format=json` layout.
    #[value(name = "fio-json")]
    FioJson,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
enum SweepFormat {
    Csv,
    Json,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
enum SweepEngine {
    Sim,
    Real,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
enum KindArg {
    Line,
    Bar,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
enum PresetFormat {
    Table,
    Toml,
}

#[derive(Subcommand)]
enum Cmd {
    /// Simulate a topology under a workload.
    ///
    /// Without `runtime=` each job makes one pass over `size` (default: the
    /// whole volume), as fio does; with `runtime=` it runs that long after
    /// `ramp_time=`. SSDs start written once (`state=fill`) unless the
    /// expression or the workload says otherwise.
    Sim {
        #[command(flatten)]
        job: JobArgs,
        /// Extra presets (TOML; tables may derive from built-ins with `base = "NAME"`).
        #[arg(long)]
        presets: Vec<String>,
    },
    /// Simulate every row of a published-measurement CSV and report the errors.
    ///
    /// The CSV has the columns id,source,ref,topology,workload,metric,value,note
    /// (metric: iops, mbps, lat_avg_ms, lat_max_ms). Rows whose workload has no
    /// `runtime` are simulated with 2 s of warm-up (`ramp_time`) and 3 s of
    /// measurement. Rows run in parallel; a row that cannot be simulated is
    /// listed under `failed` with the reason.
    Validate {
        /// CSV file (e.g. data/published/calibration.csv).
        file: String,
        /// Only rows whose id, source or ref contains this.
        #[arg(long)]
        filter: Option<String>,
        #[command(flatten)]
        run: RowsRun,
        /// Extra presets (TOML).
        #[arg(long)]
        presets: Vec<String>,
    },
    /// Reproduce a document's tables: published and simulated side by side.
    ///
    /// Uses the calibration data shipped with raidlab (data/published/
    /// calibration.csv, built in). Rows are simulated as `validate` does.
    Reproduce {
        /// petrov2010, jdev2009, admin2015, intel2013 or all.
        #[arg(default_value = "petrov2010")]
        source: String,
        #[command(flatten)]
        run: RowsRun,
        /// Also write one self-contained HTML page per document (tables
        /// with coloured errors, SVG figures) into DIR, and DIR/index.html.
        #[arg(long, value_name = "DIR")]
        html: Option<String>,
    },
    /// Run a workload for real on files or block devices.
    ///
    /// Leaves of the expression are paths (`./m0.img`, `/dev/sdb`) or
    /// `missing` (a failed member); arrays over them (raid0/1/10/5/6, concat,
    /// nested) are executed by raidlab's own software RAID with md's layouts.
    /// Member files that do not exist are created at the size the workload's
    /// `size=` needs. Block devices that are mounted, in use, or carry a
    /// partition table or file-system signature are refused unless --force.
    /// `runtime` and `ramp_time` are wall-clock seconds here.
    Run {
        #[command(flatten)]
        job: JobArgs,
        /// I/O engine (default: io_uring where the kernel has it, else psync).
        #[arg(long, value_enum)]
        engine: Option<EngineArg>,
        #[command(flatten)]
        real: RealArgs,
    },
    /// Print an fio job file equivalent to a workload.
    ExportFio {
        /// Workload as fio-style `key=value` pairs.
        #[arg(long, short = 'w', conflicts_with = "job")]
        workload: Option<String>,
        /// raidlab-readable fio job file to normalise.
        #[arg(long)]
        job: Option<String>,
        /// The file or device fio should use.
        #[arg(long)]
        filename: Option<String>,
        /// fio ioengine.
        #[arg(long, value_enum, default_value_t = EngineArg::IoUring)]
        engine: EngineArg,
        /// direct=0 (page cache).
        #[arg(long)]
        buffered: bool,
        /// Random seed (fio's randseed).
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
    /// The classic analytic model: T/C, internal requests and the expected
    /// array throughput from one drive's figures (SPEC §9).
    ///
    /// One drive's figure is the drive preset simulated alone (small
    /// patterns: 4 KiB random at QD32; large: 1 MiB sequential at QD4;
    /// `--bs` changes the block size), or the number given with
    /// `--one-drive`. Expected array throughput = T/C × drives × one drive.
    Model {
        /// RAID level: raid0, raid1, raid5, raid6, raid10.
        #[arg(long)]
        level: String,
        /// Number of drives.
        #[arg(long)]
        drives: u32,
        /// Only this pattern: small-random-read, small-random-write,
        /// large-sequential-read, large-sequential-write.
        #[arg(long)]
        pattern: Option<String>,
        /// Drive preset simulated for one drive's figures.
        #[arg(long, default_value = "x25e")]
        drive: String,
        /// Block size of the one-drive simulation.
        #[arg(long)]
        bs: Option<String>,
        /// SSD starting state of the one-drive simulation (fresh, fill, steady).
        #[arg(long)]
        state: Option<String>,
        /// One drive's figure, measured elsewhere (IOPS for small patterns,
        /// MB/s for large); needs --pattern.
        #[arg(long, requires = "pattern")]
        one_drive: Option<f64>,
        /// Output format.
        #[arg(long, value_enum, default_value_t = SimFormat::Table)]
        format: SimFormat,
        /// Extra presets (TOML).
        #[arg(long)]
        presets: Vec<String>,
    },
    /// Run the product of varied values through templates: one row per run.
    ///
    /// `{name}` in --topology and --workload is replaced by each value of
    /// `--vary name=...`: a list `v1,v2` (`v1|v2` when values hold commas),
    /// a range `a..b` (step 1), `a..b:step`, or `a..b*factor` (geometric;
    /// ends may be sizes: `bs=4k..1m*2`). The first --vary varies slowest.
    /// Simulations run in parallel (--jobs); real runs one after another.
    /// Each row has the run number, the varied values, the expanded
    /// topology and workload, every summary metric and the bottleneck.
    /// Rows without `runtime` simulate one pass over `size`, as `sim` does.
    Sweep {
        /// Topology template, or @FILE holding one.
        #[arg(long, short = 't')]
        topology: String,
        /// Workload template (`key=value` pairs with `{name}` placeholders).
        #[arg(long, short = 'w')]
        workload: String,
        /// name=values (repeat for more names).
        #[arg(long, required = true)]
        vary: Vec<String>,
        /// sim (simulate) or real (run on the files or devices the template names).
        #[arg(long, value_enum, default_value_t = SweepEngine::Sim)]
        engine: SweepEngine,
        /// Random seed of every run.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Output format.
        #[arg(long, value_enum, default_value_t = SweepFormat::Csv)]
        format: SweepFormat,
        /// Write to FILE instead of stdout.
        #[arg(long, short = 'o')]
        output: Option<String>,
        /// Run only slice i of n (runs numbered k with k mod n = i-1); join
        /// slices with `raidlab merge`.
        #[arg(long)]
        shard: Option<String>,
        /// Simulations in parallel (default: all cores).
        #[arg(long)]
        jobs: Option<usize>,
        /// Real runs: I/O engine.
        #[arg(long, value_enum)]
        io_engine: Option<EngineArg>,
        #[command(flatten)]
        real: RealArgs,
        /// Extra presets (TOML).
        #[arg(long)]
        presets: Vec<String>,
    },
    /// Join the slices of a sharded sweep into the unsharded output.
    Merge {
        /// Slice files (all CSV or all JSON), in any order.
        #[arg(required = true)]
        slices: Vec<String>,
        /// Write to FILE instead of stdout.
        #[arg(long, short = 'o')]
        output: Option<String>,
    },
    /// Draw a chart from sweep results (CSV or JSON) as SVG or PNG.
    ///
    /// X values that are all numbers make a numeric axis (lines); sizes
    /// (4k, 64k) and other text make categories (bars), sizes in size
    /// order. Each value of --series is one line or one bar of a group.
    /// Rows must not repeat an (x, series) pair: narrow them with --where.
    Plot {
        /// Results file (`raidlab sweep` CSV or JSON, or any CSV with a header).
        results: String,
        /// Column for the x axis.
        #[arg(long)]
        x: String,
        /// Column for the y axis (numbers).
        #[arg(long)]
        y: String,
        /// Column whose values are the series (legend entries).
        #[arg(long)]
        series: Option<String>,
        /// Keep only rows where COLUMN=VALUE (repeatable).
        #[arg(long = "where", value_name = "COLUMN=VALUE")]
        filters: Vec<String>,
        /// Chart kind (default: line for numeric x, bar for categories).
        #[arg(long, value_enum)]
        kind: Option<KindArg>,
        /// Logarithmic x axis.
        #[arg(long)]
        log_x: bool,
        /// Logarithmic y axis.
        #[arg(long)]
        log_y: bool,
        /// Chart title.
        #[arg(long)]
        title: Option<String>,
        /// Output file: .svg or .png.
        #[arg(long, short = 'o')]
        output: String,
    },
    /// List presets, or dump one.
    Presets {
        /// Preset to show.
        name: Option<String>,
        /// Output format.
        #[arg(long, value_enum, default_value_t = PresetFormat::Table)]
        format: PresetFormat,
        /// Extra presets (TOML).
        #[arg(long)]
        presets: Vec<String>,
    },
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
enum EngineArg {
    #[value(name = "io_uring")]
    IoUring,
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
struct RealArgs {
    /// Go through the page cache (no O_DIRECT).
    #[arg(long)]
    buffered: bool,
    /// Write self-describing blocks and check every read; mismatches make
    /// the exit status 1.
    #[arg(long)]
    verify: bool,
    /// Write even to devices that are in use or carry signatures.
    #[arg(long)]
    force: bool,
}

impl RealArgs {
    fn options(&self, engine: Option<EngineArg>) -> raidlab_io::RunOptions {
        raidlab_io::RunOptions {
            engine: engine.map(Into::into),
            direct: !self.buffered,
            verify: self.verify,
            force: self.force,
            trace: false,
        }
    }
}

/// What `sim` and `run` are told to run, and where the result goes.
#[derive(clap::Args)]
struct JobArgs {
    /// Topology expression, or @FILE holding one (`#` starts a comment).
    #[arg(long, short = 't')]
    topology: String,
    /// Workload as fio-style `key=value` pairs.
    #[arg(long, short = 'w', conflicts_with = "job")]
    workload: Option<String>,
    /// fio job file (`[global]` plus one job section).
    #[arg(long)]
    job: Option<String>,
    /// Random seed (the workload's `seed=` wins).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Output format.
    #[arg(long, value_enum, default_value_t = RunFormat::Table)]
    format: RunFormat,
    /// Write the result to FILE instead of stdout.
    #[arg(long, short = 'o')]
    output: Option<String>,
}

impl JobArgs {
    /// The topology expression, read from the file `@FILE` names.
    fn expr(&self) -> Result<String, Failure> {
        match self.topology.strip_prefix('@') {
            Some(path) => read_file(path, "topology file"),
            None => Ok(self.topology.clone()),
        }
    }
}

/// The workload from `--workload` or `--job`.
fn workload_of(workload: &Option<String>, job: &Option<String>) -> Result<Workload, Failure> {
    Ok(match (workload, job) {
        (_, Some(path)) => parse_job_file(&read_file(path, "job file")?)?,
        (Some(s), None) => Workload::parse(s)?,
        (None, None) => {
            return Err(Failure::Input(
                "give a workload with --workload \"k=v ...\" or --job FILE.fio".into(),
            ))
        }
    })
}

/// Options shared by the commands that simulate published rows.
#[derive(clap::Args)]
struct RowsRun {
    /// Output format.
    #[arg(long, value_enum, default_value_t = SimFormat::Table)]
    format: SimFormat,
    /// Random seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Worker threads (default: all cores).
    #[arg(long)]
    jobs: Option<usize>,
    /// Write the result to FILE instead of stdout.
    #[arg(long, short = 'o')]
    output: Option<String>,
}

/// A failure, with the exit code it maps to.
enum Failure {
    /// Bad input: exit 2.
    Input(String),
    /// Runtime failure: exit 1.
    Runtime(String),
}

impl From<raidlab_core::Error> for Failure {
    fn from(e: raidlab_core::Error) -> Self {
        Failure::Input(e.to_string())
    }
}

fn read_file(path: &str, what: &str) -> Result<String, Failure> {
    std::fs::read_to_string(path)
        .map_err(|e| Failure::Input(format!("cannot read {what} '{path}': {e}")))
}

fn load_presets(files: &[String]) -> Result<PresetDb, Failure> {
    let mut db = PresetDb::builtin();
    for f in files {
        let text = read_file(f, "presets file")?;
        db.load_str(&text)
            .map_err(|e| Failure::Input(format!("{f}: {e}")))?;
    }
    Ok(db)
}

fn emit(output: &Option<String>, text: &str) -> Result<(), Failure> {
    match output {
        Some(path) => std::fs::write(path, text)
            .map_err(|e| Failure::Runtime(format!("cannot write '{path}': {e}"))),
        None => {
            let mut out = std::io::stdout().lock();
            // A closed pipe (e.g. `| head`) is not an error worth a message.
            let _ = out.write_all(text.as_bytes());
            Ok(())
        }
    }
}

fn run(cli: Cli) -> Result<(), Failure> {
    match cli.cmd {
        Cmd::Sim { job: args, presets } => {
            let db = load_presets(&presets)?;
            let expr = args.expr()?;
            let topo = topology::resolve(&expr, &db)?;
            let w = workload_of(&args.workload, &args.job)?;
            if w.runtime.is_none() {
                // fio's rule: one pass over `size` per job. Say so when that is long.
                if let Ok(cap) = raidlab_sim::volume_capacity(&topo) {
                    let ios = w.size.unwrap_or(cap) / w.bs.max(1) * w.numjobs as u64;
                    if ios > 20_000_000 {
                        let bytes = w.size.unwrap_or(cap) as f64;
                        let span = if bytes >= 1e12 {
                            format!("{:.1} TB", bytes / 1e12)
                        } else {
                            format!("{:.1} GB", bytes / 1e9)
                        };
                        eprintln!(
                            "raidlab: note: no runtime given, so each job makes one pass over {span} ({ios} I/Os in all); add runtime= to bound the run"
                        );
                    }
                }
            }
            let result = raidlab_sim::simulate(&topo, &w, args.seed)
                .map_err(|e| Failure::Input(e.to_string()))?;
            let mut text = result_text(&result, args.format, 0)?;
            if args.format == RunFormat::Table {
                if let Some(Ok(e)) = raidlab_sim::analytic::expect(&topo, &w, args.seed) {
                    text += &table::analytic_line(&result, &e);
                }
            }
            emit(&args.output, &text)
        }
        Cmd::Run {
            job: args,
            engine,
            real,
        } => {
            let expr = args.expr()?;
            let w = workload_of(&args.workload, &args.job)?;
            if w.state.is_some() {
                return Err(Failure::Input(
                    "state= preconditions simulated SSDs; a real run uses the devices as they are"
                        .into(),
                ));
            }
            let opts = real.options(engine);
            let started = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
            let out = raidlab_io::run(&expr, &w, args.seed, &opts).map_err(|e| match e {
                raidlab_io::Error::Input(m) => Failure::Input(m),
                raidlab_io::Error::Runtime(m) => Failure::Runtime(m),
            })?;
            let text = result_text(&out.result, args.format, started)?;
            emit(&args.output, &text)?;
            if let Some(m) = verify_failure(&out.result) {
                return Err(Failure::Runtime(m));
            }
            Ok(())
        }
        Cmd::ExportFio {
            workload,
            job,
            filename,
            engine,
            buffered,
            seed,
        } => {
            let w = workload_of(&workload, &job)?;
            let text = raidlab_io::fio_job(&w, seed, filename.as_deref(), engine.into(), !buffered);
            emit(&None, &text)
        }
        Cmd::Validate {
            file,
            filter,
            run:
                RowsRun {
                    format,
                    seed,
                    jobs,
                    output,
                },
            presets,
        } => {
            let db = load_presets(&presets)?;
            let text = read_file(&file, "CSV file")?;
            let mut rows = raidlab_core::published::parse_csv(&text)
                .map_err(|e| Failure::Input(format!("{file}: {e}")))?;
            if let Some(f) = &filter {
                rows.retain(|r| {
                    r.id.contains(f.as_str())
                        || r.source.contains(f.as_str())
                        || r.reference.contains(f.as_str())
                });
            }
            if rows.is_empty() {
                return Err(Failure::Input(format!("{file}: no rows to validate")));
            }
            let v = simulate_rows(&rows, &db, seed, jobs, false, "validate");
            let text = match format {
                SimFormat::Json => json_text(&table::validation_json(&v))?,
                SimFormat::Table => table::validation_table(&v),
            };
            emit(&output, &text)
        }
        Cmd::Reproduce {
            source,
            run:
                RowsRun {
                    format,
                    seed,
                    jobs,
                    output,
                },
            html,
        } => {
            const SOURCES: [&str; 4] = ["petrov2010", "jdev2009", "admin2015", "intel2013"];
            if source != "all" && !SOURCES.contains(&source.as_str()) {
                return Err(Failure::Input(format!(
                    "unknown document '{source}' (petrov2010, jdev2009, admin2015, intel2013, all)"
                )));
            }
            let db = PresetDb::builtin();
            let mut rows = raidlab_core::published::parse_csv(CALIBRATION)
                .map_err(|e| Failure::Runtime(e.to_string()))?;
            rows.retain(|r| source == "all" || r.source == source);
            let v = simulate_rows(&rows, &db, seed, jobs, true, "reproduce");
            let tables = raidlab_report::reproduce::tables(&v);
            if let Some(dir) = &html {
                write_html(dir, &source, &SOURCES, &tables, &v, seed)?;
            }
            let text = match format {
                SimFormat::Json => json_text(&raidlab_report::reproduce::to_json(&tables, &v))?,
                SimFormat::Table => {
                    let s = v.stats();
                    let mut t = raidlab_report::reproduce::render(&tables);
                    t += &format!("\nall: {} rows, median |error| {:.1}%, p90 {:.1}%, {} within 25%, {} failed\n", s.rows, s.median, s.p90, s.within_25pct, v.failed.len());
                    t
                }
            };
            emit(&output, &text)
        }
        Cmd::Model {
            level,
            drives,
            pattern,
            drive,
            bs,
            state,
            one_drive,
            format,
            presets,
        } => {
            use raidlab_core::analytic::{cost, Pattern};
            let lvl = raidlab_layout::Level::from_word(&level).ok_or_else(|| {
                Failure::Input(format!(
                    "unknown level '{level}' (raid0, raid1, raid5, raid6, raid10)"
                ))
            })?;
            let patterns = match &pattern {
                Some(p) => vec![Pattern::parse(p)?],
                None => Pattern::ALL.to_vec(),
            };
            let bs = bs
                .map(|b| {
                    raidlab_core::units::parse_size(&b)
                        .ok()
                        .filter(|&x| x > 0 && x % 512 == 0)
                        .ok_or_else(|| Failure::Input(format!("--bs: bad block size '{b}'")))
                })
                .transpose()?;
            if let Some(x) = one_drive.filter(|x| !(x.is_finite() && *x > 0.0)) {
                return Err(Failure::Input(format!(
                    "--one-drive: {x} is not a positive figure"
                )));
            }
            // The drive simulated alone, unless its figure is given.
            let alone = match one_drive {
                Some(_) => None,
                None => {
                    let t = topology::resolve(&drive, &load_presets(&presets)?)?;
                    if !matches!(t.root, topology::Node::Device(_)) {
                        return Err(Failure::Input(format!(
                            "--drive: '{drive}' is not a drive preset"
                        )));
                    }
                    Some(t)
                }
            };
            let mut rows = Vec::new();
            for p in patterns {
                let c = cost(lvl, drives, p)?;
                let (figure, source) = match (&alone, one_drive) {
                    (Some(t), _) => {
                        let mut words = raidlab_sim::analytic::drive_workload(p, bs);
                        if let Some(st) = &state {
                            words += &format!(" state={st}");
                        }
                        let w = Workload::parse(&words)?;
                        let f = raidlab_sim::analytic::drive_figure(t, &w, p)
                            .map_err(|e| Failure::Input(e.to_string()))?;
                        (f, format!("{drive} alone, {words}"))
                    }
                    (None, x) => (x.unwrap_or_default(), "given".to_string()),
                };
                rows.push(table::ModelRow {
                    cost: c,
                    one_drive: figure,
                    source,
                });
            }
            let text = match format {
                SimFormat::Json => json_text(&table::model_json(&rows))?,
                SimFormat::Table => table::model_table(&rows),
            };
            emit(&None, &text)
        }
        Cmd::Sweep {
            topology: topo_t,
            workload,
            vary,
            engine,
            seed,
            format,
            output,
            shard,
            jobs,
            io_engine,
            real,
            presets,
        } => {
            use raidlab_report::sweep::{self, Sweep, Vary};
            let sw = |e: sweep::SweepError| Failure::Input(e.0);
            let topo_t = match topo_t.strip_prefix('@') {
                Some(path) => read_file(path, "topology file")?,
                None => topo_t,
            };
            let sweep = Sweep {
                topology: topo_t,
                workload,
                vary: vary
                    .iter()
                    .map(|v| Vary::parse(v))
                    .collect::<Result<_, _>>()
                    .map_err(sw)?,
                engine: match engine {
                    SweepEngine::Sim => "sim",
                    SweepEngine::Real => "real",
                }
                .into(),
                seed,
            };
            sweep.check().map_err(sw)?;
            let shard = shard
                .map(|s| sweep::parse_shard(&s))
                .transpose()
                .map_err(sw)?;
            let runs = sweep.runs(shard);
            let db = load_presets(&presets)?;
            let label = |r: &sweep::Run| {
                let v: Vec<String> = sweep
                    .vary
                    .iter()
                    .zip(&r.values)
                    .map(|(v, x)| format!("{}={x}", v.name))
                    .collect();
                format!("run {} ({})", r.index, v.join(" "))
            };
            // Every run's input is checked before anything runs.
            let mut inputs = Vec::new();
            for r in &runs {
                let w = Workload::parse(&r.workload)
                    .map_err(|e| Failure::Input(format!("{}: {e}", label(r))))?;
                let t = match engine {
                    SweepEngine::Sim => Some(
                        topology::resolve(&r.topology, &db)
                            .map_err(|e| Failure::Input(format!("{}: {e}", label(r))))?,
                    ),
                    SweepEngine::Real => {
                        raidlab_io::topo::parse_real(&r.topology).map_err(|e| {
                            Failure::Input(format!("{}: {}", label(r), io_message(e)))
                        })?;
                        None
                    }
                };
                inputs.push((t, w));
            }
            let opts = real.options(io_engine);
            let threads = match engine {
                SweepEngine::Real => 1,
                SweepEngine::Sim => threads(jobs),
            };
            let progress = progress_bar("sweep");
            let results = raidlab_core::par::map(inputs.len(), threads, &progress, |i| {
                let (t, w) = &inputs[i];
                match t {
                    Some(t) => raidlab_sim::simulate(t, w, seed)
                        .map_err(|e| Failure::Input(format!("{}: {e}", label(&runs[i])))),
                    None => {
                        let out = raidlab_io::run(&runs[i].topology, w, seed, &opts).map_err(
                            |e| match e {
                                raidlab_io::Error::Input(m) => {
                                    Failure::Input(format!("{}: {m}", label(&runs[i])))
                                }
                                raidlab_io::Error::Runtime(m) => {
                                    Failure::Runtime(format!("{}: {m}", label(&runs[i])))
                                }
                            },
                        )?;
                        if let Some(m) = verify_failure(&out.result) {
                            return Err(Failure::Runtime(format!("{}: {m}", label(&runs[i]))));
                        }
                        Ok(out.result)
                    }
                }
            });
            let mut rows = Vec::new();
            for (run, r) in runs.iter().zip(results) {
                rows.push(sweep::row(run, &r?));
            }
            let text = match format {
                SweepFormat::Csv => sweep::to_csv(&sweep, &rows),
                SweepFormat::Json => json_text(&sweep::to_json(&sweep, &rows, shard))?,
            };
            emit(&output, &text)
        }
        Cmd::Plot {
            results,
            x,
            y,
            series,
            filters,
            kind,
            log_x,
            log_y,
            title,
            output,
        } => {
            use raidlab_report::plot::{self, PlotError};
            let perr = |e: PlotError| match e {
                PlotError::Input(m) => Failure::Input(m),
                PlotError::Output(m) => Failure::Runtime(m),
            };
            let ext = std::path::Path::new(&output)
                .extension()
                .and_then(|e| e.to_str())
                .map(str::to_ascii_lowercase);
            let png = match ext.as_deref() {
                Some("svg") => false,
                Some("png") => true,
                _ => {
                    return Err(Failure::Input(format!(
                        "-o {output}: the file name must end in .svg or .png"
                    )))
                }
            };
            let mut where_ = Vec::new();
            for f in &filters {
                let Some((k, v)) = f.split_once('=') else {
                    return Err(Failure::Input(format!(
                        "--where '{f}': expected COLUMN=VALUE"
                    )));
                };
                where_.push((k.trim().to_string(), v.trim().to_string()));
            }
            let table = plot::Table::parse(&read_file(&results, "results file")?).map_err(perr)?;
            let spec = plot::PlotSpec {
                x,
                y,
                series,
                filters: where_,
                kind: kind.map(|k| match k {
                    KindArg::Line => plot::Kind::Line,
                    KindArg::Bar => plot::Kind::Bar,
                }),
                log_x,
                log_y,
                title,
            };
            let chart = plot::chart(&table, &spec).map_err(perr)?;
            if png {
                chart.png(std::path::Path::new(&output)).map_err(perr)
            } else {
                let svg = chart.svg().map_err(perr)?;
                emit(&Some(output), &svg)
            }
        }
        Cmd::Merge { slices, output } => {
            let mut texts = Vec::new();
            for s in &slices {
                texts.push((s.clone(), read_file(s, "slice")?));
            }
            let text = raidlab_report::sweep::merge(&texts).map_err(|e| Failure::Input(e.0))?;
            emit(&output, &text)
        }
        Cmd::Presets {
            name,
            format,
            presets,
        } => {
            let db = load_presets(&presets)?;
            let text = match name {
                Some(n) => {
                    let Some(p) = db.get(&n) else {
                        return Err(Failure::Input(format!(
                            "unknown preset '{n}' (see 'raidlab presets')"
                        )));
                    };
                    match format {
                        PresetFormat::Toml => db.to_toml(&n).unwrap_or_default(),
                        PresetFormat::Table => {
                            table::preset_detail(&n, p, &db.to_toml(&n).unwrap_or_default())
                        }
                    }
                }
                None => match format {
                    PresetFormat::Table => table::preset_list(&db),
                    PresetFormat::Toml => {
                        let mut s = String::new();
                        for (n, _) in db.iter() {
                            s += &format!(
                                "# ---- {n} ----\n{}\n",
                                db.to_toml(n).unwrap_or_default()
                            );
                        }
                        s
                    }
                },
            };
            let _ = Preset::kind; // presets are listed by kind in the table
            emit(&None, &text)
        }
    }
}

/// One run's result in the format asked for.
fn result_text(
    r: &raidlab_core::result::RunResult,
    format: RunFormat,
    timestamp: u64,
) -> Result<String, Failure> {
    match format {
        RunFormat::Json => json_text(r),
        RunFormat::FioJson => json_text(&raidlab_report::fio::fio_json(r, timestamp)),
        RunFormat::Table => Ok(table::sim_table(r)),
    }
}

/// `reproduce --html DIR`: a page per document and an index.
fn write_html(
    dir: &str,
    source: &str,
    all: &[&str],
    tables: &[raidlab_report::reproduce::DocTable<'_>],
    v: &raidlab_sim::validate::Validation,
    seed: u64,
) -> Result<(), Failure> {
    use raidlab_report::html;
    use raidlab_sim::validate::ErrorStats;
    std::fs::create_dir_all(dir)
        .map_err(|e| Failure::Runtime(format!("cannot create '{dir}': {e}")))?;
    let sources: Vec<&str> = if source == "all" {
        all.to_vec()
    } else {
        vec![source]
    };
    let mut index = Vec::new();
    for s in sources {
        let path = std::path::Path::new(dir).join(format!("{s}.html"));
        let text = html::page(s, tables, &v.failed, seed);
        std::fs::write(&path, text)
            .map_err(|e| Failure::Runtime(format!("cannot write '{}': {e}", path.display())))?;
        eprintln!("raidlab: wrote {}", path.display());
        let st = ErrorStats::of(v.rows.iter().filter(|r| r.row.source == s));
        index.push((s.to_string(), st));
    }
    let path = std::path::Path::new(dir).join("index.html");
    std::fs::write(&path, html::index(&index))
        .map_err(|e| Failure::Runtime(format!("cannot write '{}': {e}", path.display())))?;
    Ok(())
}

/// Pretty JSON text of a serialisable value, newline-terminated.
fn json_text(v: &impl serde::Serialize) -> Result<String, Failure> {
    serde_json::to_string_pretty(v)
        .map(|t| t + "\n")
        .map_err(|e| Failure::Runtime(e.to_string()))
}

/// Simulate published rows on `jobs` threads (default: all cores), with a
/// progress line on stderr when it is a terminal.
fn simulate_rows(
    rows: &[raidlab_core::published::Row],
    db: &PresetDb,
    seed: u64,
    jobs: Option<usize>,
    with_analytic: bool,
    what: &'static str,
) -> raidlab_sim::validate::Validation {
    raidlab_sim::validate::validate(
        rows,
        db,
        seed,
        threads(jobs),
        with_analytic,
        &progress_bar(what),
    )
}

/// Worker threads: as asked, or one per core.
fn threads(jobs: Option<usize>) -> usize {
    jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// The verify failure of a real run, if blocks mismatched.
fn verify_failure(r: &raidlab_core::result::RunResult) -> Option<String> {
    let bad = r
        .real
        .as_ref()
        .and_then(|x| x.verify.as_ref())
        .map_or(0, |v| v.mismatches);
    (bad > 0).then(|| format!("verify: {bad} mismatching 512-byte blocks"))
}

fn io_message(e: raidlab_io::Error) -> String {
    match e {
        raidlab_io::Error::Input(m) | raidlab_io::Error::Runtime(m) => m,
    }
}

/// A progress callback that draws on stderr only when stderr is a terminal.
fn progress_bar(what: &'static str) -> impl Fn(usize, usize) + Sync {
    use std::io::IsTerminal;
    let tty = std::io::stderr().is_terminal();
    let start = std::time::Instant::now();
    move |done, total| {
        if tty {
            const WIDTH: usize = 30;
            let filled = (done * WIDTH).checked_div(total).unwrap_or(WIDTH);
            let secs = start.elapsed().as_secs_f64();
            let eta = if done > 0 && done < total {
                format!(
                    ", ~{:.0} s left",
                    secs / done as f64 * (total - done) as f64
                )
            } else {
                String::new()
            };
            eprint!(
                "\r{what} [{}{}] {done}/{total} runs, {secs:.0} s{eta}   ",
                "#".repeat(filled),
                ".".repeat(WIDTH - filled)
            );
            if done == total {
                eprintln!();
            }
        }
    }
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        // Usage errors: one line and status 2, like every other bad input.
        Err(e) if e.use_stderr() => {
            // clap's message up to its usage block, on one line.
            let text = e.render().to_string();
            let msg: Vec<&str> = text
                .lines()
                .map(str::trim)
                .take_while(|l| !l.is_empty() && !l.starts_with("Usage:"))
                .collect();
            let msg = msg.join(" ");
            let msg = msg.strip_prefix("error: ").unwrap_or(&msg);
            eprintln!("raidlab: error: {msg} (see 'raidlab --help')");
            return ExitCode::from(2);
        }
        Err(e) => e.exit(),
    };
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Input(m)) => {
            eprintln!("raidlab: error: {}", m.replace('\n', " "));
            ExitCode::from(2)
        }
        Err(Failure::Runtime(m)) => {
            eprintln!("raidlab: error: {}", m.replace('\n', " "));
            ExitCode::from(1)
        }
    }
}
