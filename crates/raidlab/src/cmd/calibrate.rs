//! `raidlab calibrate`: measure a drive (or read its published figures) and
//! fit an SSD preset to it.

use crate::args::PresetFiles;
use crate::common::{capacity_bytes, emit, read_data, threads};
use crate::failure::Failure;
use raidlab_core::preset::{Preset, PresetDb, SsdParams};
use raidlab_core::workload::Workload;
use raidlab_studies::fit::{
    self, observation, Fit, Observation, Probe, FREE, PROBES, WRITE_FIELDS, WRITE_PATH,
};

/// Fit an SSD preset to a drive: run the probe suite on it, or take
/// published figures, and write a preset TOML whose every value names the
/// measurement it came from.
///
/// TARGET is a file or block device (measured through the real engine,
/// with its safety rules: devices in use or with signatures are refused
/// unless --force, and write probes destroy the target's data), or
/// `sim:PRESET` (the simulator stands in for the drive, which is how the fit
/// itself is tested). The suite (docs/calibrate.md): random reads at QD 1,
/// 4 and 32, 64 KiB random and 128 KiB sequential reads, sequential and
/// small random writes, a random-write steady state and synchronous writes.
#[derive(clap::Args)]
pub struct Args {
    /// A file, a block device, or sim:PRESET.
    #[arg(required_unless_present = "from")]
    target: Option<String>,
    /// Fit published single-drive figures instead (published-measurement
    /// CSV: id,source,ref,topology,workload,metric,value,note).
    #[arg(long, value_name = "FILE.csv", conflicts_with = "target")]
    from: Option<String>,
    /// Output preset file.
    #[arg(short, long, value_name = "FILE.toml")]
    output: String,
    /// Preset name (default: the output file's stem).
    #[arg(long)]
    name: Option<String>,
    /// Short probes (the whole run within 2 minutes); the random-write
    /// probes then see less than a steady state on a real drive.
    #[arg(long)]
    quick: bool,
    /// Only read from the target; the write side stays the template's and
    /// the preset says so.
    #[arg(long)]
    read_only: bool,
    /// Write even to devices that are in use or carry signatures.
    #[arg(long)]
    force: bool,
    /// Capacity of the drive (with --from, or to create a file target that
    /// does not exist) in decimal units as drives are sold: 480g = 480 GB,
    /// 7.68t = 7.68 TB (binary: 1gi, 1ti).
    #[arg(long, value_name = "SIZE")]
    capacity: Option<String>,
    /// The structure the fit starts from: `sata` (a 2012-2014 8-channel SATA
    /// MLC drive), `sas` (the NVMe template's flash behind dual-port 24G
    /// SAS), `nvme` (a PCIe 4.0 data-centre 3D TLC drive) or `nvme-slc` (the
    /// same controller on 3D NAND run one bit per cell); see
    /// docs/calibrate.md.
    #[arg(long, default_value = "sata", value_parser = clap::builder::PossibleValuesParser::new(fit::TEMPLATES))]
    template: String,
    /// Seed of the probes and of the fit's simulations.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Worker threads for the fit (default: one per core).
    #[arg(long)]
    jobs: Option<usize>,
    #[command(flatten)]
    presets: PresetFiles,
}

/// Run `calibrate`.
pub fn run(args: Args) -> Result<(), Failure> {
    crate::common::check_output(&args.output)?;
    let name = preset_name(&args)?;
    let (capacity_gb, obs, what) = match (&args.from, &args.target) {
        (Some(csv), _) => from_csv(csv, &args)?,
        (None, Some(t)) => match t.strip_prefix("sim:") {
            Some(preset) => from_sim(preset, &args)?,
            None => from_device(t, &args)?,
        },
        (None, None) => return Err(Failure::input("give a TARGET or --from FILE.csv")),
    };
    let threads = threads(args.jobs)?;
    let bar = crate::common::RunProgress::new("fit");
    let start = fit::template_named(&args.template, capacity_gb).ok_or_else(|| {
        Failure::input(format!(
            "--template {}: one of {}",
            args.template,
            fit::TEMPLATES.join(", ")
        ))
    })?;
    let opts = fit::FitOptions {
        read_only: args.read_only,
        seed: args.seed,
        threads,
        effort: if args.quick {
            fit::Effort::QUICK
        } else {
            fit::Effort::FULL
        },
    };
    let fitted =
        fit::fit(start, &obs, &opts, &|f| bar.set(f)).map_err(|e| Failure::input(e.to_string()))?;
    drop(bar);
    let path = args.target.as_deref().filter(|t| !t.starts_with("sim:"));
    let text = preset_toml(&name, &fitted, &what, path, args.read_only, &args.template);
    // The file must load as a preset: check before writing it.
    let mut db = PresetDb::builtin();
    db.load_str(&text)
        .map_err(|e| Failure::runtime(format!("the fitted preset does not load: {e}")))?;
    emit(&Some(args.output.clone()), &text)?;
    eprint!("{}", summary(&name, &fitted, &args.output));
    Ok(())
}

