//! The NVMe presets fitted by `raidlab calibrate --from` to their makers'
//! figures (`data/datasheets/`) still reproduce those figures: a change to
//! the model that moves them means the presets need fitting again.

use raidlab_core::preset::PresetDb;
use raidlab_core::published::parse_csv;
use raidlab_studies::validate::validate;

/// Most a fitted figure may move before the preset is stale (%): the fits
/// meet their figures within a fraction of a percent.
const STALE_PCT: f64 = 5.0;

fn check(file: &str) {
    let path = format!(
        "{}/../../data/datasheets/{file}",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).expect("datasheet file");
    let rows = parse_csv(&text).expect("datasheet CSV");
    let v = validate(&rows, &PresetDb::builtin(), 1, 2, false, &|_, _| {});
    assert!(v.failed.is_empty(), "{file}: {:?}", v.failed);
    for r in &v.rows {
        assert!(
            r.error_pct.abs() <= STALE_PCT,
            "{}: {} published, {:.0} simulated ({:+.1} %)",
            r.row.id,
            r.row.value,
            r.simulated,
            r.error_pct
        );
    }
}

#[test]
fn pm9a3_meets_its_datasheet() {
    check("samsung-pm9a3-7.68tb.csv");
}

#[test]
fn p5500_meets_its_datasheet() {
    check("intel-d7-p5500-7.68tb.csv");
}

#[test]
fn pm1743_meets_its_datasheet() {
    check("samsung-pm1743-15.36tb.csv");
}

#[test]
fn micron5400_meets_its_datasheet() {
    check("micron-5400-pro-3.84tb.csv");
}

#[test]
fn pm1653_meets_its_datasheet() {
    check("samsung-pm1653-15.36tb.csv");
}

#[test]
fn pm9a3_960_meets_its_datasheet() {
    check("samsung-pm9a3-960gb.csv");
}

#[test]
fn p5810_meets_its_datasheet() {
    check("solidigm-d7-p5810-800gb.csv");
}
