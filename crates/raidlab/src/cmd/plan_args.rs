//! `raidlab plan`'s arguments: what the command and its shard files share
//! (a module of their own, so that neither depends on the other).

use crate::args::PresetFiles;
use clap::ValueEnum;

/// How a plan is written.
#[derive(Clone, Copy, ValueEnum, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Format {
    /// A ranked table with the winner's reason.
    Table,
    /// `{"plan", "rows"}`.
    Json,
    /// One row per configuration, with a header.
    Csv,
}

/// Which array to build: every configuration of the candidate drives and
/// controllers that holds --capacity and survives --survive failures is
/// enumerated (RAID level, drive count, stripe unit, hardware RAID, md,
/// md over several controllers' volumes or hardware arrays, cache and
/// read-ahead policy), the ones the classic analytic model rules out are
/// pruned, the rest are simulated in steady state in parallel, and the
/// best are printed, ranked by --objective. Every row is reproduced by
/// `raidlab sim -t TOPOLOGY -w WORKLOAD` with its printed expression and
/// workload. Prices come from `price = N` in a --presets file.
#[derive(clap::Args, serde::Serialize, serde::Deserialize, Clone)]
pub struct Args {
    /// Workload (fio keys), optionally `@WEIGHT` (its share of the time);
    /// repeat for a weighted set.
    #[arg(long, short = 'w', required_unless_present = "trace")]
    pub(crate) workload: Vec<String>,
    /// A block trace to plan for (any format `read_iolog=` reads): arrays
    /// ranked by how fast they run its I/Os, 32 in flight (a closed loop,
    /// `replay_no_stall=1`). For its recorded timing give `-w
    /// "read_iolog=FILE iodepth=N"` with `--objective p99`.
    #[arg(long, value_name = "FILE")]
    pub(crate) trace: Option<String>,
    /// Usable capacity the array must hold (`2t`, `800g`: decimal units).
    #[arg(long)]
    pub(crate) capacity: String,
    /// Failures of any members the array must survive.
    #[arg(long, default_value_t = 1)]
    pub(crate) survive: u32,
    /// Candidate drive presets, comma-separated.
    #[arg(long, value_delimiter = ',', required = true)]
    pub(crate) drives: Vec<String>,
    /// RAID levels to consider, comma-separated (default: raid0, raid1,
    /// raid10, raid5, raid6 as --survive allows; raid4 only when named).
    #[arg(long, value_delimiter = ',')]
    pub(crate) levels: Vec<String>,
    /// Extra SSD over-provisioning to try, % of capacity, comma-separated
    /// (`0,20`: as shipped and with a fifth left unused).
    #[arg(long, value_delimiter = ',', default_value = "0")]
    pub(crate) op: Vec<u32>,
    /// Candidate controller presets, comma-separated, or `none` for the
    /// host's own ports (md). `none` may be one of the list.
    #[arg(long, value_delimiter = ',', default_value = "none")]
    pub(crate) controllers: Vec<String>,
    /// A host preset to use as the host (default: `host`).
    #[arg(long)]
    pub(crate) host: Option<String>,
    /// Most drives in a configuration.
    #[arg(long, default_value_t = 16)]
    pub(crate) max_drives: u32,
    /// Most controllers in a configuration.
    #[arg(long, default_value_t = 2)]
    pub(crate) max_controllers: u32,
    /// What to rank by.
    #[arg(long, value_parser = ["iops", "mbps", "p99", "cost", "endurance"], default_value = "iops")]
    pub(crate) objective: String,
    /// Fewest years every member must last to its rated endurance.
    #[arg(long)]
    pub(crate) min_years: Option<f64>,
    /// Most a configuration may cost (prices from --presets).
    #[arg(long)]
    pub(crate) budget: Option<f64>,
    /// Rows to print (and the rows pruning must not change).
    #[arg(long, default_value_t = 10)]
    pub(crate) top: usize,
    /// Simulate every configuration: no pruning by the analytic model.
    #[arg(long)]
    pub(crate) exhaustive: bool,
    /// Random seed of every simulation.
    #[arg(long, default_value_t = 1)]
    pub(crate) seed: u64,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub(crate) format: Format,
    /// Write to FILE instead of stdout.
    #[arg(long, short = 'o')]
    pub(crate) output: Option<String>,
    /// Also write DIR/plan.html: the question, the ranked rows and a Pareto
    /// figure (objective against cost, or usable capacity without prices).
    #[arg(long, value_name = "DIR")]
    pub(crate) html: Option<String>,
    /// Simulations in parallel (default: all cores).
    #[arg(long)]
    pub(crate) jobs: Option<usize>,
    /// Run only shard i of n (1-based) and write its work as a JSON shard
    /// file; `raidlab merge` of all n files prints exactly what the
    /// unsharded plan prints.
    #[arg(long, value_name = "i/n")]
    pub(crate) shard: Option<String>,
    #[command(flatten)]
    pub(crate) presets: PresetFiles,
}

impl Args {
    /// The arguments as a shard file records them: the question alone,
    /// without the shard, the output file or the thread count.
    pub(crate) fn question_only(&self) -> Args {
        Args {
            shard: None,
            output: None,
            jobs: None,
            ..self.clone()
        }
    }
}
