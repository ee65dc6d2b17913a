//! The project's files of published measurements: the calibration stays
//! within its bar, and of those it was not calibrated on,
//! current hardware (`data/published/current.csv`: sources other than the
//! presets' own datasheets) stays within the bound the project promises,
//! and the calibration's own drives and controllers measured by other
//! sources (`data/published/other-sources.csv`) all simulate.

use raidlab_core::preset::PresetDb;
use raidlab_core::published::{parse_csv, Row};
use raidlab_sim::validate::{validate, Validation};

/// Largest median |error| (%) allowed on the current-hardware file.
const MEDIAN_BOUND_PCT: f64 = 20.0;

/// Largest median and 90th-percentile |error| (%) allowed on the
/// calibration file (issue 24's bar).
const CALIBRATION_MEDIAN_PCT: f64 = 10.0;
const CALIBRATION_P90_PCT: f64 = 30.0;

/// The rows of `data/published/NAME` and their validation, every one of
/// which must have simulated.
fn validated(name: &str) -> (Vec<Row>, Validation) {
    let path = format!("{}/../../data/published/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let rows = parse_csv(&text).expect("its CSV");
    assert!(!rows.is_empty(), "{name} has rows");
    let v = validate(&rows, &PresetDb::builtin(), 1, 2, false, &|_, _| {});
    assert!(v.failed.is_empty(), "rows that did not run: {:?}", v.failed);
    assert_eq!(v.stats().rows, rows.len());
    (rows, v)
}

/// The four documents' measurements: every row runs, and the errors stay
/// within the bar the project promises.
#[test]
fn calibration_measurements_validate_within_the_bound() {
    let (_, v) = validated("calibration.csv");
    let s = v.stats();
    assert!(
        s.median <= CALIBRATION_MEDIAN_PCT && s.p90 <= CALIBRATION_P90_PCT,
        "median |error| {:.1} %, p90 {:.1} % over {} rows",
        s.median,
        s.p90,
        s.rows
    );
}

#[test]
fn current_hardware_measurements_validate_within_the_bound() {
    let (rows, v) = validated("current.csv");
    let sources: std::collections::BTreeSet<&str> =
        rows.iter().map(|r| r.source.as_str()).collect();
    let s = v.stats();
    // Issue 26's bar: at least 40 rows from at least 5 independent sources.
    assert!(rows.len() >= 40, "{} rows", rows.len());
    assert!(sources.len() >= 5, "{} sources", sources.len());
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
    let (rows, _) = validated("other-sources.csv");
    let documents = ["petrov2010", "jdev2009", "admin2015", "intel2013"];
    for r in &rows {
        assert!(
            !documents.contains(&r.source.as_str()),
            "{} comes from a calibration document",
            r.id
        );
    }
}

/// The held-back numbers of the four documents' tables
/// (`data/published/documents-rest.csv`): every row names a topology and
/// workload the simulator takes, comes from one of the four documents and
/// is none of the calibration's rows, and their error does not grow past
/// where it stands (median 21.2 %, p90 122.8 % when they were taken in).
/// The aim is median 10 % and p90 30 % over both files; this bound only
/// keeps the model from drifting further from rows it was not built on.
#[test]
#[ignore = "slow tier: simulates 344 published rows; .ci/run runs it (cargo test --workspace -- --ignored slow_)"]
fn slow_held_out_document_measurements_all_simulate_and_do_not_drift() {
    let (rows, v) = validated("documents-rest.csv");
    let path = format!(
        "{}/../../data/published/calibration.csv",
        env!("CARGO_MANIFEST_DIR")
    );
    let calibration = parse_csv(&std::fs::read_to_string(path).unwrap()).unwrap();
    let documents = ["petrov2010", "jdev2009", "admin2015", "intel2013"];
    for r in &rows {
        assert!(documents.contains(&r.source.as_str()), "{}", r.id);
        assert!(
            calibration.iter().all(|c| c.id != r.id),
            "{} is a calibration row",
            r.id
        );
    }
    assert_eq!(rows.len(), 344);
    let s = v.stats();
    assert!(
        s.median <= 22.0 && s.p90 <= 125.0,
        "median |error| {:.1} %, p90 {:.1} % over {} rows",
        s.median,
        s.p90,
        s.rows
    );
}
