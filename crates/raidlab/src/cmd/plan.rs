//! `raidlab plan`: the configurations that meet a workload, a capacity and
//! a failure tolerance, ranked, with the reason.

pub use crate::cmd::plan_args::{Args, Format};
use crate::cmd::plan_shard as shard;
use crate::common::{capacity_bytes, emit, json_text, progress_bar, threads};
use crate::failure::Failure;
use raidlab_core::preset::{Preset, PresetDb};
use raidlab_core::topology::Level;
use raidlab_studies::plan::{self, Effort, Objective, Outcome, PlanError, Question, Row};
use serde_json::json;

/// Bounds on what a question may ask for.
const MAX_DRIVES: u32 = 256;
/// Most configurations a question may span before any is checked (each
/// is a resolved topology: about a kilobyte to a few).
const MAX_ENUMERATED: u64 = 200_000;
/// A workload set larger than this is not a plan but a sweep.
const MAX_WORKLOADS: usize = 16;

impl From<PlanError> for Failure {
    fn from(e: PlanError) -> Self {
        Failure::input(e.to_string())
    }
}

/// Run `plan`.
pub fn run(args: Args) -> Result<(), Failure> {
    let texts = shard::preset_texts(&args.presets.files)?;
    let (db, q, cands) = setup(&args, &texts)?;
    let effort = Effort {
        threads: threads(args.jobs)?,
        top: args.top.max(1),
        exhaustive: args.exhaustive,
    };
    // Every input is checked before the line that says what will run.
    let shard = args.shard.as_deref().map(shard::parse).transpose()?;
    eprintln!("{}", plan_intro(cands.len(), effort));
    let progress = progress_bar("plan");
    if let Some(s) = shard {
        let work = plan::run_shard(&cands, &q, &db, effort, s, &progress)?;
        let doc = shard::document(&args, &texts, s, cands.len(), &work);
        return emit(&args.output, &json_text(&doc)?);
    }
    let mut out = plan::run(cands, &q, &db, effort, &progress)?;
    plan::degrade(&mut out.rows, &q, &db, effort.threads, effort.top);
    render(&args, &q, &out)
}

/// The line `plan` prints before it simulates: how many configurations
/// it will look at, and how.
fn plan_intro(n: usize, effort: Effort) -> String {
    let how = if effort.exhaustive {
        "each simulated in full (--exhaustive)".to_string()
    } else if n > effort.top * plan::SCREEN_KEEP {
        format!(
            "screening them with runs of {}-{} ms, then the best {} in full, on {} thread{}",
            plan::SCREEN_MIN_NS / 1_000_000,
            plan::SCREEN_RUNTIME_NS / 1_000_000,
            effort.top * plan::SCREEN_KEEP,
            effort.threads,
            if effort.threads == 1 { "" } else { "s" }
        )
    } else {
        "each simulated in full".to_string()
    };
    format!(
        "plan: {n} configuration{} to consider, {how}",
        if n == 1 { "" } else { "s" }
    )
}

/// The presets (built-in plus the files' `texts`), the question and its
/// candidates with their classic-model figures.
fn setup(
    args: &Args,
    texts: &[(String, String)],
) -> Result<(PresetDb, Question, Vec<plan::Candidate>), Failure> {
    let mut db = PresetDb::builtin();
    for (f, text) in texts {
        db.load_str(text)
            .map_err(|e| Failure::input(format!("{f}: {e}")))?;
    }
    if let Some(h) = &args.host {
        use_host(&mut db, h)?;
    }
    let q = question(args, &db)?;
    let mut cands = plan::candidates(&q, &db)?;
    if cands.is_empty() {
        return Err(Failure::input(
            "no configuration of these drives and controllers holds --capacity and survives --survive failures within --max-drives",
        ));
    }
    plan::set_bounds(&mut cands, &q, &db)?;
    Ok((db, q, cands))
}

/// `raidlab merge` of plan shard files: the unsharded plan's output.
pub fn merge(
    slices: &[(String, String)],
    output: &Option<String>,
    jobs: Option<usize>,
) -> Result<(), Failure> {
    let shard::Joined {
        args,
        presets,
        work,
    } = shard::join(slices)?;
    let (db, q, cands) = setup(&args, &presets)?;
    let effort = Effort {
        threads: threads(jobs)?,
        top: args.top.max(1),
        exhaustive: args.exhaustive,
    };
    let out = plan::replay(&cands, &q, &db, effort, &shard::rows_of(work, &cands)?)?;
    render(
        &Args {
            output: output.clone(),
            ..args
        },
        &q,
        &out,
    )
}

