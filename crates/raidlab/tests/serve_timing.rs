//! A served simulated array answers as the model does: fio's nbd engine,
//! random 4 KiB reads and writes at queue depth 1 and 32, against `raidlab
//! serve` of an X25-E, a RAID 5 of four S3500s behind a MegaRAID and an md
//! RAID 10 of NVMe drives, measures what `raidlab sim` says for the same
//! job, give or take the NBD round trip (measured just before and after
//! each case, in its direction, against a file served from memory and, for
//! a depth-1 case, also against a server that holds each request for the
//! model's mean latency, the worse of the two), and the server's drift
//! report agrees. Where the host cannot carry the model's request rate over
//! NBD, the server must say so and the client must never measure more than
//! the model. A case whose
//! timing misses on host noise is measured again once the other cases
//! have been, up to [`ATTEMPTS`] times, and the test says which were.
//!
//! Alone in its test binary: the timing it checks needs the machine's cores
//! to itself (test binaries run one after another).

mod common;
use common::held::serve_held;
use common::served::{serve, stop};
use common::*;

/// Seconds each fio run lasts.
const FIO_SECONDS: u32 = 3;

fn dir(name: &str) -> std::path::PathBuf {
    let d = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "raidlab-serve-timing-{}-{name}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// What a client (or the simulator) measured: IOPS, mean, p99 and p99.8
/// latency, µs.
#[derive(Debug, Clone, Copy)]
struct Seen {
    iops: f64,
    mean: f64,
    p99: f64,
    p998: f64,
}

/// fio's nbd engine against the socket: `rw` of 4 KiB at `qd`, for
/// [`FIO_SECONDS`].
fn fio(sock: &std::path::Path, rw: &str, qd: u32) -> Seen {
    fio_for(sock, rw, qd, FIO_SECONDS, 0)
}

/// fio's nbd engine against the socket: `rw` of 4 KiB at `qd`, `secs` long,
/// thinking `think_us` after each I/O when that is not 0.
fn fio_for(sock: &std::path::Path, rw: &str, qd: u32, secs: u32, think_us: u32) -> Seen {
    let think: Vec<String> = (think_us > 0)
        .then(|| format!("--thinktime={think_us}"))
        .into_iter()
        .collect();
    let o = Command::new("fio")
        .args(&think)
        .args([
            "--name=t",
            "--ioengine=nbd",
            &format!("--uri=nbd+unix:///?socket={}", sock.display()),
            &format!("--rw={rw}"),
            "--bs=4k",
            &format!("--iodepth={qd}"),
            &format!("--runtime={secs}"),
            "--time_based",
            "--output-format=json",
            "--percentile_list=99:99.8",
        ])
        .output()
        .expect("fio");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "fio: {}", stderr(&o));
    let j: serde_json::Value = serde_json::from_str(&out[out.find('{').unwrap()..]).unwrap();
    let d = &j["jobs"][0][if rw.contains("read") { "read" } else { "write" }];
    Seen {
        iops: d["iops"].as_f64().unwrap(),
        mean: d["lat_ns"]["mean"].as_f64().unwrap() / 1e3,
        p99: d["clat_ns"]["percentile"]["99.000000"].as_f64().unwrap() / 1e3,
        p998: d["clat_ns"]["percentile"]["99.800000"].as_f64().unwrap() / 1e3,
    }
}

/// `raidlab sim` of the same job.
fn sim(topo: &str, rw: &str, qd: u32) -> Seen {
    let j = json_of(&[
        "sim",
        "-t",
        topo,
        "-w",
        &format!("rw={rw} bs=4k iodepth={qd} runtime=2"),
        "--format",
        "json",
    ]);
    let s = &j["summary"];
    Seen {
        iops: s["iops"].as_f64().unwrap(),
        mean: s["lat_avg_ms"].as_f64().unwrap() * 1e3,
        p99: s["lat_p99_ms"].as_f64().unwrap() * 1e3,
        // The simulator reports p99.9; its p99.8 lies at or below it.
        p998: s["lat_p999_ms"].as_f64().unwrap() * 1e3,
    }
}

/// Seconds each measurement of the round trip lasts.
const ROUND_TRIP_SECONDS: u32 = 2;

/// The file the round trip is measured against: 64 MiB written once, so
/// that it sits in the page cache and no measurement waits on its
/// write-back.
fn null_image(d: &std::path::Path) -> std::path::PathBuf {
    let img = d.join("null.img");
    std::fs::write(&img, vec![1u8; 64 << 20]).unwrap();
    img
}