/// The preset's name: `--name`, or the output file's stem.
fn preset_name(args: &Args) -> Result<String, Failure> {
    let name = match &args.name {
        Some(n) => n.clone(),
        None => std::path::Path::new(&args.output)
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default(),
    };
    let ok = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if !ok {
        return Err(Failure::input(format!(
            "'{name}' is not a valid preset name (letters, digits, - _ .); give --name"
        )));
    }
    Ok(name)
}

/// The probes this calibration runs.
fn probes(read_only: bool) -> impl Iterator<Item = &'static Probe> {
    PROBES
        .iter()
        .filter(move |p| !(read_only && p.needs_writes()))
}

/// Observations of a built-in (or `--presets`) drive, simulated.
fn from_sim(preset: &str, args: &Args) -> Result<(f64, Vec<Observation>, String), Failure> {
    let db = args.presets.load()?;
    let p = match db.get(preset) {
        Some(Preset::Ssd(p)) => p,
        Some(other) => {
            return Err(Failure::input(format!(
                "sim:{preset}: not an SSD preset: '{preset}' is {}, and calibrate fits SSDs ({})",
                kind_phrase(other),
                ssd_names(&db)
            )))
        }
        None => {
            return Err(Failure::input(format!(
                "sim:{preset}: not an SSD preset ({})",
                db.unknown(preset)
            )))
        }
    };
    let obs = fit::simulate_probes(&db, preset, args.read_only, args.seed)
        .map_err(|e| Failure::input(e.to_string()))?;
    Ok((p.capacity_gb, obs, format!("simulated {preset}")))
}

/// What a preset that is no SSD is, for the refusal's message.
fn kind_phrase(p: &Preset) -> &'static str {
    match p {
        Preset::Ssd(_) => "an SSD",
        Preset::Hdd(_) => "a hard disk",
        Preset::Controller(_) => "a RAID controller or HBA",
        Preset::Host(_) => "a host",
    }
}

/// The SSD presets `calibrate sim:` takes, listed for a refusal.
fn ssd_names(db: &PresetDb) -> String {
    let names: Vec<&str> = db
        .names()
        .into_iter()
        .filter(|n| matches!(db.get(n), Some(Preset::Ssd(_))))
        .collect();
    format!("SSD presets: {}", names.join(", "))
}

/// Most rows `--from` fits (each candidate simulates them all).
const MAX_FROM_ROWS: usize = 200;

/// Observations from a published-measurement CSV (one drive's rows).
fn from_csv(path: &str, args: &Args) -> Result<(f64, Vec<Observation>, String), Failure> {
    let Some(cap) = &args.capacity else {
        return Err(Failure::input(
            "--from needs --capacity (the drive's capacity, e.g. 480g)",
        ));
    };
    let bytes = capacity_bytes(cap)?;
    let text = read_data(path, "CSV file")?;
    let rows = raidlab_core::published::parse_csv(&text)
        .map_err(|e| Failure::input(format!("{path}: {e}")))?;
    let obs: Vec<Observation> = rows
        .iter()
        .map(|r| Observation {
            label: r.id.clone(),
            workload: r.workload.clone(),
            metric: r.metric.clone(),
            value: r.value,
            host: Observation::host_of(&r.topology),
        })
        .collect();
    if obs.is_empty() {
        return Err(Failure::input(format!("{path}: no rows")));
    }
    // Each candidate the fit tries simulates every row: keep the fit's time
    // bounded (a datasheet or review gives tens).
    if obs.len() > MAX_FROM_ROWS {
        return Err(Failure::input(format!(
            "{path}: {} rows; one drive's figures are at most {MAX_FROM_ROWS}",
            obs.len()
        )));
    }
    Ok((
        bytes as f64 / 1e9,
        obs,
        format!("published figures in {path}"),
    ))
}

