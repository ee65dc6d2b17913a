//! fio's reserved keywords (`$ncpus`, `$mb_memory`, `$pagesize`) and its
//! arithmetic in option values, as fio expands them before it reads a job
//! file's options (options.c `fio_keyword_replace` and `bc_calc`; parse.c
//! and exp/ for values in parentheses).

use crate::error::Result;

/// The values fio's reserved keywords take on the machine a job file runs
/// on: the host `raidlab sim` simulates, or the one `raidlab run` runs on.
/// A keyword without a value there is refused with `whose` in the line.
#[derive(Debug, Clone, Default)]
pub struct Keywords {
    /// `$ncpus`: the CPUs online.
    pub ncpus: Option<u64>,
    /// `$mb_memory`: megabytes (MiB) of memory.
    pub mb_memory: Option<u64>,
    /// `$pagesize`: the page size, bytes.
    pub pagesize: Option<u64>,
    /// Which machine the values describe, in messages (`the simulated
    /// host`).
    pub whose: String,
}

impl Keywords {
    /// Each keyword's name and value, in fio's order of replacement.
    fn table(&self) -> [(&'static str, Option<u64>); 3] {
        [
            ("$pagesize", self.pagesize),
            ("$mb_memory", self.mb_memory),
            ("$ncpus", self.ncpus),
        ]
    }
}

/// fio's time options, whose values in parentheses are microseconds
/// (HOWTO, "Job file parameters": "For time values in expressions, units
/// are microseconds by default").
const TIME_KEYS: &[&str] = &[
    "runtime",
    "ramp_time",
    "startdelay",
    "thinktime",
    "thinktime_spin",
    "thinktime_iotime",
];

/// Options whose values are text, never computed (a `description` may be
/// in parentheses).
const TEXT_KEYS: &[&str] = &["name", "description", "filename", "directory"];

/// Deepest nesting of parentheses an expression may have (a bound on the
/// evaluator's recursion; fio's own expressions are a level or two).
const MAX_DEPTH: usize = 32;

/// Expand every option line of a job file's `text` as fio does: each
/// reserved keyword replaced by its value in `k`, and a value that then
/// holds `+ - * /` computed in integers (fio hands it to `bc`, whose
/// division truncates); a value in parentheses, `bs=(4*1024)`, computed
/// as fio's expression parser does (`+ - * / % ^`), in microseconds for
/// time options. Comments are dropped; line numbers are kept. A keyword
/// without a value, or an expression that does not compute, is an error
/// naming its line.
pub fn expand_keywords(text: &str, k: &Keywords) -> Result<String> {
    let mut out = String::with_capacity(text.len());
    for (i, raw) in text.split_inclusive('\n').enumerate() {
        let line = raw.split([';', '#']).next().unwrap_or_default();
        let expanded = expand_line(line.trim(), k)
            .map_err(|msg| crate::error::Error::JobLine { line: i + 1, msg })?;
        match expanded {
            Some(l) => out += &l,
            None => out += line.trim_end_matches(['\r', '\n']),
        }
        if raw.ends_with('\n') {
            out.push('\n');
        }
    }
    Ok(out)
}

/// One option line expanded, or `None` when it has nothing to expand.
fn expand_line(line: &str, k: &Keywords) -> std::result::Result<Option<String>, String> {
    let Some((key, value)) = line.split_once('=') else {
        return Ok(None);
    };
    let (key, value) = (key.trim(), value.trim());
    let mut v = value.to_string();
    let mut replaced = false;
    for (word, val) in k.table() {
        if !v.contains(word) {
            continue;
        }
        let Some(val) = val else {
            return Err(format!("{word} has no value for {}", k.whose));
        };
        v = v.replace(word, &val.to_string());
        replaced = true;
    }
    let math = |c: char| matches!(c, '+' | '-' | '*' | '/');
    if replaced && v.contains(math) {
        let n = evaluate(&v, true).map_err(|m| format!("{key}={value}: {m}"))?;
        return Ok(Some(format!("{key}={}", n as i64)));
    }
    if v.starts_with('(') && v.ends_with(')') && !TEXT_KEYS.contains(&key) {
        let n = evaluate(&v, false).map_err(|m| format!("{key}={value}: {m}"))?;
        if n < 0.0 {
            return Err(format!("{key}={value}: computes to {n}, below 0"));
        }
        let unit = if TIME_KEYS.contains(&key) { "us" } else { "" };
        return Ok(Some(format!("{key}={}{unit}", n.trunc() as u64)));
    }
    Ok(replaced.then(|| format!("{key}={v}")))
}

/// The value of arithmetic expression `s`: numbers, `+ - * / % ^`,
/// parentheses and unary minus, by the usual precedence; in `integer`
/// mode each division truncates, as `bc` computes by default.
fn evaluate(s: &str, integer: bool) -> std::result::Result<f64, String> {
    let tokens: Vec<char> = s.chars().filter(|c| !c.is_whitespace()).collect();
    let mut p = Parser {
        t: &tokens,
        at: 0,
        integer,
    };
    let v = p.sum(0)?;
    if p.at != tokens.len() {
        return Err(format!(
            "not arithmetic at '{}'",
            tokens[p.at..].iter().collect::<String>()
        ));
    }
    if !v.is_finite() || v.abs() > 9e18 {
        return Err("the result is out of range".into());
    }
    Ok(v)
}

/// A recursive-descent reader of an expression's characters.
struct Parser<'a> {
    t: &'a [char],
    at: usize,
    integer: bool,
}