/// The NBD round trip on this machine: fio's `rw` at queue depth 1 (mean,
/// p99 and p99.8, µs). A write's round trip carries its data the other
/// way, so each direction is measured as it is used. With `hold_us` 0,
/// against `img` served from the page cache. Otherwise also against a
/// server that holds every request `hold_us` before answering it, the hold
/// taken off each figure, and the larger of the two is the round trip: a
/// queue-depth-1 case leaves its client idle for the model's latency
/// inside every request, and on a virtual machine a CPU that idled that
/// long wakes slower than one that did not (the X25-E's served reads, 202
/// µs in the model, measured 279-289 µs means here where the round trip
/// with the same idle gap outside the request, as fio's think time,
/// measured 42 µs). The held server alone is not enough: on a CI host of
/// two cores its answers to a 61 µs hold cost 21 µs beyond the hold where
/// the served file's cost 54 µs and the served NVMe array's read (61 µs in
/// the model, answered 0.7 µs late on average) 49 µs beyond the model, in
/// three attempts alike; one thread answering zeroes is a lighter server
/// than one that also moves the data and runs the model.
fn round_trip(img: &std::path::Path, rw: &str, hold_us: u32) -> Seen {
    let sock = img.with_extension("sock");
    let child = serve(img.to_str().unwrap(), &sock, &["--force"]);
    let plain = fio_for(&sock, rw, 1, ROUND_TRIP_SECONDS, 0);
    stop(child);
    if hold_us == 0 {
        return plain;
    }
    let server = serve_held(&sock, std::time::Duration::from_micros(hold_us.into()));
    let seen = fio_for(&sock, rw, 1, ROUND_TRIP_SECONDS, 0);
    server.stop();
    let hold = f64::from(hold_us);
    let held = Seen {
        iops: seen.iops,
        mean: seen.mean - hold,
        p99: seen.p99 - hold,
        p998: seen.p998 - hold,
    };
    worse(plain, held)
}

/// Each figure of two measurements of the round trip, the worse: around
/// one case, those just before and just after it in the case's direction.
/// On a machine of two cores the protocol's cost moves with whatever else
/// runs (the read round trip's p99 ranged from 63 to 84 µs over two runs'
/// cases), so one measurement at the start misjudges the cases that run
/// minutes later.
fn worse(a: Seen, b: Seen) -> Seen {
    Seen {
        iops: a.iops.min(b.iops),
        mean: a.mean.max(b.mean),
        p99: a.p99.max(b.p99),
        p998: a.p998.max(b.p998),
    }
}

/// How many times a case is measured before its timing counts as wrong.
/// The model's figures are deterministic; the host's are not: on a CI
/// machine of two cores one run's fio p99.8 reached 2.2 ms where the round
/// trip's was 0.85 ms, and that case's mean missed its bound by 0.01 µs.
/// A case passes when one of its attempts fits every bound; a model that
/// is wrong misses all of them.
const ATTEMPTS: usize = 3;

/// Cases that must keep up: as many as the X25-E has. Its rates (4,900
/// reads and 7,100 writes a second, 35,700 reads a second at queue depth
/// 32, in `raidlab sim`) are within what a host of two cores carries over
/// NBD; the deep-queue rates of the NVMe array and the MegaRAID need more
/// cores.
const KEEP_UP: usize = 4;

/// What one served case came to: the server kept up (and every bound
/// held), or it said it could not.
enum Outcome {
    KeptUp,
    Behind,
}

