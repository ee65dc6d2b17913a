//! `raidlab sweep`: the product of varied values, one run a row.

use crate::args::{EngineArg, PresetFiles, RealArgs};
use crate::common::{emit, expression, json_text, progress_bar, threads, verify_failure};
use crate::failure::Failure;
use clap::ValueEnum;
use raidlab_core::preset::PresetDb;
use raidlab_core::result::RunResult;
use raidlab_core::topology::{self, Topology};
use raidlab_core::workload::Workload;
use raidlab_report::sweep::{self, Run, Sweep, Vary};

/// How a sweep is written.
#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum Format {
    /// One row per run, with a header.
    Csv,
    /// `{"sweep", "columns", "rows"}`.
    Json,
}

/// Which engine runs a sweep.
#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum Engine {
    /// The simulator, runs in parallel.
    Sim,
    /// The real engine, one run after another.
    Real,
}

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
#[derive(clap::Args)]
pub struct Args {
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
    #[arg(long, value_enum, default_value_t = Engine::Sim)]
    engine: Engine,
    /// Random seed of every run.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Csv)]
    format: Format,
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
    #[command(flatten)]
    presets: PresetFiles,
}

/// Run `sweep`.
pub fn run(args: Args) -> Result<(), Failure> {
    let sweep = Sweep {
        topology: expression(&args.topology)?,
        workload: args.workload.clone(),
        vary: args
            .vary
            .iter()
            .map(|v| Vary::parse(v))
            .collect::<Result<_, _>>()?,
        engine: match args.engine {
            Engine::Sim => "sim",
            Engine::Real => "real",
        }
        .into(),
        seed: args.seed,
    };
    sweep.check()?;
    let shard = args.shard.as_deref().map(sweep::parse_shard).transpose()?;
    let runs = sweep.runs(shard);
    let db = args.presets.load()?;
    let inputs = check_runs(&sweep, &runs, &db, args.engine, args.real.create)?;
    let results = execute(&sweep, &runs, &inputs, &args)?;
    let rows: Vec<_> = runs
        .iter()
        .zip(&results)
        .map(|(run, r)| sweep::row(run, r))
        .collect();
    let text = match args.format {
        Format::Csv => sweep::to_csv(&sweep, &rows),
        Format::Json => json_text(&sweep::to_json(&sweep, &rows, shard))?,
    };
    emit(&args.output, &text)
}

/// A run's name in messages: its number and varied values.
fn label(sweep: &Sweep, r: &Run) -> String {
    let v: Vec<String> = sweep
        .vary
        .iter()
        .zip(&r.values)
        .map(|(v, x)| format!("{}={x}", v.name))
        .collect();
    format!("run {} ({})", r.index, v.join(" "))
}

/// Every run's input, checked before anything runs: the workload, and the
/// resolved topology of a simulation. A real sweep's expressions are parsed
/// here; whether their paths may be used is decided by the real engine.
fn check_runs(
    sweep: &Sweep,
    runs: &[Run],
    db: &PresetDb,
    engine: Engine,
    create: bool,
) -> Result<Vec<(Option<Topology>, Workload)>, Failure> {
    let inputs = runs
        .iter()
        .map(|r| {
            let at = |e: Failure| e.context(label(sweep, r));
            let w = Workload::parse(&r.workload).map_err(|e| at(e.into()))?;
            let t = match engine {
                Engine::Sim => Some(topology::resolve(&r.topology, db).map_err(|e| at(e.into()))?),
                Engine::Real => {
                    raidlab_io::topo::parse_real(&r.topology).map_err(|e| at(e.into()))?;
                    None
                }
            };
            Ok((t, w))
        })
        .collect::<Result<Vec<_>, Failure>>()?;
    if engine == Engine::Real {
        let seq: Vec<(&str, &Workload)> = runs
            .iter()
            .zip(&inputs)
            .map(|(r, (_, w))| (r.topology.as_str(), w))
            .collect();
        raidlab_io::check_sequence(&seq, create)
            .map_err(|(i, e)| Failure::from(e).context(label(sweep, &runs[i])))?;
    }
    Ok(inputs)
}

/// Run every checked input: simulations in parallel, real runs in turn.
fn execute(
    sweep: &Sweep,
    runs: &[Run],
    inputs: &[(Option<Topology>, Workload)],
    args: &Args,
) -> Result<Vec<RunResult>, Failure> {
    let threads = match args.engine {
        Engine::Real => 1,
        Engine::Sim => threads(args.jobs)?,
    };
    let progress = progress_bar("sweep");
    let results = raidlab_core::par::map(inputs.len(), threads, &progress, |i| {
        let (t, w) = &inputs[i];
        let one = match t {
            Some(t) => raidlab_sim::simulate(t, w, args.seed).map_err(Failure::from),
            None => real_run(
                &runs[i].topology,
                w,
                args.seed,
                &args.real.options(args.io_engine, w),
            ),
        };
        one.map_err(|e| e.context(label(sweep, &runs[i])))
    });
    results.into_iter().collect()
}

/// One real run of a sweep; a verify mismatch fails it.
fn real_run(
    expr: &str,
    w: &Workload,
    seed: u64,
    opts: &raidlab_io::RunOptions,
) -> Result<RunResult, Failure> {
    let out = raidlab_io::run(expr, w, seed, opts)?;
    match verify_failure(&out.result) {
        Some(f) => Err(f),
        None => Ok(out.result),
    }
}
