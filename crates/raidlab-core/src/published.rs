//! Published measurements: the CSV of SPEC §5, one number a row.
//!
//! `id,source,ref,topology,workload,metric,value,note`; fields may be quoted
//! with `"` (doubled inside), as topologies contain commas.

use crate::error::{Error, Result};

/// The columns, in order.
pub const HEADER: [&str; 8] = [
    "id", "source", "ref", "topology", "workload", "metric", "value", "note",
];

/// Metrics a row may name.
pub const METRICS: [&str; 4] = ["iops", "mbps", "lat_avg_ms", "lat_max_ms"];

/// One published number.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// Unique id.
    pub id: String,
    /// Document (`petrov2010`, ...).
    pub source: String,
    /// Table or figure in the document.
    pub reference: String,
    /// Topology expression.
    pub topology: String,
    /// Workload (`k=v ...`).
    pub workload: String,
    /// Metric name.
    pub metric: String,
    /// Published value.
    pub value: f64,
    /// Free-text note.
    pub note: String,
    /// 1-based line in the file.
    pub line: usize,
}

/// The fields of one CSV record (RFC 4180 quoting; `lno` names the line in
/// errors).
pub fn split_record(line: &str, lno: usize) -> Result<Vec<String>> {
    let mut fields = Vec::new();
    let mut cur = String::new();
    let mut chars = line.chars().peekable();
    let mut quoted = false;
    let mut at_start = true;
    while let Some(c) = chars.next() {
        if quoted {
            if c == '"' {
                if chars.peek() == Some(&'"') {
                    cur.push('"');
                    chars.next();
                } else {
                    quoted = false;
                }
            } else {
                cur.push(c);
            }
        } else if c == '"' && at_start {
            quoted = true;
            at_start = false;
        } else if c == ',' {
            fields.push(std::mem::take(&mut cur));
            at_start = true;
        } else {
            cur.push(c);
            at_start = false;
        }
    }
    if quoted {
        return Err(Error::Csv(format!("line {lno}: unterminated quoted field")));
    }
    fields.push(cur);
    Ok(fields)
}

/// One CSV field, quoted when it holds a comma, a quote or a line break.
pub fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// Parse a whole CSV document (header required).
pub fn parse_csv(text: &str) -> Result<Vec<Row>> {
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty());
    let Some((_, header)) = lines.next() else {
        return Err(Error::Csv(
            "empty file (expected a header: id,source,ref,topology,workload,metric,value,note)"
                .into(),
        ));
    };
    let h = split_record(header.trim_start_matches('\u{feff}'), 1)?;
    if h.iter().map(|s| s.trim()).collect::<Vec<_>>() != HEADER {
        return Err(Error::Csv(format!(
            "line 1: header must be {}",
            HEADER.join(",")
        )));
    }
    let mut rows = Vec::new();
    let mut ids = std::collections::HashSet::new();
    for (i, line) in lines {
        let lno = i + 1;
        let f = split_record(line, lno)?;
        if f.len() != HEADER.len() {
            return Err(Error::Csv(format!(
                "line {lno}: {} fields, expected {}",
                f.len(),
                HEADER.len()
            )));
        }
        let metric = f[5].trim().to_string();
        if !METRICS.contains(&metric.as_str()) {
            return Err(Error::Csv(format!(
                "line {lno}: metric '{metric}' is not one of {}",
                METRICS.join(", ")
            )));
        }
        let value: f64 = f[6]
            .trim()
            .parse()
            .ok()
            .filter(|v: &f64| v.is_finite() && *v > 0.0)
            .ok_or_else(|| {
                Error::Csv(format!(
                    "line {lno}: value '{}' is not a positive number",
                    f[6].trim()
                ))
            })?;
        let id = f[0].trim().to_string();
        if id.is_empty() || !ids.insert(id.clone()) {
            return Err(Error::Csv(format!(
                "line {lno}: id '{id}' is empty or repeated"
            )));
        }
        rows.push(Row {
            id,
            source: f[1].trim().into(),
            reference: f[2].trim().into(),
            topology: f[3].trim().into(),
            workload: f[4].trim().into(),
            metric,
            value,
            note: f[7].trim().into(),
            line: lno,
        });
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_quotes_and_rejects_bad_rows() {
        let t = "id,source,ref,topology,workload,metric,value,note\na,s,T1,\"raid0(x25e,x25e)\",rw=read bs=4k,iops,100,\"say \"\"hi\"\"\"\n";
        let r = parse_csv(t).unwrap();
        assert_eq!(r[0].topology, "raid0(x25e,x25e)");
        assert_eq!(r[0].note, "say \"hi\"");
        assert_eq!(r[0].line, 2);
        for bad in [
            "",
            "x,y\n",
            "id,source,ref,topology,workload,metric,value,note\na,s,T,x25e,rw=read,speed,1,\n",
            "id,source,ref,topology,workload,metric,value,note\na,s,T,x25e,rw=read,iops,-1,\n",
            "id,source,ref,topology,workload,metric,value,note\na,s,T,x25e,rw=read,iops,1\n",
            "id,source,ref,topology,workload,metric,value,note\na,s,T,\"x25e,rw=read,iops,1,\n",
            "id,source,ref,topology,workload,metric,value,note\na,s,T,x25e,rw=read,iops,1,\na,s,T,x25e,rw=read,iops,1,\n",
        ] {
            assert!(parse_csv(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_projects_calibration_file_parses() {
        let text = include_str!("../../../data/published/calibration.csv");
        let rows = parse_csv(text).unwrap();
        assert!(rows.len() > 250);
    }
}
