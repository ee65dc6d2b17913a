//! `raidlab serve`: a simulated array, or a real raidlab array, as a block
//! device real programs use, over NBD.

use crate::args::PresetFiles;
use crate::common::expression;
use crate::failure::Failure;
use raidlab_core::units::parse_size;
use raidlab_core::workload::Workload;
use raidlab_io::serve::{Listen, ServeOptions, MAX_CLIENTS};

/// Serve a simulated array, or a real one (or file, or device), over NBD.
///
/// Over presets (`-t 'raid5(4*s3500-800)'`) the array is simulated in real
/// time: each request enters the model when it arrives and is answered
/// when the model completes it, so clients see the array's latencies,
/// queueing and caches; the data lives in a sparse file (--backing) or in
/// memory (--memory bounds it), and how late answers went out against the
/// model is reported (--stats: every second).
///
/// Over member paths, as for `run`, the arrays must exist (`raidlab
/// create`). The volume is assembled as `run` assembles it (an array not
/// stopped cleanly is resynchronised first), served until SIGINT or
/// SIGTERM (or --connections), then its members are synced and its arrays
/// marked clean. A FLUSH (or a write with FUA) is answered once the data
/// is on the members. Clients: qemu-io, qemu-img, nbdinfo, nbdcopy,
/// nbdfuse, fio's nbd engine, the kernel's nbd-client. docs/serve.md has
/// the protocol coverage, timing model and durability.
#[derive(clap::Args)]
pub struct Args {
    /// Topology expression over presets (simulated) or member paths
    /// (real), or @FILE holding one.
    #[arg(long, short = 't')]
    topology: String,
    /// Simulated: the workload the array is prepared for (its drives'
    /// starting state and warmed caches, as `sim` prepares them for it).
    #[arg(long, short = 'w', default_value = "rw=randrw")]
    workload: String,
    /// Simulated: the model's random seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Simulated: export only the first SIZE bytes of the volume (a
    /// partition of it; the model sees requests where they fall).
    #[arg(long)]
    size: Option<String>,
    /// Simulated: keep the data in this sparse file (created if absent;
    /// an existing one must have the volume's size) instead of memory.
    #[arg(long)]
    backing: Option<std::path::PathBuf>,
    /// Simulated, without --backing: most data held in memory (a write
    /// past it fails with ENOSPC).
    #[arg(long, default_value = "2g")]
    memory: String,
    /// Simulated: print answers per second, the model's latency and how
    /// late answers went out, every second.
    #[arg(long)]
    stats: bool,
    /// Simulated: at the end, write the emulation's drift (how late
    /// answers went out against the model) to FILE as JSON.
    #[arg(long, value_name = "FILE")]
    report: Option<String>,
    #[command(flatten)]
    presets: PresetFiles,
    /// Unix socket to listen on (the default, ./raidlab.sock).
    #[arg(long, conflicts_with = "listen")]
    socket: Option<String>,
    /// TCP address to listen on instead, exactly as given (127.0.0.1:10809).
    #[arg(long)]
    listen: Option<std::net::SocketAddr>,
    /// Serve devices that carry partition tables or file-system signatures.
    #[arg(long)]
    force: bool,
    /// Stop after this many connections have ended (for scripts).
    #[arg(long)]
    connections: Option<u64>,
    /// Most clients at once; more are closed as they connect.
    #[arg(long, default_value_t = MAX_CLIENTS)]
    max_clients: usize,
}

/// Run `serve`.
pub fn run(args: Args) -> Result<(), Failure> {
    let expr = expression(&args.topology)?;
    if args.max_clients == 0 {
        return Err(Failure::input("--max-clients: at least 1"));
    }
    let listen = match (&args.listen, &args.socket) {
        (Some(a), _) => Listen::Tcp(*a),
        (None, Some(p)) => Listen::Unix(p.into()),
        (None, None) => Listen::Unix("raidlab.sock".into()),
    };
    let opts = ServeOptions {
        listen,
        force: args.force,
        connections: args.connections,
        max_clients: args.max_clients,
    };
    let db = args.presets.load()?;
    let shown = expr.split_whitespace().collect::<Vec<_>>().join(" ");
    match raidlab_core::topology::resolve(&expr, &db) {
        Ok(topo) => serve_simulated(&args, &topo, &opts, &shown),
        // Not an expression over presets: one over paths, or an error
        // that names what is wrong with it as such.
        Err(sim_err) => match raidlab_io::topo::parse_real(&expr) {
            Ok(_) => serve_real(&expr, &opts, &shown),
            Err(_) if !expr.contains('/') => Err(sim_err.into()),
            Err(e) => Err(e.into()),
        },
    }
}

