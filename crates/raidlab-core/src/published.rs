//! Published measurements: the CSV of docs/results.md, one number a row.
//!
//! `id,source,ref,topology,workload,metric,value,note`; fields may be quoted
//! with `"` (doubled inside), as topologies contain commas.

use crate::error::{Error, Result};

/// The columns, in order.
pub const HEADER: [&str; 8] = [
    "id", "source", "ref", "topology", "workload", "metric", "value", "note",
];

/// Metrics a row may name: a summary's, over all I/Os or, with `read_` or
/// `write_` before it, over one direction (fio's per-direction figures).
pub const METRICS: [&str; 7] = [
    "iops",
    "mbps",
    "lat_avg_ms",
    "lat_max_ms",
    "lat_p50_ms",
    "lat_p99_ms",
    "lat_p999_ms",
];

/// The drives' write amplification (NAND writes over host writes, the mean
/// over the SSDs the run wrote to): a metric of a run rather than of its
/// I/Os, so it takes no `read_` or `write_`.
pub const WAF: &str = "waf";

/// Whether `name` is a metric a row may name ([`METRICS`], alone or after
/// `read_` or `write_`, or [`WAF`]).
pub fn is_metric(name: &str) -> bool {
    if name == WAF {
        return true;
    }
    let base = name
        .strip_prefix("read_")
        .or_else(|| name.strip_prefix("write_"))
        .unwrap_or(name);
    METRICS.contains(&base)
}

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
/// header (empty or blank). The `csv` crate reads it (RFC 4180 quoting,
/// quoted fields over several lines); a byte-order mark and blank lines
/// are dropped; each record keeps the text it was written as.
pub fn records(text: &str) -> Result<Option<Records<'_>>> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(text.as_bytes());
    // (line, first byte, fields) of every record that is not blank.
    let mut found = Vec::new();
    // Lines counted up to a byte, carried from record to record so that
    // numbering the lines stays linear in the text.
    let (mut counted_to, mut lines_before) = (0, 0);
    for r in reader.records() {
        let r = r.map_err(|e| Error::Csv(e.to_string()))?;
        if r.len() == 1 && r[0].trim().is_empty() {
            continue;
        }
        let pos = r.position().expect("records read from text have positions");
        // The position may lie before blank lines the reader skipped: the
        // record starts at the first line after them that holds text.
        let mut start = pos.byte() as usize;
        while let Some(n) = text[start..].find('\n') {
            if !text[start..start + n].trim().is_empty() {
                break;
            }
            start += n + 1;
        }
        lines_before += text[counted_to..start].matches('\n').count();
        counted_to = start;
        let line = lines_before + 1;
        let fields: Vec<String> = r.iter().map(String::from).collect();
        found.push((line, start, fields));
    }
    let ends: Vec<usize> = found
        .iter()
        .skip(1)
        .map(|f| f.1)
        .chain([text.len()])
        .collect();
    let mut all = found
        .into_iter()
        .zip(ends)
        .map(|((line, start, fields), end)| Record {
            line,
            text: written(&text[start..end]),
            fields,
        });
    let Some(head) = all.next() else {
        return Ok(None);
    };
    let rows: Vec<Record<'_>> = all.collect();
    if let Some(r) = rows.iter().find(|r| r.fields.len() != head.fields.len()) {
        return Err(Error::Csv(format!(
            "line {}: {} fields, expected {} as in the header",
            r.line,
            r.fields.len(),
            head.fields.len()
        )));
    }
    Ok(Some(Records {
        header_text: head.text,
        header: head.fields,
        rows,
    }))
}

/// A record's text as written: without its line break and the blank lines
/// after it.
fn written(raw: &str) -> &str {
    let mut t = raw.trim_end_matches(['\r', '\n']);
    while let Some(i) = t.rfind('\n') {
        if !t[i + 1..].trim().is_empty() {
            break;
        }
        t = t[..i].trim_end_matches('\r');
    }
    t
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
        if !is_metric(&metric) {
            return Err(Error::Csv(format!(
                "line {lno}: metric '{metric}' is not one of {} (or one of them after read_ or write_), or {WAF}",
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
    fn byte_order_marks_blank_lines_and_fields_over_lines_are_read() {
        let t = "\u{feff}id,source,ref,topology,workload,metric,value,note\r\n\r\na,s,T1,x25e,rw=read,iops,100,\"two\nlines\"\r\n\n  \nb,s,T1,x25e,rw=read,iops,5,\n";
        let r = parse_csv(t).unwrap();
        assert_eq!(r.len(), 2);
        assert_eq!(r[0].note, "two\nlines");
        assert_eq!((r[0].line, r[1].line), (3, 7), "lines as in the file");
        let doc = records(t).unwrap().unwrap();
        assert_eq!(
            doc.header_text,
            "id,source,ref,topology,workload,metric,value,note"
        );
        assert_eq!(
            doc.rows[0].text,
            "a,s,T1,x25e,rw=read,iops,100,\"two\nlines\""
        );
        assert_eq!(doc.rows[1].text, "b,s,T1,x25e,rw=read,iops,5,");
    }

    #[test]
    fn waf_is_a_metric_of_the_run_not_of_a_direction() {
        assert!(is_metric("waf") && is_metric("read_iops") && is_metric("lat_p999_ms"));
        assert!(!is_metric("read_waf") && !is_metric("write_waf") && !is_metric("wa"));
    }

    #[test]
    fn the_projects_calibration_file_parses() {
        let text = include_str!("../../../data/published/calibration.csv");
        let rows = parse_csv(text).unwrap();
        assert!(rows.len() > 250);
    }
}
