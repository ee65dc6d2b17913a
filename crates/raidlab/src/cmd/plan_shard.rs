//! Shard files of `raidlab plan --shard i/n`, and joining them for
//! `raidlab merge`.
//!
//! A shard file records the question (the arguments and the text of every
//! presets file, so the merge needs neither) and the shard's rows by
//! candidate number. Figures are JSON numbers, which serde_json writes and
//! reads back bit for bit (its `float_roundtrip` feature), so the merge
//! ranks exactly the figures the unsharded plan would.

use super::plan_args::Args;
use crate::common::read_file;
use crate::failure::Failure;
use raidlab_studies::plan::{Candidate, CandidateId, Row, Shard, Work};
use serde::{Deserialize, Serialize};

/// The format version a shard file carries; a merge refuses others.
const VERSION: u32 = 1;

/// What identifies a plan and a shard of it.
#[derive(Serialize, Deserialize, Clone)]
struct Header {
    version: u32,
    shard: usize,
    shards: usize,
    considered: usize,
    args: Args,
    presets: Vec<(String, String)>,
}

/// A row's figures; the configuration is the candidate numbered `id`.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RowRecord {
    id: usize,
    iops: f64,
    mbps: f64,
    lat_p99_ms: f64,
    bottleneck: String,
    endurance_years: Option<f64>,
    steady: bool,
    /// The guard a job tripped (absent: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tripped: Option<String>,
}

/// Degraded IOPS and rebuild hours of a candidate (`null`: none).
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct DegradedRecord {
    id: usize,
    figures: Option<(f64, Option<f64>)>,
}

/// A shard file.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Document {
    raidlab_plan_shard: Header,
    screened: Vec<RowRecord>,
    full: Vec<RowRecord>,
    degraded: Vec<DegradedRecord>,
}

/// The work of a set of shard files, by candidate number, before it is
/// checked against the candidates.
pub struct RawWork {
    screened: Vec<RowRecord>,
    full: Vec<RowRecord>,
    degraded: Vec<DegradedRecord>,
}

/// The text of each presets file, read once.
pub fn preset_texts(files: &[String]) -> Result<Vec<(String, String)>, Failure> {
    files
        .iter()
        .map(|f| Ok((f.clone(), read_file(f, "presets file")?)))
        .collect()
}

/// `--shard i/n`.
pub fn parse(s: &str) -> Result<Shard, Failure> {
    let (index, count) =
        raidlab_report::sweep::parse_shard(s).map_err(|e| Failure::input(e.to_string()))?;
    Ok(Shard { index, count })
}

/// The shard file of `work`.
pub fn document(
    args: &Args,
    presets: &[(String, String)],
    shard: Shard,
    considered: usize,
    work: &Work,
) -> serde_json::Value {
    let record = |r: &Row| RowRecord {
        id: r.candidate.id.0,
        iops: r.iops,
        mbps: r.mbps,
        lat_p99_ms: r.lat_p99_ms,
        bottleneck: r.bottleneck.clone(),
        endurance_years: r.endurance_years,
        steady: r.steady,
        tripped: r.tripped.clone(),
    };
    let doc = Document {
        raidlab_plan_shard: Header {
            version: VERSION,
            shard: shard.index,
            shards: shard.count,
            considered,
            args: args.question_only(),
            presets: presets.to_vec(),
        },
        screened: work.screened.values().map(record).collect(),
        full: work.full.values().map(record).collect(),
        degraded: work
            .degraded
            .iter()
            .map(|(id, figures)| DegradedRecord {
                id: id.0,
                figures: *figures,
            })
            .collect(),
    };
    serde_json::to_value(doc).unwrap_or(serde_json::Value::Null)
}

/// Whether `text` is a plan shard file (rather than a sweep's slice).
pub fn is_shard(text: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(text)
        .is_ok_and(|v| v.get("raidlab_plan_shard").is_some())
}

/// Every shard of one plan, joined.
pub struct Joined {
    /// The question's arguments.
    pub args: Args,
    /// Each presets file's name and text.
    pub presets: Vec<(String, String)>,
    /// The shards' figures.
    pub work: RawWork,
}

