//! Published measurements: the CSV of docs/results.md, one number a row.
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

/// One record of a CSV document.
#[derive(Debug, Clone, PartialEq)]
pub struct Record<'a> {
    /// 1-based line in the document.
    pub line: usize,
    /// The line as written.
    pub text: &'a str,
    /// Its fields, unquoted.
    pub fields: Vec<String>,
}

/// A CSV document: header, then records with as many fields as the header.
#[derive(Debug, Clone, PartialEq)]
pub struct Records<'a> {
    /// The header line as written (a byte-order mark dropped).
    pub header_text: &'a str,
    /// The header's fields.
    pub header: Vec<String>,
    /// The records, blank lines skipped.
    pub rows: Vec<Record<'a>>,
}

/// Split a CSV document into header and records; `None` when it has no
/// header (empty or blank).
pub fn records(text: &str) -> Result<Option<Records<'_>>> {
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty());
    let Some((h0, head)) = lines.next() else {
        return Ok(None);
    };
    let head = head.trim_start_matches('\u{feff}');
    let header = split_record(head, h0 + 1)?;
    let mut rows = Vec::new();
    for (i, l) in lines {
        let fields = split_record(l, i + 1)?;
        if fields.len() != header.len() {
            return Err(Error::Csv(format!(
                "line {}: {} fields, expected {} as in the header",
                i + 1,
                fields.len(),
                header.len()
            )));
        }
        rows.push(Record {
            line: i + 1,
            text: l,
            fields,
        });
    }
    Ok(Some(Records {
        header_text: head,
        header,
        rows,
    }))
}

/// Parse a whole CSV document (header required).
pub fn parse_csv(text: &str) -> Result<Vec<Row>> {
    let Some(doc) = records(text)? else {
        return Err(Error::Csv(
            "empty file (expected a header: id,source,ref,topology,workload,metric,value,note)"
                .into(),
        ));
    };
    if doc.header.iter().map(|s| s.trim()).collect::<Vec<_>>() != HEADER {
        return Err(Error::Csv(format!(
            "line 1: header must be {}",
            HEADER.join(",")
        )));
    }
    let mut rows = Vec::new();
    let mut ids = std::collections::HashSet::new();
    for rec in doc.rows {
        let (lno, f) = (rec.line, rec.fields);
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