/// Print (and with --html write) the outcome as the arguments ask.
fn render(args: &Args, q: &Question, out: &Outcome) -> Result<(), Failure> {
    if let Some(dir) = &args.html {
        write_html(dir, q, out)?;
    }
    let text = match args.format {
        Format::Table => table(q, out, args.top),
        Format::Json => json_text(&to_json(q, out, args.top))?,
        Format::Csv => csv(q, out, args.top),
    };
    emit(&args.output, &text)
}

/// `--html DIR`: DIR/plan.html with every measured row.
fn write_html(dir: &str, q: &Question, out: &Outcome) -> Result<(), Failure> {
    let lines = vec![
        format!("workload: {}", workload_text(q)),
        format!("usable capacity at least {}, surviving {} failure(s)", gb(q.capacity), q.survive),
        format!("drives: {}", q.drives.join(", ")),
        format!("objective: {}", q.objective.word()),
        format!(
            "{} configurations considered: {} pruned by the analytic model, {} screened out, {} measured",
            out.considered,
            out.pruned,
            out.screened,
            out.considered - out.pruned - out.screened
        ),
    ];
    let page = raidlab_report::plan::page(
        &lines,
        &out.rows,
        q.objective,
        &plan::why(&out.rows, q.objective),
    );
    let dir = std::path::Path::new(dir);
    std::fs::create_dir_all(dir)
        .and_then(|_| std::fs::write(dir.join("plan.html"), page))
        .map_err(|e| Failure::runtime(format!("--html {}: {e}", dir.display())))
}

/// Make preset `name` (a host) the host every configuration runs on.
fn use_host(db: &mut PresetDb, name: &str) -> Result<(), Failure> {
    match db.get(name) {
        Some(Preset::Host(_)) if name == "host" => Ok(()),
        // Derived from it whole, its `[impls.*]` tables included (a copy of
        // its file under `[host]` would leave them top-level tables).
        Some(Preset::Host(_)) => db
            .load_str(&format!("[host]\nbase = \"{name}\"\n"))
            .map_err(|e| Failure::input(format!("--host {name}: {e}"))),
        _ => Err(Failure::input(format!(
            "--host: '{name}' is not a host preset"
        ))),
    }
}

/// The question's size: how many workloads, drives, controllers and
/// configurations it may ask about.
fn check_bounds(a: &Args) -> Result<(), Failure> {
    if a.workload.len() > MAX_WORKLOADS {
        return Err(Failure::input(format!("at most {MAX_WORKLOADS} workloads")));
    }
    if a.max_drives == 0 || a.max_drives > MAX_DRIVES {
        return Err(Failure::input(format!("--max-drives: 1 to {MAX_DRIVES}")));
    }
    if a.max_controllers == 0 || a.max_controllers > 16 {
        return Err(Failure::input("--max-controllers: 1 to 16"));
    }
    if a.drives.len() > 16 || a.controllers.len() > 16 {
        return Err(Failure::input(
            "--drives and --controllers: at most 16 names each",
        ));
    }
    // Expressions enumerated: drives × levels × counts × (md stripes +
    // controllers × controller counts × stripes × policies × layouts).
    let bound = a.drives.len() as u64
        * a.op.len().max(1) as u64
        * 5
        * a.max_drives as u64
        * (2 + a.controllers.len() as u64 * a.max_controllers as u64 * 12);
    if bound > MAX_ENUMERATED {
        return Err(Failure::input(format!(
            "the question spans up to {bound} configurations (at most {MAX_ENUMERATED}): fewer --drives, --controllers, --max-drives or --max-controllers"
        )));
    }
    if a.survive > 3 {
        return Err(Failure::input("--survive: 0 to 3"));
    }
    Ok(())
}

