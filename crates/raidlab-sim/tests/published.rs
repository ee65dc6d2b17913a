//! The project's file of published measurements of current hardware
//! (`data/published/current.csv`: sources other than the presets' own
//! datasheets) stays within the bound the project promises for hardware
//! it was not calibrated on.

use raidlab_core::preset::PresetDb;
use raidlab_core::published::parse_csv;
use raidlab_sim::validate::validate;

/// Largest median |error| (%) allowed on the current-hardware file.
const MEDIAN_BOUND_PCT: f64 = 20.0;

#[test]
fn current_hardware_measurements_validate_within_the_bound() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../data/published/current.csv"
    );
    let text = std::fs::read_to_string(path).expect("the current-hardware file");
    let rows = parse_csv(&text).expect("its CSV");
    let sources: std::collections::BTreeSet<&str> =
        rows.iter().map(|r| r.source.as_str()).collect();
    let v = validate(&rows, &PresetDb::builtin(), 1, 2, false, &|_, _| {});
    assert!(v.failed.is_empty(), "rows that did not run: {:?}", v.failed);
    let s = v.stats();
    assert_eq!(s.rows, rows.len());
    assert!(
        s.median <= MEDIAN_BOUND_PCT,
        "median |error| {:.1} % over {} rows from {} sources",
        s.median,
        s.rows,
        sources.len()
    );
}
