//! Command-line tests of the reporting commands: sweep, merge, model, plot,
//! and reproduce --html.

mod common;
use common::*;
use serde_json::Value;

const TOPO: &str = "adaptec5085(raid{level}[stripe=64k]({n}*x25e))";
const WL: &str = "rw=randwrite bs={bs} iodepth=16 numjobs=2 runtime=0.5";

fn sweep(extra: &[&str]) -> Output {
    let mut a = vec![
        "sweep",
        "-t",
        TOPO,
        "-w",
        WL,
        "--vary",
        "level=0,5",
        "--vary",
        "n=4..5",
        "--vary",
        "bs=4k..16k*2",
    ];
    a.extend_from_slice(extra);
    raidlab(&a)
}

fn ok(o: &Output) -> String {
    assert!(o.status.success(), "{}", stderr(o));
    String::from_utf8(o.stdout.clone()).unwrap()
}

#[test]
fn sweep_writes_one_tidy_row_per_run() {
    let csv = ok(&sweep(&["--jobs", "2"]));
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 1 + 12, "{csv}");
    let head: Vec<&str> = lines[0].split(',').collect();
    assert_eq!(
        &head[..6],
        ["run", "level", "n", "bs", "topology", "workload"]
    );
    for c in [
        "iops",
        "mbps",
        "lat_avg_ms",
        "lat_p99_ms",
        "write_iops",
        "bottleneck",
        "steady",
        "steady_after_s",
    ] {
        assert!(head.contains(&c), "{c} missing from {head:?}");
    }
    // Product order: the last --vary fastest.
    assert!(lines[1].starts_with("0,0,4,4k,adaptec5085(raid0[stripe=64k](4*x25e)),"));
    assert!(lines[2].starts_with("1,0,4,8k,"));
    assert!(lines[12].starts_with("11,5,5,16k,adaptec5085(raid5[stripe=64k](5*x25e)),"));
    let col = |name: &str| head.iter().position(|c| *c == name).unwrap();
    let iops = |l: &str| -> f64 { l.split(',').nth(col("iops")).unwrap().parse().unwrap() };
    // RAID 5 small writes cost more than RAID 0's (same drives, same bs).
    assert!(
        iops(lines[10]) < iops(lines[4]),
        "{}\n{}",
        lines[10],
        lines[4]
    );
    // Every run found its steady window.
    assert!(lines[1..]
        .iter()
        .all(|l| l.split(',').nth(col("steady")) == Some("true")));
    // The saturated component is named.
    let b = col("bottleneck");
    assert!(
        lines[1].split(',').nth(b).is_some_and(|x| x.contains('#')),
        "{}",
        lines[1]
    );
    // Thread count does not change the output.
    assert_eq!(ok(&sweep(&["--jobs", "1"])), csv);
}

#[test]
fn shards_merge_into_the_unsharded_output() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("raidlab-sweep-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for format in ["csv", "json"] {
        let full = ok(&sweep(&["--format", format]));
        let mut slices = Vec::new();
        for i in 1..=3 {
            let p = dir.join(format!("s{i}.{format}")).display().to_string();
            let shard = format!("{i}/3");
            ok(&sweep(&["--format", format, "--shard", &shard, "-o", &p]));
            slices.push(p);
        }
        // Any order.
        let merged = ok(&raidlab(&["merge", &slices[2], &slices[0], &slices[1]]));
        assert_eq!(merged, full, "{format}");
        let out = dir.join(format!("m.{format}")).display().to_string();
        ok(&raidlab(&[
            "merge", &slices[1], &slices[0], &slices[2], "-o", &out,
        ]));
        assert_eq!(std::fs::read_to_string(&out).unwrap(), full);
        assert_input_error(&["merge", &slices[0], &slices[2]], "missing");
        assert_input_error(
            &["merge", &slices[0], &slices[0], &slices[1], &slices[2]],
            "more than one slice",
        );
        if format == "json" {
            let v: Value = serde_json::from_str(&full).unwrap();
            assert_eq!(v["sweep"]["runs"], 12);
            assert_eq!(v["rows"].as_array().unwrap().len(), 12);
            assert_eq!(v["columns"][1], "level");
        }
    }
    let csv = dir.join("s1.csv").display().to_string();
    let json = dir.join("s2.json").display().to_string();
    assert_input_error(&["merge", &csv, &json], "mix CSV and JSON");
    let other = tmp("other.csv", "run,x\n0,1\n");
    assert_input_error(&["merge", &csv, &other], "same sweep");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn sweep_rejects_bad_templates_and_values() {
    let t = "raid{level}(4*x25e)";
    let w = "rw=randread bs=4k runtime=0.1";
    assert_input_error(&["sweep", "-t", t, "-w", w, "--vary", "lvl=0,5"], "{level}");
    assert_input_error(
        &[
            "sweep", "-t", t, "-w", w, "--vary", "level=0", "--vary", "qd=1,2",
        ],
        "--vary qd",
    );
    assert_input_error(
        &["sweep", "-t", t, "-w", w, "--vary", "level=9..2"],
        "backwards",
    );
    assert_input_error(
        &["sweep", "-t", t, "-w", w, "--vary", "level"],
        "name=values",
    );
    // An impossible combination is refused before anything runs, by name.
    assert_input_error(
        &[
            "sweep",
            "-t",
            "raid{level}(2*x25e)",
            "-w",
            w,
            "--vary",
            "level=0,6",
        ],
        "run 1 (level=6)",
    );
    assert_input_error(
        &[
            "sweep",
            "-t",
            "raid0(2*x25e)",
            "-w",
            "rw={rw}",
            "--vary",
            "rw=read,sideways",
        ],
        "run 1 (rw=sideways)",
    );
    assert_input_error(
        &[
            "sweep", "-t", t, "-w", w, "--vary", "level=0", "--shard", "3/2",
        ],
        "--shard",
    );
}

