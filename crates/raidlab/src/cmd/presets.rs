//! `raidlab presets`: list the presets, or show one.

use crate::args::PresetFiles;
use crate::common::{emit, json_text};
use crate::failure::Failure;
use clap::ValueEnum;
use raidlab_core::preset::{Preset, PresetDb};
use raidlab_report::text as table;

/// How `presets` prints.
#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum Format {
    /// A table (one preset: its parameters and the source of each).
    Table,
    /// The preset file itself, with its comments.
    Toml,
    /// One JSON array: name, kind, interface, year, capacity and
    /// description of each preset, for tools that pick from them.
    Json,
}

/// List presets, or dump one.
#[derive(clap::Args)]
pub struct Args {
    /// Preset to show.
    name: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    #[command(flatten)]
    presets: PresetFiles,
}

/// Run `presets`.
pub fn run(args: Args) -> Result<(), Failure> {
    let db = args.presets.load()?;
    let text = match &args.name {
        Some(n) => one(&db, n, args.format)?,
        None => all(&db, args.format)?,
    };
    emit(&None, &text)
}

/// One preset, in `format`.
fn one(db: &PresetDb, name: &str, format: Format) -> Result<String, Failure> {
    let Some(p) = db.get(name) else {
        return Err(Failure::input(db.unknown(name)));
    };
    let toml = db.to_toml(name).unwrap_or_default();
    Ok(match format {
        Format::Toml => toml,
        Format::Table => table::preset_detail(name, p, &toml),
        Format::Json => json_text(&vec![Entry::of(name, p)])?,
    })
}

/// Every preset, in `format`.
fn all(db: &PresetDb, format: Format) -> Result<String, Failure> {
    Ok(match format {
        Format::Json => json_text(&db.iter().map(|(n, p)| Entry::of(n, p)).collect::<Vec<_>>())?,
        Format::Table => table::preset_list(db),
        Format::Toml => db
            .iter()
            .map(|(n, _)| format!("# ---- {n} ----\n{}\n", db.to_toml(n).unwrap_or_default()))
            .collect(),
    })
}

/// One preset in `presets --format json`.
#[derive(serde::Serialize)]
struct Entry<'a> {
    name: &'a str,
    kind: &'static str,
    interface: Option<&'a str>,
    year: Option<u32>,
    /// 10^9 bytes; drives only.
    capacity_gb: Option<f64>,
    /// Rated TB written; SSDs with a rating only.
    endurance_tbw: Option<f64>,
    /// The user's price, where a presets file gives one.
    price: Option<f64>,
    /// The host software RAID implementations a host preset profiles
    /// (`impl=` values its arrays may take); hosts only.
    #[serde(skip_serializing_if = "Option::is_none")]
    impls: Option<Vec<&'a str>>,
    description: &'a str,
}

impl<'a> Entry<'a> {
    fn of(name: &'a str, p: &'a Preset) -> Self {
        let (interface, year, capacity_gb) = match p {
            Preset::Ssd(s) => (s.interface.as_deref(), s.year, Some(s.capacity_gb)),
            Preset::Hdd(h) => (h.interface.as_deref(), h.year, Some(h.capacity_gb)),
            Preset::Controller(c) => (c.interface.as_deref(), c.year, None),
            Preset::Host(h) => (h.interface.as_deref(), h.year, None),
        };
        Entry {
            name,
            kind: p.kind(),
            interface,
            year,
            capacity_gb,
            endurance_tbw: match p {
                Preset::Ssd(s) => s.endurance_tbw,
                _ => None,
            },
            price: p.price(),
            impls: match p {
                Preset::Host(h) => Some(h.impls.keys().map(String::as_str).collect()),
                _ => None,
            },
            description: p.description(),
        }
    }
}
