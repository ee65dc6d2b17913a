//! The project's files of published measurements it was not calibrated on:
//! current hardware (`data/published/current.csv`: sources other than the
//! presets' own datasheets) stays within the bound the project promises,
//! and the calibration's own drives and controllers measured by other
//! sources (`data/published/other-sources.csv`) all simulate.

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

/// Every row of the other-sources file (the 2008–2015 drives and
/// controllers of the four documents, measured elsewhere) names a preset,
/// topology and workload the simulator takes, and comes from a source
/// other than the four documents.
#[test]
fn other_source_measurements_all_simulate() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../data/published/other-sources.csv"
    );
    let text = std::fs::read_to_string(path).expect("the other-sources file");
    let rows = parse_csv(&text).expect("its CSV");
    assert!(!rows.is_empty());
    let documents = ["petrov2010", "jdev2009", "admin2015", "intel2013"];
    for r in &rows {
        assert!(
            !documents.contains(&r.source.as_str()),
            "{} comes from a calibration document",
            r.id
        );
    }
    let v = validate(&rows, &PresetDb::builtin(), 1, 2, false, &|_, _| {});
    assert!(v.failed.is_empty(), "rows that did not run: {:?}", v.failed);
    assert_eq!(v.stats().rows, rows.len());
}