impl Parser<'_> {
    fn peek(&self) -> Option<char> {
        self.t.get(self.at).copied()
    }

    /// `term (('+' | '-') term)*`.
    fn sum(&mut self, depth: usize) -> std::result::Result<f64, String> {
        let mut v = self.product(depth)?;
        while let Some(op @ ('+' | '-')) = self.peek() {
            self.at += 1;
            let r = self.product(depth)?;
            v = if op == '+' { v + r } else { v - r };
        }
        Ok(v)
    }

    /// `power (('*' | '/' | '%') power)*`.
    fn product(&mut self, depth: usize) -> std::result::Result<f64, String> {
        let mut v = self.power(depth)?;
        while let Some(op @ ('*' | '/' | '%')) = self.peek() {
            self.at += 1;
            let r = self.power(depth)?;
            if op != '*' && r == 0.0 {
                return Err("division by zero".into());
            }
            v = match op {
                '*' => v * r,
                '/' if self.integer => (v / r).trunc(),
                '/' => v / r,
                _ => v % r,
            };
        }
        Ok(v)
    }

    /// `unary ('^' power)?`, right-associative.
    fn power(&mut self, depth: usize) -> std::result::Result<f64, String> {
        let base = self.unary(depth)?;
        if self.peek() == Some('^') {
            self.at += 1;
            let e = self.power(depth)?;
            return Ok(base.powf(e));
        }
        Ok(base)
    }

    /// `'-' unary | '(' sum ')' | number`.
    fn unary(&mut self, depth: usize) -> std::result::Result<f64, String> {
        match self.peek() {
            Some('-') => {
                self.at += 1;
                Ok(-self.unary(depth)?)
            }
            Some('(') => {
                if depth >= MAX_DEPTH {
                    return Err(format!("parentheses nested deeper than {MAX_DEPTH}"));
                }
                self.at += 1;
                let v = self.sum(depth + 1)?;
                if self.peek() != Some(')') {
                    return Err("a '(' is not closed".into());
                }
                self.at += 1;
                Ok(v)
            }
            _ => self.number(),
        }
    }

    fn number(&mut self) -> std::result::Result<f64, String> {
        let start = self.at;
        while self.peek().is_some_and(|c| c.is_ascii_digit() || c == '.') {
            self.at += 1;
        }
        let s: String = self.t[start..self.at].iter().collect();
        s.parse::<f64>().map_err(|_| match self.peek() {
            Some(c) => format!("not arithmetic at '{c}'"),
            None => "an operator lacks its number".into(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host() -> Keywords {
        Keywords {
            ncpus: Some(8),
            mb_memory: Some(16384),
            pagesize: Some(4096),
            whose: "this machine".into(),
        }
    }

    /// fio's own uses: its HOWTO's `size=8*$mb_memory`, examples/
    /// page_fault.fio's `size=5*1024*1024*$mb_memory/8` (comment kept
    /// out), a bare keyword, and values in parentheses.
    #[test]
    fn keywords_and_arithmetic_expand_as_fio_does() {
        let text = "[global]\nsize=8*$mb_memory\n[a]\nsize=5*1024*1024*$mb_memory/8 # 5/8 of the memory\nnumjobs=$ncpus\nbs=$pagesize\n[b]\nbs=(4*1024)\nruntime=(2*1000000)\nrate_iops=(7/2)\nrw=randread\n";
        let out = expand_keywords(text, &host()).unwrap();
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), text.lines().count(), "line numbers kept");
        assert_eq!(lines[1], "size=131072");
        assert_eq!(lines[3], "size=10737418240");
        assert_eq!(lines[4], "numjobs=8");
        assert_eq!(lines[5], "bs=4096");
        assert_eq!(lines[7], "bs=4096");
        assert_eq!(lines[8], "runtime=2000000us");
        assert_eq!(lines[9], "rate_iops=3");
        assert_eq!(lines[10], "rw=randread");
        // bc's integer division: 7*$ncpus/3 is 18, not 18.67.
        let out = expand_keywords("x=7*$ncpus/3\n", &host()).unwrap();
        assert_eq!(out, "x=18\n");
        // Text stays text.
        let out = expand_keywords("description=(a test)\n", &host()).unwrap();
        assert_eq!(out, "description=(a test)\n");
    }

    #[test]
    fn keywords_without_a_value_and_bad_arithmetic_are_refused() {
        let k = Keywords {
            mb_memory: None,
            whose: "the simulated host".into(),
            ..host()
        };
        let e = expand_keywords("[a]\nsize=2*$mb_memory\n", &k)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("line 2") && e.contains("$mb_memory has no value for the simulated host"),
            "{e}"
        );
        for bad in ["bs=(4*)", "bs=(1/0)", "bs=((1)", "bs=(1-5)", "bs=(2^9999)"] {
            let e = expand_keywords(bad, &host()).unwrap_err().to_string();
            assert!(e.contains("line 1: bs="), "{bad}: {e}");
        }
        let deep = format!("bs={}1{}", "(".repeat(100), ")".repeat(100));
        assert!(expand_keywords(&deep, &host()).is_err());
    }
}