/// Probe seconds: (warm-up, measurement) of one probe.
fn probe_time(p: &Probe, quick: bool) -> (f64, f64) {
    match (quick, p.preconditions()) {
        // --quick: 10 distinct plain workloads of 4 s and 5 steady ones of
        // 8 s, 80 s in all, leave the quick fit its share of 2 minutes; a
        // few seconds of thousands of I/Os per second measure to a few %.
        (true, false) => (1.0, 3.0),
        (true, true) => (3.0, 5.0),
        // A full run: steady state needs the spare area used up, which on
        // a real SSD takes minutes of random writes (SNIA PTS runs rounds
        // of one minute until steady).
        (false, false) => (5.0, 20.0),
        (false, true) => (600.0, 60.0),
    }
}

/// Observations of a real file or device, measured by the real engine.
fn from_device(path: &str, args: &Args) -> Result<(f64, Vec<Observation>, String), Failure> {
    let bytes = target_bytes(path, args)?;
    let opts = raidlab_io::RunOptions {
        force: args.force,
        ..Default::default()
    };
    let created = raidlab_io::member_size(path).ok().flatten().unwrap_or(0) == 0;
    if !args.read_only && (created || !args.quick) {
        // Write the whole target once, sequentially (SNIA PTS's fill before
        // its tests): reads then see data, not the holes of a new file.
        let w = Workload::parse(&format!("rw=write bs=1m iodepth=8 size={bytes}"))?;
        raidlab_io::run(path, &w, args.seed, &opts)?;
    }
    let list: Vec<&Probe> = probes(args.read_only).collect();
    let bar = crate::common::RunProgress::new("probe");
    let mut obs = Vec::new();
    let mut last: Option<(&str, raidlab_core::result::RunResult)> = None;
    for (i, probe) in list.iter().enumerate() {
        let result = match &last {
            Some((w, r)) if *w == probe.workload => r.clone(),
            _ => {
                let (ramp, secs) = probe_time(probe, args.quick);
                let w = Workload::parse(&format!(
                    "{} size={bytes} ramp_time={ramp} runtime={secs}",
                    probe.workload
                ))?;
                raidlab_io::run(path, &w, args.seed, &opts)?.result
            }
        };
        let value = result.summary.metric(probe.metric).unwrap_or(f64::NAN);
        obs.push(observation(probe, value));
        last = Some((probe.workload, result));
        bar.set((i + 1) as f64 / list.len() as f64);
    }
    Ok((bytes as f64 / 1e9, obs, format!("measured on {path}")))
}

/// The target's size: an existing file's or device's, or `--capacity` for
/// a file to create.
fn target_bytes(path: &str, args: &Args) -> Result<u64, Failure> {
    if std::path::Path::new(path).is_dir() {
        return Err(Failure::input(format!(
            "{path} is a directory: give a file or a block device"
        )));
    }
    let existing =
        raidlab_io::member_size(path).map_err(|e| Failure::input(format!("{path}: {e}")))?;
    let bytes = match (existing, &args.capacity) {
        (Some(b), _) if b > 0 => b,
        (_, Some(c)) => capacity_bytes(c)?,
        _ => {
            return Err(Failure::input(format!(
                "{path} does not exist (or is empty): give --capacity to create it"
            )))
        }
    };
    // Whole 1 MiB units: every probe's block size divides the span.
    let bytes = bytes / (1 << 20) * (1 << 20);
    if bytes < 64 << 20 {
        return Err(Failure::input(format!(
            "{path}: at least 64 MiB are needed to probe a drive"
        )));
    }
    Ok(bytes)
}