/// Serve `topo`, run fio's `rw` at `qd` against it and check it against
/// the model `want`; `Err` carries the case's figures and the bound it
/// missed.
fn served_case(
    d: &std::path::Path,
    null: &std::path::Path,
    topo: &str,
    rw: &str,
    qd: u32,
    want: Seen,
) -> Result<Outcome, String> {
    // Deep queues keep the client busy; one I/O at a time leaves it idle
    // for the model's latency in each request.
    let hold_us = if qd == 1 { want.mean.round() as u32 } else { 0 };
    let before = round_trip(null, rw, hold_us);
    let sock = d.join("s.sock");
    let report = d.join("drift.json");
    let prep = format!("rw={rw} bs=4k iodepth={qd}");
    let child = serve(
        topo,
        &sock,
        &["-w", &prep, "--report", report.to_str().unwrap()],
    );
    let got = fio(&sock, rw, qd);
    let err = stop(child);
    let rt = worse(before, round_trip(null, rw, hold_us));
    let drift: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let case = format!(
        "{topo} {rw} QD{qd}: fio {got:?}, sim {want:?}, NBD round trip {rt:?}, drift {drift}"
    );
    eprintln!("{case}");
    // Never faster than the model, whatever the host: no noise makes a
    // client faster, so this is not retried.
    assert!(got.iops <= 1.1 * want.iops, "{case}");
    if drift["kept_up"] != true {
        // The server said so, in its last words.
        assert!(err.contains("did NOT keep up"), "{case}\n{err}");
        return Ok(Outcome::Behind);
    }
    let bound = |ok: bool, what: &str| {
        if ok {
            Ok(())
        } else {
            Err(format!("{case}: {what}"))
        }
    };
    // Between the model alone and the model plus the round trip (and the
    // lateness the server reports).
    let late_mean = drift["late_mean_us"].as_f64().unwrap();
    bound(got.mean >= 0.9 * want.mean, "mean below the model's")?;
    bound(
        got.mean <= 1.1 * want.mean + rt.mean + late_mean,
        "mean above the model's plus the round trip and the lateness",
    )?;
    bound(
        got.iops >= 0.9 * 1e6 * qd as f64 / (want.mean + rt.mean) || got.iops >= 0.9 * want.iops,
        "IOPS below what the model and the round trip allow",
    )?;
    // The drift report accounts for what the client saw: the model's
    // latency, the lateness, and at most a round trip (and, deep queues, a
    // twentieth of the model's latency of waiting in the client and the
    // socket before arriving). The tail is checked against the served
    // model's own, fio's p99 between the model's p98 and p99.5 (plus the
    // round trip's tail, and the lateness the server reports at its p99:
    // the round trip is measured against a file served at once, which never
    // waits for a timed wake-up), within a quarter. The round trip's tail is
    // taken at p99.8: a served request lasts 4 to 5 round trips at queue
    // depth 1, so the machine's rare pauses, which hit a request in
    // proportion to how long it lasts, reach 1 % of served requests where
    // they reach 0.2 % of round trips. Where the model's own rare pauses (an
    // X25-E's garbage collection under QD1 writes) sit near 1 % of requests,
    // the p99 alone jumps between them (0.29 to 1.26 ms from one 3 s window
    // to the next, in `sim` as in a serve).
    let model = drift["model_lat_mean_us"].as_f64().unwrap();
    let tail = |k: &str| drift[k].as_f64().unwrap();
    bound(
        got.p99 >= 0.75 * tail("model_lat_p98_us"),
        "p99 below the model's p98",
    )?;
    bound(
        got.p99 <= 1.25 * (tail("model_lat_p99_5_us") + rt.p998) + tail("late_p99_us"),
        "p99 above the model's p99.5 plus the round trip's tail",
    )?;
    let rest = got.mean - model - late_mean;
    bound(
        rest >= -0.05 * model && rest <= 1.25 * rt.mean + 0.05 * model + 5.0,
        &format!("{rest:.1} us unexplained by the drift report"),
    )?;
    Ok(Outcome::KeptUp)
}

#[test]
#[ignore = "slow tier"]
#[cfg_attr(raidlab_no_fio, ignore = "fio is not installed")]
fn slow_served_simulated_arrays_answer_as_the_model_does() {
    let d = dir("t");
    let null = null_image(&d);
    let mut cases = Vec::new();
    for topo in [
        "x25e",
        "megaraid9361(raid5(4*s3500-800))",
        "host[profile=host2023](raid10(4*pm9a3))",
    ] {
        for rw in ["randread", "randwrite"] {
            for qd in [1, 32] {
                cases.push((topo, rw, qd, sim(topo, rw, qd)));
            }
        }
    }
    // Every case is measured once; those that missed are measured again
    // only after all the others, so a spell of host noise (a virtual
    // machine's neighbours busy for a minute) spoils one attempt of
    // several cases rather than every attempt of one.
    let mut kept_up = 0;
    let mut misses: Vec<Vec<String>> = vec![Vec::new(); cases.len()];
    let mut pending: Vec<usize> = (0..cases.len()).collect();
    for attempt in 1..=ATTEMPTS {
        let again = attempt < ATTEMPTS;
        let mut missed = Vec::new();
        for i in pending {
            let (topo, rw, qd, want) = cases[i];
            match served_case(&d, &null, topo, rw, qd, want) {
                // A server that fell behind said so, as it must; while
                // the cases that kept up are still too few, the host's
                // noise (one pause over 1 % of a 3 s case's requests is
                // enough) is given the same further attempts as a missed
                // bound.
                Ok(Outcome::Behind) if again && kept_up < KEEP_UP => {
                    misses[i].push(format!("{topo} {rw} QD{qd}: fell behind"));
                    missed.push(i);
                }
                Ok(Outcome::KeptUp) => kept_up += 1,
                Ok(Outcome::Behind) => {}
                Err(m) if again => {
                    misses[i].push(m);
                    missed.push(i);
                }
                Err(m) => {
                    misses[i].push(m);
                    panic!(
                        "missed in all {ATTEMPTS} attempts:\n{}",
                        misses[i].join("\n")
                    )
                }
            }
        }
        pending = missed;
    }
    let retried: Vec<String> = misses
        .iter()
        .filter(|m| !m.is_empty())
        .map(|m| m.join("\n"))
        .collect();
    // A case that passed only when measured again is said so, with what
    // the host did to the attempts before.
    eprintln!(
        "serve timing: {} of 12 cases measured again after host noise{}",
        retried.len(),
        if retried.is_empty() {
            String::new()
        } else {
            format!(":\n{}", retried.join("\n"))
        }
    );
    assert!(kept_up >= KEEP_UP, "only {kept_up} of 12 cases kept up");
}