#[test]
fn sweep_runs_real_arrays_from_a_template_of_paths() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("raidlab-sweep-real-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let m: Vec<String> = (0..4)
        .map(|i| format!("{}[size=8m]", dir.join(format!("m{i}")).display()))
        .collect();
    let topo = format!("raid{{level}}({})", m.join(","));
    let args = [
        "sweep",
        "--engine",
        "real",
        "-t",
        &topo,
        "-w",
        "rw=randwrite bs={bs} size=4m iodepth=4",
        "--vary",
        "level=0,5,6",
        "--vary",
        "bs=4k,64k",
        "--buffered",
        "--verify",
    ];
    // The level changes from run to run: each run must create its arrays
    // anew, which the sweep refuses to do unasked, before anything runs.
    let o = raidlab(&args);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--create"), "{}", stderr(&o));
    assert!(!dir.join("m0").exists(), "nothing ran");
    let csv = ok(&raidlab(&[&args[..], &["--create"]].concat()));
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 7, "{csv}");
    let head: Vec<&str> = lines[0].split(',').collect();
    let wi = head.iter().position(|c| *c == "write_iops").unwrap();
    for l in &lines[1..] {
        let fields = raidlab_fields(l);
        let x: f64 = fields[wi].parse().unwrap();
        assert!(x > 0.0, "{l}");
    }
    // Files the first run creates are too small for a later run: refused
    // before anything runs (and nothing is created), not at run 1.
    let grow = format!(
        "raid0({},{})",
        dir.join("g0").display(),
        dir.join("g1").display()
    );
    let o = raidlab(&[
        "sweep",
        "--engine",
        "real",
        "-t",
        &grow,
        "-w",
        "rw=randwrite bs=4k size={s} runtime=0.1",
        "--vary",
        "s=1m,2m",
        "--buffered",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("run 1 (s=2m)"), "{}", stderr(&o));
    assert!(o.stdout.is_empty());
    assert!(!dir.join("g0").exists(), "nothing ran");
    let _ = std::fs::remove_dir_all(&dir);
}

/// CSV fields of a line (quoted fields hold commas).
fn raidlab_fields(line: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut q = false;
    for c in line.chars() {
        match c {
            '"' => q = !q,
            ',' if !q => out.push(String::new()),
            _ => out.last_mut().unwrap().push(c),
        }
    }
    out
}