/// Where a field's value came from, for its comment.
fn provenance(field: &str, fit: &Fit, read_only: bool, template: &str) -> String {
    if read_only && WRITE_FIELDS.contains(&field) {
        return "template: not measurable read-only".into();
    }
    let sources: Vec<String> = FREE
        .iter()
        .filter(|f| f.field == field)
        .map(|f| source(f.from, fit))
        .collect();
    if !sources.is_empty() {
        // A field listed twice is solved on the first observation that
        // depends on it (fit.rs `sweep`).
        return sources.join("; or, where that does not depend on it, ");
    }
    match field {
        "channels" | "dies_per_channel" => {
            "fitted as the die count (a whole number, searched on the total misfit of the write observations)".into()
        }
        "gc_pacing" => "fitted (yes/no): the steady random-write p99 and IOPS".into(),
        "power_loss_protection" => "fitted (yes/no): synchronous 4 KiB writes".into(),
        "capacity_gb" => "the target's size (or --capacity)".into(),
        "write_path_mbps" => format!(
            "fitted because the flash and the link outrun the sequential write: {}",
            source(WRITE_PATH.from, fit)
        ),
        _ => format!("template {}: not measured (raidlab-sim fit::template_named)", template),
    }
}

/// The observation `from` that sets a field, as its comment says it.
fn source(from: &str, fit: &Fit) -> String {
    let obs: Vec<Observation> = fit.residuals.iter().map(|r| r.obs.clone()).collect();
    let label = fit::find(&obs, from).map(|o| o.label.clone());
    let r = fit
        .residuals
        .iter()
        .find(|r| Some(&r.obs.label) == label.as_ref());
    match r {
        Some(r) => format!(
            "fitted; mostly set by {} ({} {} measured, {} fitted)",
            from,
            round(r.obs.value),
            r.obs.metric,
            round(r.fitted)
        ),
        None => format!("template: no observation measures it ({from} would)"),
    }
}

/// Four significant digits, for comments.
fn round(v: f64) -> String {
    significant(v, 4)
}

/// `v` to `n` significant digits (no exponent).
fn significant(v: f64, n: i32) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    let digits = (n - 1 - v.abs().log10().floor() as i32).max(0) as usize;
    format!("{v:.digits$}")
}

/// The preset file: a header with the fit's residuals, then one table.
fn preset_toml(
    name: &str,
    fit: &Fit,
    what: &str,
    path: Option<&str>,
    read_only: bool,
    template: &str,
) -> String {
    let mut s = format!("# {name}: an SSD preset fitted by `raidlab calibrate` to {what}.\n");
    s += &format!(
        "# Fit: {} observations, {} candidates simulated. Residuals (measured -> fitted):\n",
        fit.residuals.len(),
        fit.evaluations
    );
    for r in &fit.residuals {
        s += &format!(
            "#   {:<30} {:<11} {:>12} -> {:>12} ({:+.1} %)\n",
            r.obs.label,
            r.obs.metric,
            round(r.obs.value),
            round(r.fitted),
            r.error_pct()
        );
    }
    s += &format!("[{name}]\nkind = \"ssd\"\n");
    let mut p: SsdParams = fit.params.clone();
    p.description = format!("{name}: fitted to {what}");
    if let Some(path) = path {
        p.paths = vec![path.to_string()];
    }
    let table = toml::Table::try_from(&p).unwrap_or_default();
    for (k, v) in &table {
        let comment = match k.as_str() {
            "description" | "paths" => String::new(),
            _ => format!("  # {}", provenance(k, fit, read_only, template)),
        };
        s += &format!("{k} = {}{comment}\n", value_text(v));
    }
    s
}

/// A TOML value as it is written: floats to six significant digits (the
/// simulated drive is the fitted one, to a part in a million).
fn value_text(v: &toml::Value) -> String {
    match v {
        toml::Value::Float(f) => {
            let t = significant(*f, 6);
            if t.contains('.') || t.contains('e') || t.contains("inf") || t.contains("NaN") {
                t
            } else {
                format!("{t}.0")
            }
        }
        other => other.to_string(),
    }
}

/// What the command prints on stderr when done.
fn summary(name: &str, fit: &Fit, output: &str) -> String {
    let worst = fit
        .residuals
        .iter()
        .map(|r| r.error_pct().abs())
        .fold(0.0, f64::max);
    format!(
        "calibrate: wrote preset '{name}' to {output} ({} observations, largest residual {worst:.1} %); use it with --presets {output}\n",
        fit.residuals.len()
    )
}
