//! `raidlab presets`: list the presets, or show one.

use crate::args::PresetFiles;
use crate::common::emit;
use crate::failure::Failure;
use clap::ValueEnum;
use raidlab_core::preset::PresetDb;
use raidlab_report::text as table;

/// How `presets` prints.
#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum Format {
    /// A table (one preset: its parameters and the source of each).
    Table,
    /// The preset file itself, with its comments.
    Toml,
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
        None => all(&db, args.format),
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
    })
}

/// Every preset, in `format`.
fn all(db: &PresetDb, format: Format) -> String {
    match format {
        Format::Table => table::preset_list(db),
        Format::Toml => db
            .iter()
            .map(|(n, _)| format!("# ---- {n} ----\n{}\n", db.to_toml(n).unwrap_or_default()))
            .collect(),
    }
}