#[test]
fn model_gives_the_survey_table_and_expectations() {
    let t = ok(&raidlab(&["model", "--level", "raid5", "--drives", "5"]));
    assert!(t.contains("small-random-write"), "{t}");
    assert!(t.contains("1/4"), "{t}");
    assert!(t.contains("4/5"), "{t}");
    let j: Value = serde_json::from_str(&ok(&raidlab(&[
        "model",
        "--level",
        "raid5",
        "--drives",
        "5",
        "--pattern",
        "small-random-write",
        "--one-drive",
        "3300",
        "--format",
        "json",
    ])))
    .unwrap();
    let p = &j["patterns"][0];
    assert_eq!(p["tc"], 0.25);
    assert_eq!(p["requests"], 4.0);
    assert_eq!(p["expected"], 4125.0);
    // One drive simulated: RAID 0 random reads expect D × one drive.
    let j: Value = serde_json::from_str(&ok(&raidlab(&[
        "model",
        "--level",
        "raid0",
        "--drives",
        "4",
        "--pattern",
        "small-random-read",
        "--format",
        "json",
    ])))
    .unwrap();
    let p = &j["patterns"][0];
    let one = p["one_drive"].as_f64().unwrap();
    assert!(one > 20_000.0 && one < 50_000.0, "x25e 4k QD32: {one}");
    assert_eq!(p["expected"].as_f64().unwrap(), 4.0 * one);
    // Usage errors from the argument parser are one line with status 2 too.
    assert_input_error(&["model", "--level"], "a value is required");
    assert_input_error(&["model", "--level", "raid5"], "not provided: --drives");
    for (extra, want) in [
        (&["--level", "raid7", "--drives", "4"][..], "unknown level"),
        (&["--level", "raid10", "--drives", "5"], "even number"),
        (&["--level", "raid6", "--drives", "3"], "at least 4"),
        (
            &["--level", "raid5", "--drives", "4", "--pattern", "tiny"],
            "unknown pattern",
        ),
        (
            &[
                "--level",
                "raid5",
                "--drives",
                "4",
                "--drive",
                "raid0(2*x25e)",
            ],
            "not a drive preset",
        ),
        (
            &[
                "--level",
                "raid5",
                "--drives",
                "4",
                "--pattern",
                "small-random-read",
                "--one-drive=-3",
            ],
            "not a positive figure",
        ),
    ] {
        let mut a = vec!["model"];
        a.extend_from_slice(extra);
        assert_input_error(&a, want);
    }
    // The sim table puts the expectation beside the simulated figure.
    let s = ok(&raidlab(&[
        "sim",
        "-t",
        "adaptec5085(raid5[stripe=64k](5*x25e))",
        "-w",
        "rw=randwrite bs=8k iodepth=16 numjobs=10 runtime=0.3 ramp_time=0.2",
    ]));
    assert!(
        s.contains("analytic") && s.contains("T/C 1/4 × 5 drives"),
        "{s}"
    );
}

/// The Chromium binary Debian installs, if present.
fn chromium() -> Option<&'static str> {
    ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|b| {
            Command::new(b)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        })
}

/// `reproduce admin2015 --html` into a directory of its own, with the page's
/// static checks: (directory, page, its table and figure counts).
fn html_report(tag: &str) -> (std::path::PathBuf, std::path::PathBuf, usize, usize) {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("raidlab-html-{tag}-{}", std::process::id()));
    let d = dir.display().to_string();
    let o = raidlab(&["reproduce", "admin2015", "--html", &d]);
    assert!(o.status.success(), "{}", stderr(&o));
    // The terminal table is still printed.
    assert!(String::from_utf8_lossy(&o.stdout).contains("admin2015 Figure 5"));
    let page = dir.join("admin2015.html");
    let html = std::fs::read_to_string(&page).unwrap();
    let tables = html.matches("<table").count();
    let svgs = html.matches("<svg").count();
    assert!(
        tables >= 2 && svgs >= tables,
        "{tables} tables, {svgs} figures"
    );
    // Self-contained: nothing to fetch.
    for bad in ["<script", "<link", "src=", "@import", "url("] {
        assert!(!html.contains(bad), "page refers to '{bad}'");
    }
    // Error cells are coloured by class.
    assert!(html.contains("class=\"e10\"") || html.contains("class=\"e25\""));
    assert!(std::fs::read_to_string(dir.join("index.html"))
        .unwrap()
        .contains("admin2015.html"));

    (dir, page, tables, svgs)
}

