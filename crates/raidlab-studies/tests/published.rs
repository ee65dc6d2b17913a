//! The project's files of published measurements: the calibration stays
//! within its bar, and of those it was not calibrated on,
//! current hardware (`data/published/current.csv`: sources other than the
//! presets' own datasheets) stays within the bound the project promises,
//! and the calibration's own drives and controllers measured by other
//! sources (`data/published/other-sources.csv`) all simulate.

use raidlab_core::preset::PresetDb;
use raidlab_core::published::{parse_csv, Row};
use raidlab_studies::validate::{validate, ErrorStats, Validation};

/// The current-hardware file's aim (issue 54: median 15 %, p90 35 %) and
/// the ratchet below it: its p90 stands at 51.7 % (the two bitmap rows of
/// Jon Derrick's md RAID 10 and the PM9A3's tails near saturation), and
/// may not drift back from there while the work on it goes on.
const CURRENT_MEDIAN_AIM_PCT: f64 = 15.0;
const CURRENT_P90_RATCHET_PCT: f64 = 52.0;

/// The other-sources file's aim (issue 51: median 12 %, p90 35 %) and the
/// ratchet below it: its eight rows stand at 10.0 % / 41.0 % (the p90 is
/// its second-worst row, the X25-E's 256 KB random writes at queue depth
/// 1, +41 %).
const OTHER_MEDIAN_AIM_PCT: f64 = 12.0;
const OTHER_P90_RATCHET_PCT: f64 = 41.5;

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
    within(
        "calibration",
        v.stats(),
        CALIBRATION_MEDIAN_PCT,
        CALIBRATION_P90_PCT,
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
    eprintln!(
        "current.csv: median |error| {:.1} %, p90 {:.1} % over {} rows from {} sources",
        s.median,
        s.p90,
        s.rows,
        sources.len()
    );
    within(
        "current hardware",
        s,
        CURRENT_MEDIAN_AIM_PCT,
        CURRENT_P90_RATCHET_PCT,
    );
}

/// Every row of the other-sources file (the 2008–2015 drives and
/// controllers of the four documents, measured elsewhere) names a preset,
/// topology and workload the simulator takes, comes from a source other
/// than the four documents, and the file's errors stay within its aim's
/// median and the p90 ratchet.
#[test]
fn other_source_measurements_all_simulate() {
    let (rows, v) = validated("other-sources.csv");
    within(
        "other sources",
        v.stats(),
        OTHER_MEDIAN_AIM_PCT,
        OTHER_P90_RATCHET_PCT,
    );
    let documents = ["petrov2010", "jdev2009", "admin2015", "intel2013"];
    for r in &rows {
        assert!(
            !documents.contains(&r.source.as_str()),
            "{} comes from a calibration document",
            r.id
        );
    }
}

/// Fail unless `s` is within a median and a 90th-percentile |error| (%).
fn within(what: &str, s: ErrorStats, median: f64, p90: f64) {
    assert!(
        s.median <= median && s.p90 <= p90,
        "{what}: median |error| {:.1} %, p90 {:.1} % over {} rows (bounds {median} / {p90} %)",
        s.median,
        s.p90,
        s.rows
    );
}

/// The held-back numbers of the four documents' tables
/// (`data/published/documents-rest.csv`): every row names a topology and
/// workload the simulator takes, comes from one of the four documents and
/// is none of the calibration's rows; and the four documents' rows
/// together (both files) do not drift back from where the model now has
/// them. When the rest were taken in they stood at median 21.2 %, p90
/// 122.8 % (the four documents together 12.4 % / 81.3 %); the model's
/// mechanisms since (the Areca's one cache task, the Adaptec's RAID-layer
/// latency and per-line mapping; whole stripes gathered for sequential
/// write streams, lines mapped ahead of them, read-ahead that fetches only
/// what it lacks; Table 12's ports without NCQ) brought them to 10.5 % /
/// 41.2 % (together 9.4 % / 38.9 %); admin2015 run as TKperf runs (two jobs
/// of 16), the S3500's flash read time from its die's data sheet and reads
/// ahead of queued programs bring them to 10.2 % / 41.2 % (together 8.9 % /
/// 37.7 %). The aim (issue 51) is 10 % / 30 % together and a median of 15 %
/// for each document; these bounds are a ratchet below it, and each
/// document's median meets the aim.
#[test]
#[ignore = "slow tier: simulates 622 published rows; .ci/run runs it (cargo test --workspace -- --ignored slow_)"]
fn slow_held_out_document_measurements_all_simulate_and_do_not_drift() {
    let (rows, v) = validated("documents-rest.csv");
    let (calibration, c) = validated("calibration.csv");
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
    within("held-out rows", v.stats(), 11.0, 42.5);
    let all: Vec<_> = v.rows.iter().chain(&c.rows).collect();
    within(
        "the four documents",
        ErrorStats::of(all.iter().copied()),
        9.5,
        39.0,
    );
    // Per document, each within the aim of 15 %: petrov2010 10.1 %,
    // jdev2009 5.1 %, admin2015 7.7 %, intel2013 9.7 %.
    for (doc, bound) in [
        ("petrov2010", 10.8),
        ("jdev2009", 6.0),
        ("admin2015", 10.0),
        ("intel2013", 12.0),
    ] {
        let d = ErrorStats::of(all.iter().copied().filter(|r| r.row.source == doc));
        assert!(
            d.median <= bound,
            "{doc}: median |error| {:.1} % over {} rows (bound {bound} %)",
            d.median,
            d.rows
        );
    }
}

/// Measurements found but not yet judged (`data/published/pending/`, whose
/// README says why): every row still names a preset, topology and workload
/// the simulator takes, so the work on them can start from a run.
#[test]
fn pending_measurements_all_simulate() {
    let (rows, v) = validated("pending/ssdiq-p5520.csv");
    let s = v.stats();
    eprintln!(
        "pending/ssdiq-p5520.csv: {} rows, median |error| {:.1} %, p90 {:.1} %",
        rows.len(),
        s.median,
        s.p90
    );
}
