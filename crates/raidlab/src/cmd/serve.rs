//! `raidlab serve`: a real raidlab array as a block device real programs
//! use, over NBD.

use crate::common::expression;
use crate::failure::Failure;
use raidlab_io::serve::{Listen, ServeOptions, MAX_CLIENTS};

/// Serve a real array (or file, or device) over NBD.
///
/// Leaves of the expression are member paths, as for `run`; the arrays
/// must exist (`raidlab create`). The volume is assembled as `run`
/// assembles it (an array not stopped cleanly is resynchronised first),
/// served until SIGINT or SIGTERM (or --connections), then its members
/// are synced and its arrays marked clean. A FLUSH (or a write with FUA)
/// is answered once the data is on the members. Clients: qemu-io,
/// qemu-img, nbdinfo, nbdcopy, nbdfuse, fio's nbd engine, the kernel's
/// nbd-client. docs/serve.md has the protocol coverage and durability.
#[derive(clap::Args)]
pub struct Args {
    /// Topology expression over member paths, or @FILE holding one.
    #[arg(long, short = 't')]
    topology: String,
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
    let uri = listen.uri();
    let opts = ServeOptions {
        listen,
        force: args.force,
        connections: args.connections,
        max_clients: args.max_clients,
    };
    let summary = raidlab_io::serve::serve(&expr, &opts, |size| {
        eprintln!(
            "raidlab: serving {} ({size} bytes) at {uri}\n  qemu-io -f raw '{uri}'\n  nbdinfo '{uri}'\n  nbdcopy '{uri}' out.img\n  nbdfuse DIR/disk '{uri}'\n  fio --ioengine=nbd --uri='{uri}' --name=job --rw=randread --bs=4k\nstop with Ctrl-C (the arrays are then marked clean)",
            expr.split_whitespace().collect::<Vec<_>>().join(" ")
        );
    })?;
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
    Ok(())
}