#[test]
fn html_report_is_self_contained() {
    let (dir, ..) = html_report("static");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
#[cfg_attr(
    raidlab_no_chromium,
    ignore = "Chromium is not installed (apt-get install chromium)"
)]
fn html_report_renders_in_headless_chromium() {
    let (dir, page, tables, svgs) = html_report("chromium");
    let browser = chromium().expect("Chromium is installed (build.rs found it)");
    let url = format!("file://{}", page.display());
    let profile = format!("--user-data-dir={}", dir.join("profile").display());
    let base = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
    ];
    let mut dump = Command::new(browser);
    dump.args(base).arg(&profile).args(["--dump-dom", &url]);
    let out = dump.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dom = String::from_utf8_lossy(&out.stdout);
    // The browser parsed every table and every SVG, with their text.
    assert_eq!(dom.matches("<table").count(), tables);
    assert_eq!(dom.matches("<svg").count(), svgs);
    assert!(dom.contains("published") && dom.contains("simulated"));
    assert!(
        dom.contains("<polyline") || dom.contains("<rect"),
        "SVG shapes"
    );
    let shot = dir.join("shot.png");
    let mut s = Command::new(browser);
    s.args(base)
        .arg(&profile)
        .arg(format!("--screenshot={}", shot.display()))
        .args(["--window-size=1400,2000", &url]);
    let out = s.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let png = std::fs::read(&shot).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    // A blank page compresses to a few KB; tables and charts do not.
    assert!(png.len() > 50_000, "screenshot of {} bytes", png.len());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn plot_draws_svg_and_png_from_sweep_results() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("raidlab-plot-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let csv = dir.join("s.csv").display().to_string();
    let json = dir.join("s.json").display().to_string();
    ok(&sweep(&["-o", &csv]));
    ok(&sweep(&["--format", "json", "-o", &json]));
    let svg = dir.join("f.svg").display().to_string();
    ok(&raidlab(&[
        "plot", &csv, "--x", "bs", "--y", "iops", "--series", "topology", "--where", "n=4", "-o",
        &svg,
    ]));
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.starts_with("<svg"));
    assert!(text.contains("IOPS (I/Os per second)") && text.contains("block size"));
    assert!(text.contains("16k") && text.contains("raid5[stripe=64k](4*x25e)"));
    // JSON results draw the same chart.
    let svg2 = dir.join("g.svg").display().to_string();
    ok(&raidlab(&[
        "plot", &json, "--x", "bs", "--y", "iops", "--series", "topology", "--where", "n=4", "-o",
        &svg2,
    ]));
    assert_eq!(std::fs::read_to_string(&svg2).unwrap(), text);
    let png = dir.join("f.png").display().to_string();
    ok(&raidlab(&[
        "plot",
        &csv,
        "--x",
        "n",
        "--y",
        "lat_avg_ms",
        "--series",
        "bs",
        "--where",
        "level=5",
        "--log-y",
        "-o",
        &png,
    ]));
    let bytes = std::fs::read(&png).unwrap();
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
    assert!(bytes.len() > 10_000);
    assert_input_error(
        &["plot", &csv, "--x", "bs", "--y", "iops", "-o", &svg],
        "several rows",
    );
    assert_input_error(
        &["plot", &csv, "--x", "bs", "--y", "nope", "-o", &svg],
        "no column 'nope'",
    );
    assert_input_error(
        &["plot", &csv, "--x", "bs", "--y", "iops", "-o", "f.gif"],
        ".svg or .png",
    );
    let bad = tmp("bad.csv", "a,b\n1,2,3\n");
    assert_input_error(
        &["plot", &bad, "--x", "a", "--y", "b", "-o", &svg],
        "line 2",
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `plan --html` into a directory of its own, with the page's static
/// checks: self-contained, a row and a point per configuration, the Pareto
/// front marked. Returns (directory, page, rows).
fn plan_html(tag: &str) -> (std::path::PathBuf, std::path::PathBuf, usize) {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("raidlab-plan-{tag}-{}", std::process::id()));
    let d = dir.display().to_string();
    let o = raidlab(&[
        "plan",
        "-w",
        "rw=randread bs=4k iodepth=16 numjobs=2 runtime=0.3",
        "--capacity",
        "400g",
        "--drives",
        "s3500-480,s3500-800",
        "--max-drives",
        "4",
        "--levels",
        "raid5,raid10",
        "--top",
        "4",
        "--html",
        &d,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let page = dir.join("plan.html");
    let html = std::fs::read_to_string(&page).unwrap();
    for bad in ["<script", "<link", "src=", "@import", "url("] {
        assert!(!html.contains(bad), "page refers to '{bad}'");
    }
    let rows = html.matches("<tr").count() - 1;
    assert!(rows >= 4, "{rows} rows");
    assert_eq!(html.matches("<circle").count(), rows);
    assert!(html.contains("class=\"pareto\"") && html.contains("usable TB"));
    (dir, page, rows)
}

#[test]
fn plan_html_has_the_rows_and_a_pareto_figure() {
    let (dir, ..) = plan_html("static");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
#[cfg_attr(
    raidlab_no_chromium,
    ignore = "Chromium is not installed (apt-get install chromium)"
)]
fn plan_html_renders_in_headless_chromium() {
    let (dir, page, rows) = plan_html("chromium");
    let b = chromium().expect("Chromium is installed (build.rs found it)");
    let profile = format!("--user-data-dir={}", dir.join("profile").display());
    let out = Command::new(b)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
        ])
        .arg(&profile)
        .args(["--dump-dom", &format!("file://{}", page.display())])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dom = String::from_utf8_lossy(&out.stdout);
    assert_eq!(dom.matches("<circle").count(), rows);
    assert!(dom.contains("raidlab plan"));
    let _ = std::fs::remove_dir_all(&dir);
}