/// The question the arguments ask, checked.
fn question(a: &Args, db: &PresetDb) -> Result<Question, Failure> {
    check_bounds(a)?;
    let capacity = capacity_bytes(&a.capacity)?;
    let controllers = a
        .controllers
        .iter()
        .map(|c| match c.as_str() {
            "none" => Ok(None),
            c if matches!(db.get(c), Some(Preset::Controller(_))) => Ok(Some(c.to_string())),
            c => Err(Failure::input(format!(
                "--controllers: '{c}' is not a controller preset"
            ))),
        })
        .collect::<Result<Vec<_>, _>>()?;
    for (name, v) in [("--min-years", a.min_years), ("--budget", a.budget)] {
        if v.is_some_and(|v| !(v.is_finite() && v >= 0.0)) {
            return Err(Failure::input(format!("{name}: a number ≥ 0")));
        }
    }
    Ok(Question {
        workloads: a
            .workload
            .iter()
            .cloned()
            .chain(
                a.trace
                    .iter()
                    .map(|t| format!("read_iolog={t} replay_no_stall=1 iodepth=32")),
            )
            .map(|w| weighted(&w))
            .collect::<Result<_, _>>()?,
        capacity,
        survive: a.survive,
        drives: a.drives.clone(),
        levels: levels(&a.levels)?,
        op_pct: op_pcts(&a.op)?,
        controllers,
        max_drives: a.max_drives,
        max_controllers: a.max_controllers,
        objective: Objective::parse(&a.objective).unwrap_or(Objective::Iops),
        min_years: a.min_years,
        budget: a.budget,
        seed: a.seed,
    })
}

/// `--levels`: RAID levels an array may have (not concat).
fn levels(words: &[String]) -> Result<Vec<Level>, Failure> {
    words
        .iter()
        .map(|l| match Level::from_word(l) {
            Some(Level::Concat) | None => Err(Failure::input(format!(
                "--levels: '{l}' is not raid0, raid1, raid10, raid4, raid5 or raid6"
            ))),
            Some(l) => Ok(l),
        })
        .collect()
}

/// `--op`: at most 4 over-provisioning shares, each 0 to 90 %, sorted.
fn op_pcts(op: &[u32]) -> Result<Vec<u32>, Failure> {
    if op.len() > 4 || op.iter().any(|&o| o > 90) {
        return Err(Failure::input("--op: at most 4 values, each 0 to 90 (%)"));
    }
    let mut op = op.to_vec();
    op.sort_unstable();
    op.dedup();
    Ok(op)
}

/// `WORKLOAD[@WEIGHT]`, with `runtime=2` added where no runtime is given.
fn weighted(text: &str) -> Result<(String, f64), Failure> {
    let (w, weight) = match text.rsplit_once('@') {
        Some((w, f)) => {
            let f: f64 = f.trim().trim_end_matches('%').parse().map_err(|_| {
                Failure::input(format!("-w '{text}': the weight after @ is not a number"))
            })?;
            if !(f.is_finite() && f > 0.0) {
                return Err(Failure::input(format!(
                    "-w '{text}': the weight must be > 0"
                )));
            }
            (w, f)
        }
        None => (text, 1.0),
    };
    Ok((plan::planned_workload(w)?, weight))
}

/// The workload text of a question: one workload, or `W1 @0.7 + W2 @0.3`.
fn workload_text(q: &Question) -> String {
    let total: f64 = q.workloads.iter().map(|(_, f)| f).sum();
    if let [(w, _)] = q.workloads.as_slice() {
        return w.clone();
    }
    q.workloads
        .iter()
        .map(|(w, f)| format!("{w} @{:.3}", f / total))
        .collect::<Vec<_>>()
        .join(" + ")
}

/// Bytes in decimal GB or TB, as capacities are sold.
fn gb(b: u64) -> String {
    if b >= 1_000_000_000_000 {
        format!("{:.2} TB", b as f64 / 1e12)
    } else {
        format!("{:.0} GB", b as f64 / 1e9)
    }
}

/// An optional figure, `-` when absent.
fn fmt_opt(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{v:.digits$}"))
}

/// The ranked table.
fn table(q: &Question, out: &Outcome, top: usize) -> String {
    let mut o = format!(
        "workload   {}\nquestion   {} usable, survive {} failure(s), objective {}\nconsidered {} configurations: {} pruned by the analytic model, {} by a screening run of at most {} s, {} measured; {} short of --min-years{}\n\n",
        workload_text(q),
        gb(q.capacity),
        q.survive,
        q.objective.word(),
        out.considered,
        out.pruned,
        out.screened,
        plan::SCREEN_RUNTIME_NS as f64 / 1e9,
        out.considered - out.pruned - out.screened,
        out.worn,
        tripped_words(out.tripped)
    );
    o += &format!(
        "{:>4} {:>10} {:>8} {:>8} {:>9} {:>8} {:>7} {:>4} {:>10} {:>9}  {:<24} {}\n",
        "rank",
        "IOPS",
        "MB/s",
        "p99 ms",
        "usable",
        "cost",
        "TBW yrs",
        "fail",
        "degr IOPS",
        "rebuild h",
        "limited by",
        "topology"
    );
    for (i, r) in out.rows.iter().take(top).enumerate() {
        o += &format!(
            "{:>4} {:>10.0} {:>8.1} {:>8.3} {:>9} {:>8} {:>7} {:>4} {:>10} {:>9}  {:<24} {}{}\n",
            i + 1,
            r.iops,
            r.mbps,
            r.lat_p99_ms,
            gb(r.candidate.usable_bytes),
            fmt_opt(r.candidate.cost, 0),
            fmt_opt(r.endurance_years, 1),
            r.candidate.survives,
            fmt_opt(r.degraded_iops, 0),
            fmt_opt(r.rebuild_hours, 1),
            r.bottleneck,
            r.candidate.topology,
            if r.steady { "" } else { "  (not steady)" },
        );
    }
    o + &format!("\nwhy: {}\n", plan::why(&out.rows, q.objective))
}

