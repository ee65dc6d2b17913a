//! `raidlab trace-stats`: what a block trace does (mix, sizes,
//! sequentiality, arrivals, working set), and the fio job like it.

use crate::common::emit;
use crate::failure::Failure;
use raidlab_core::trace::{self, stats::Stats, BlkEvent, Format, Options};

/// Characterise a block trace in one streaming pass.
#[derive(clap::Args)]
pub struct Args {
    /// The trace (fio iolog v2/v3, blkparse text, MSR, Alibaba, Tencent
    /// CBS or SPC CSV; detected by content).
    file: String,
    /// Read it as this format instead of detecting it.
    #[arg(long, value_parser = format_word)]
    format: Option<Format>,
    /// Only this device, file, volume or ASU.
    #[arg(long)]
    device: Option<String>,
    /// blkparse: take dispatches (`D`) instead of queue events (`Q`).
    #[arg(long)]
    dispatch: bool,
    /// Print the synthetic fio job with the same characteristics instead.
    #[arg(long)]
    as_job: bool,
    /// JSON instead of text.
    #[arg(long)]
    json: bool,
}

fn format_word(s: &str) -> Result<Format, String> {
    Format::from_word(s).ok_or_else(|| {
        let all: Vec<&str> = Format::ALL.iter().map(|f| f.word()).collect();
        format!("expected one of {}", all.join(", "))
    })
}

/// Run `trace-stats`.
pub fn run(args: Args) -> Result<(), Failure> {
    let opts = Options {
        format: args.format,
        device: args.device.clone(),
        event: if args.dispatch {
            BlkEvent::Dispatch
        } else {
            BlkEvent::Queue
        },
    };
    let mut reader = trace::open(std::path::Path::new(&args.file), opts)
        .map_err(|e| Failure::input(format!("trace: {e}")))?;
    let mut stats = Stats::default();
    for rec in reader.by_ref() {
        stats.add(&rec.map_err(|e| Failure::input(format!("trace: {e}")))?);
    }
    if stats.ios() == 0 {
        return Err(Failure::input(format!(
            "trace: {}: no reads or writes (check --device)",
            args.file
        )));
    }
    let s = stats.summary();
    let text = if args.as_job {
        s.as_job()
    } else if args.json {
        let mut v = serde_json::to_value(&s).map_err(|e| Failure::runtime(e.to_string()))?;
        v["format"] = reader.format().word().into();
        format!("{}\n", serde_json::to_string_pretty(&v).unwrap_or_default())
    } else {
        table(reader.format(), &s)
    };
    emit(&None, &text)
}

/// The characterisation as text.
fn table(f: Format, s: &trace::stats::Summary) -> String {
    let mb = |b: u64| b as f64 / 1e6;
    let mut o = format!("format        {}\n", f.word());
    o += &format!(
        "records       {} reads, {} writes, {} trims, {} flushes\n",
        s.reads, s.writes, s.trims, s.flushes
    );
    o += &format!(
        "bytes         {:.1} MB read, {:.1} MB written\n",
        mb(s.read_bytes),
        mb(s.write_bytes)
    );
    o += &format!("read share    {:.1} %\n", s.read_pct);
    o += &format!("sequential    {:.1} %\n", s.sequential_pct);
    let sizes: Vec<String> = s
        .sizes
        .iter()
        .map(|(b, n)| format!("{} x{n}", raidlab_core::units::format_size(*b)))
        .collect();
    o += &format!(
        "sizes         mean {:.0} B; {}\n",
        s.mean_size,
        sizes.join(", ")
    );
    o += &format!("extent        {:.1} MB\n", mb(s.extent));
    o += &format!(
        "working set   {:.1} MB (distinct 4 KiB pages)\n",
        mb(s.working_set)
    );
    if s.duration_s > 0.0 {
        o += &format!(
            "duration      {:.3} s, {:.0} IOPS; inter-arrival mean {:.1} µs, CV {:.2}\n",
            s.duration_s, s.iops, s.interarrival_us, s.interarrival_cv
        );
    } else {
        o += "duration      untimed\n";
    }
    o
}