/// The question and the joined work of every shard of one plan, checked:
/// one question, each of shards 1 to n exactly once.
pub fn join(slices: &[(String, String)]) -> Result<Joined, Failure> {
    let mut header: Option<(String, Header, serde_json::Value)> = None;
    let mut seen = Vec::new();
    let mut work = RawWork {
        screened: Vec::new(),
        full: Vec::new(),
        degraded: Vec::new(),
    };
    for (name, text) in slices {
        let doc: Document = serde_json::from_str(text)
            .map_err(|e| Failure::input(format!("{name}: not a plan shard file: {e}")))?;
        let h = doc.raidlab_plan_shard;
        if h.version != VERSION {
            return Err(Failure::input(format!(
                "{name}: shard file version {} (this raidlab reads {VERSION})",
                h.version
            )));
        }
        let key = serde_json::json!([h.shards, h.considered, h.args, h.presets]);
        match &header {
            Some((first, _, k)) if *k != key => {
                return Err(Failure::input(format!(
                    "{name} is a shard of another plan than {first} (its question, presets or shard count differ)"
                )))
            }
            Some(_) => {}
            None => header = Some((name.clone(), h.clone(), key)),
        }
        if h.shard == 0 || h.shard > h.shards || seen.contains(&h.shard) {
            return Err(Failure::input(format!(
                "{name}: shard {}/{} is out of range or given twice",
                h.shard, h.shards
            )));
        }
        seen.push(h.shard);
        work.screened.extend(doc.screened);
        work.full.extend(doc.full);
        work.degraded.extend(doc.degraded);
    }
    let Some((_, h, _)) = header else {
        return Err(Failure::input("merge: give the shard files to join"));
    };
    if seen.len() != h.shards {
        let missing: Vec<String> = (1..=h.shards)
            .filter(|i| !seen.contains(i))
            .map(|i| format!("{i}/{}", h.shards))
            .collect();
        return Err(Failure::input(format!(
            "merge: shard(s) {} missing",
            missing.join(", ")
        )));
    }
    Ok(Joined {
        args: h.args,
        presets: h.presets,
        work,
    })
}

/// The joined work as rows of `cands`, every candidate number checked.
pub fn rows_of(raw: RawWork, cands: &[Candidate]) -> Result<Work, Failure> {
    let candidate = |id: usize| {
        cands.get(id).ok_or_else(|| {
            Failure::input(format!(
                "a shard names configuration {id} of a plan of {}",
                cands.len()
            ))
        })
    };
    let row = |r: RowRecord| -> Result<(CandidateId, Row), Failure> {
        let c = candidate(r.id)?;
        Ok((
            c.id,
            Row {
                candidate: c.clone(),
                iops: r.iops,
                mbps: r.mbps,
                lat_p99_ms: r.lat_p99_ms,
                bottleneck: r.bottleneck,
                endurance_years: r.endurance_years,
                steady: r.steady,
                degraded_iops: None,
                rebuild_hours: None,
                tripped: r.tripped,
            },
        ))
    };
    let mut work = Work::default();
    for r in raw.screened {
        let (id, r) = row(r)?;
        work.screened.insert(id, r);
    }
    for r in raw.full {
        let (id, r) = row(r)?;
        work.full.insert(id, r);
    }
    for d in raw.degraded {
        work.degraded.insert(candidate(d.id)?.id, d.figures);
    }
    Ok(work)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const SHARD: &str = r#"{"raidlab_plan_shard": {"version": 1, "shard": 1, "shards": 2,
        "considered": 3, "args": {}, "presets": []},
        "screened": [], "full": [], "degraded": []}"#;

    proptest! {
        /// Whatever a shard file holds, joining it is a result, never a
        /// panic: bytes cut or changed anywhere, and JSON of the right
        /// shape with any numbers.
        #[test]
        fn joining_any_text_is_an_answer_or_one_error(
            cut in 0usize..400,
            at in 0usize..400,
            byte in any::<u8>(),
            id in any::<usize>(),
            x in any::<f64>(),
        ) {
            let mut bytes = SHARD.as_bytes().to_vec();
            bytes.truncate(cut.max(1).min(bytes.len()));
            if let Some(b) = bytes.get_mut(at) {
                *b = byte;
            }
            let text = String::from_utf8_lossy(&bytes).into_owned();
            let _ = join(&[("f".into(), text.clone()), ("g".into(), text)]);
            let row = format!(
                r#"{{"id": {id}, "iops": {x:e}, "mbps": 1, "lat_p99_ms": 1, "bottleneck": "", "endurance_years": null, "steady": true}}"#
            );
            let raw = RawWork {
                screened: serde_json::from_str::<RowRecord>(&row).into_iter().collect(),
                full: Vec::new(),
                degraded: vec![DegradedRecord { id, figures: Some((x, None)) }],
            };
            prop_assert!(rows_of(raw, &[]).is_err());
        }
    }

    #[test]
    fn a_shard_file_without_its_question_is_refused() {
        let e = join(&[("f".into(), SHARD.into())]).err().expect("refused");
        assert!(e.to_string().contains("not a plan shard file"), "{e}");
    }
}