/// A row as JSON.
fn row_json(q: &Question, rows: &[Row], i: usize) -> serde_json::Value {
    let r = &rows[i];
    json!({
        "rank": i + 1,
        "topology": r.candidate.topology,
        "workload": workload_text(q),
        "usable_bytes": r.candidate.usable_bytes,
        "survives": r.candidate.survives,
        "drives": r.candidate.drives,
        "drive": r.candidate.drive,
        "op_pct": r.candidate.op_pct,
        "iops": r.iops,
        "mbps": r.mbps,
        "lat_p99_ms": r.lat_p99_ms,
        "bottleneck": r.bottleneck,
        "cost": r.candidate.cost,
        "endurance_years": r.endurance_years,
        "steady": r.steady,
        "degraded_iops": r.degraded_iops,
        "rebuild_hours": r.rebuild_hours,
        "why": plan::row_why(rows, i, q.objective),
    })
}

/// `{"plan": {the question}, "rows": [...]}`, best first.
fn to_json(q: &Question, out: &Outcome, top: usize) -> serde_json::Value {
    let rows: Vec<_> = (0..out.rows.len().min(top))
        .map(|i| row_json(q, &out.rows, i))
        .collect();
    json!({
        "plan": {
            "workloads": q.workloads.iter().map(|(w, f)| json!({"workload": w, "weight": f})).collect::<Vec<_>>(),
            "capacity_bytes": q.capacity,
            "survive": q.survive,
            "drives": q.drives,
            "op_pct": q.op_pct,
            "controllers": q.controllers.iter().map(|c| c.clone().unwrap_or_else(|| "none".into())).collect::<Vec<_>>(),
            "max_drives": q.max_drives,
            "max_controllers": q.max_controllers,
            "objective": q.objective.word(),
            "min_years": q.min_years,
            "budget": q.budget,
            "seed": q.seed,
            "considered": out.considered,
            "pruned": out.pruned,
            "screened_out": out.screened,
            "short_of_min_years": out.worn,
            "tripped_a_guard": out.tripped,
        },
        "rows": rows,
    })
}

/// CSV: one row per configuration, best first.
fn csv(q: &Question, out: &Outcome, top: usize) -> String {
    let mut o = String::from(
        "rank,topology,workload,usable_bytes,survives,drives,drive,iops,mbps,lat_p99_ms,bottleneck,cost,endurance_years,steady,degraded_iops,rebuild_hours\n",
    );
    let quote = |s: &str| format!("\"{}\"", s.replace('"', "\"\""));
    for (i, r) in out.rows.iter().take(top).enumerate() {
        o += &format!(
            "{},{},{},{},{},{},{},{:.1},{:.2},{:.4},{},{},{},{},{},{}\n",
            i + 1,
            quote(&r.candidate.topology),
            quote(&workload_text(q)),
            r.candidate.usable_bytes,
            r.candidate.survives,
            r.candidate.drives,
            r.candidate.drive,
            r.iops,
            r.mbps,
            r.lat_p99_ms,
            quote(&r.bottleneck),
            r.candidate.cost.map_or(String::new(), |c| c.to_string()),
            r.endurance_years
                .map_or(String::new(), |y| format!("{y:.3}")),
            r.steady,
            r.degraded_iops.map_or(String::new(), |v| format!("{v:.1}")),
            r.rebuild_hours.map_or(String::new(), |v| format!("{v:.2}"))
        );
    }
    o
}

/// `; N failed the workload's guards` where a job of N measured rows
/// tripped `max_latency`, `rate_min` or `rate_iops_min`.
fn tripped_words(n: usize) -> String {
    if n == 0 {
        String::new()
    } else {
        format!("; {n} failed the workload's guards (max_latency, rate_min or rate_iops_min)")
    }
}