/// The client commands to use, printed when the server is ready.
fn announce(what: &str, size: u64, uri: &str, end: &str) {
    eprintln!(
        "raidlab: serving {what} ({size} bytes) at {uri}\n  qemu-io -f raw '{uri}'\n  nbdinfo '{uri}'\n  nbdcopy '{uri}' out.img\n  nbdfuse DIR/disk '{uri}'\n  fio --ioengine=nbd --uri='{uri}' --name=job --rw=randread --bs=4k\nstop with Ctrl-C{end}"
    );
}

/// Serve the real array `expr`.
fn serve_real(expr: &str, opts: &ServeOptions, shown: &str) -> Result<(), Failure> {
    let uri = opts.listen.uri();
    let summary = raidlab_io::serve::serve(expr, opts, |size| {
        announce(shown, size, &uri, " (the arrays are then marked clean)")
    })?;
    report(&summary);
    Ok(())
}

/// Serve the simulated array `topo`.
fn serve_simulated(
    args: &Args,
    topo: &raidlab_core::topology::Topology,
    opts: &ServeOptions,
    shown: &str,
) -> Result<(), Failure> {
    let w =
        Workload::parse(&args.workload).map_err(|e| Failure::input(format!("--workload: {e}")))?;
    let live = raidlab_sim::live::Live::new(topo, &w, args.seed)?;
    let size = export_size(args.size.as_deref(), live.capacity())?;
    let data = match &args.backing {
        Some(p) => raidlab_io::sparse::Sparse::on_disk(p, size).map_err(Failure::input)?,
        None => {
            let limit =
                parse_size(&args.memory).map_err(|e| Failure::input(format!("--memory: {e}")))?;
            raidlab_io::sparse::Sparse::in_memory(size, limit)
                .map_err(|e| Failure::input(format!("memory for the data: {e}")))?
        }
    };
    if let Some(path) = &args.report {
        // Refused now rather than after the serve.
        std::fs::File::create(path).map_err(|e| Failure::input(format!("--report {path}: {e}")))?;
    }
    let uri = opts.listen.uri();
    let (summary, drift) = raidlab_emulate::serve(live, data, opts, args.stats, |size| {
        announce(&format!("simulated {shown}"), size, &uri, "")
    })?;
    report(&summary);
    let (mean, p50, p99, max) = drift.late.micros();
    eprintln!(
        "raidlab: the model answered {} requests (its mean latency {:.1} us); answers went out late by mean {mean:.1} us, p50 {p50:.1}, p99 {p99:.1}, max {max:.1}: {}",
        drift.answered,
        drift.model_mean_us,
        match (drift.kept_up(), drift.behind_seconds) {
            (true, 0) => "the emulation kept up with the model".to_string(),
            (true, n) => format!("the emulation kept up with the model, but for {n} second(s)"),
            (false, n) => format!("the host did NOT keep up with the model ({n} second(s) behind): times clients measured are longer than the array's"),
        }
    );
    if let Some(path) = &args.report {
        let text = serde_json::to_string_pretty(&drift.json())
            .map_err(|e| Failure::input(format!("--report: {e}")))?;
        std::fs::write(path, text + "\n")
            .map_err(|e| Failure::input(format!("--report {path}: {e}")))?;
    }
    Ok(())
}

/// The bytes to export: `--size` (a whole number of 512-byte sectors, at
/// most the volume), or the whole volume of `capacity` bytes.
fn export_size(size: Option<&str>, capacity: u64) -> Result<u64, Failure> {
    let Some(text) = size else {
        return Ok(capacity);
    };
    let n = parse_size(text).map_err(|e| Failure::input(format!("--size: {e}")))?;
    if n == 0 || n % 512 != 0 || n > capacity {
        return Err(Failure::input(format!(
            "--size {text}: a multiple of 512 bytes from 512 to the volume's {capacity}"
        )));
    }
    Ok(n)
}

/// The server's summary.
fn report(summary: &raidlab_io::serve::ServeSummary) {
    eprintln!(
        "raidlab: served {} connection(s) ({} refused): {} requests, {} errors, {} bytes read, {} written",
        summary.connections,
        summary.refused,
        summary.counts.requests,
        summary.counts.errors,
        summary.counts.read_bytes,
        summary.counts.written_bytes
    );
    for why in &summary.protocol_errors {
        eprintln!("raidlab: a client was disconnected: {why}");
    }
}
