//! Sizes, percentages and times as users write them.
//!
//! Sizes follow fio: `k`, `m`, `g`, `t` are powers of 1024 (`4k` = 4096), an
//! optional trailing `b`/`ib` is accepted. Simulated time is kept in
//! nanoseconds ([`Ns`]).

/// Simulated time in nanoseconds.
pub type Ns = u64;

/// Nanoseconds per microsecond.
pub const US: Ns = 1_000;
/// Nanoseconds per millisecond.
pub const MS: Ns = 1_000_000;
/// Nanoseconds per second.
pub const SEC: Ns = 1_000_000_000;

/// Why a size, percentage or duration was refused; the text it was given
/// is kept for the message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnitError {
    /// Not a size at all.
    #[error("'{0}' is not a size (examples: 512, 4k, 1m, 4g)")]
    NotSize(String),
    /// A size beyond 2^60 bytes.
    #[error("size '{0}' is out of range")]
    SizeRange(String),
    /// Not a percentage.
    #[error("'{0}' is not a percentage (example: 20%)")]
    NotPercent(String),
    /// A percentage outside [0, 100).
    #[error("percentage '{0}' must be from 0 % to below 100 %")]
    PercentRange(String),
    /// Not a duration.
    #[error("'{0}' is not a duration (examples: 10, 0.5, 500ms)")]
    NotDuration(String),
    /// A negative or too long duration.
    #[error("duration '{0}' is out of range")]
    DurationRange(String),
}

/// Parse a size such as `512`, `4k`, `64K`, `1m`, `4g`, `1.5m` into bytes.
pub fn parse_size(s: &str) -> Result<u64, UnitError> {
    let t = s.trim().to_ascii_lowercase();
    let t = t
        .strip_suffix("ib")
        .or_else(|| t.strip_suffix('b'))
        .unwrap_or(&t);
    let (num, mult) = match t.chars().last() {
        Some('k') => (&t[..t.len() - 1], 1u64 << 10),
        Some('m') => (&t[..t.len() - 1], 1u64 << 20),
        Some('g') => (&t[..t.len() - 1], 1u64 << 30),
        Some('t') => (&t[..t.len() - 1], 1u64 << 40),
        _ => (t, 1u64),
    };
    if num.is_empty() || !num.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return Err(UnitError::NotSize(s.to_string()));
    }
    let v: f64 = num.parse().map_err(|_| UnitError::NotSize(s.to_string()))?;
    let bytes = v * mult as f64;
    if !bytes.is_finite() || bytes < 0.0 || bytes > (1u64 << 60) as f64 {
        return Err(UnitError::SizeRange(s.to_string()));
    }
    Ok(bytes.round() as u64)
}

/// Format bytes the way users write them (`4k`, `64k`, `1m`, `512`).
pub fn format_size(b: u64) -> String {
    for (shift, suf) in [(40, "t"), (30, "g"), (20, "m"), (10, "k")] {
        if b >= (1 << shift) && b.is_multiple_of(1 << shift) {
            return format!("{}{}", b >> shift, suf);
        }
    }
    b.to_string()
}

/// Parse a percentage `20%` (or `20`) into a fraction in `[0, 1)`.
pub fn parse_percent(s: &str) -> Result<f64, UnitError> {
    let t = s.trim().trim_end_matches('%');
    let v: f64 = t
        .parse()
        .map_err(|_| UnitError::NotPercent(s.to_string()))?;
    if !(0.0..100.0).contains(&v) {
        return Err(UnitError::PercentRange(s.to_string()));
    }
    Ok(v / 100.0)
}

/// Parse a duration in seconds (`10`, `0.5`, `10s`, `500ms`, `200us`) into ns.
pub fn parse_duration(s: &str) -> Result<Ns, UnitError> {
    let t = s.trim().to_ascii_lowercase();
    let (num, mult) = if let Some(n) = t.strip_suffix("ms") {
        (n, 1e6)
    } else if let Some(n) = t.strip_suffix("us") {
        (n, 1e3)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1e9)
    } else if let Some(n) = t.strip_suffix('m') {
        (n, 60e9)
    } else {
        (t.as_str(), 1e9)
    };
    let v: f64 = num
        .parse()
        .map_err(|_| UnitError::NotDuration(s.to_string()))?;
    if !v.is_finite() || v < 0.0 || v * mult > 1e18 {
        return Err(UnitError::DurationRange(s.to_string()));
    }
    Ok((v * mult).round() as Ns)
}

/// Format a duration in ns as fio reads a time option: whole seconds
/// bare (`2`), else whole milliseconds or microseconds with their unit
/// (`500ms`, `250us`). fio reads its time options as integers: `0.5`
/// would be 0 to it. A duration with less than a microsecond in it keeps
/// its decimal seconds (raidlab's own grammar reads it exactly).
pub fn format_duration(ns: Ns) -> String {
    const US: Ns = 1_000;
    const MS: Ns = 1_000_000;
    const S: Ns = 1_000_000_000;
    match ns {
        n if n % S == 0 => format!("{}", n / S),
        n if n % MS == 0 => format!("{}ms", n / MS),
        n if n % US == 0 => format!("{}us", n / US),
        n => format!("{}", n as f64 / 1e9),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_format_as_fio_reads_them_and_read_back() {
        for (ns, text) in [
            (2_000_000_000, "2"),
            (500_000_000, "500ms"),
            (1_500_000_000, "1500ms"),
            (250_000, "250us"),
            (0, "0"),
        ] {
            assert_eq!(format_duration(ns), text);
            assert_eq!(parse_duration(text).unwrap(), ns);
        }
        assert_eq!(parse_duration(&format_duration(1_500)).unwrap(), 1_500);
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("512").unwrap(), 512);
        assert_eq!(parse_size("4k").unwrap(), 4096);
        assert_eq!(parse_size("64K").unwrap(), 65536);
        assert_eq!(parse_size("1m").unwrap(), 1 << 20);
        assert_eq!(parse_size("4g").unwrap(), 4 << 30);
        assert_eq!(parse_size("1.5k").unwrap(), 1536);
        assert_eq!(parse_size("4KiB").unwrap(), 4096);
        assert!(parse_size("k").is_err());
        assert!(parse_size("4x").is_err());
        assert!(parse_size("-4k").is_err());
        assert!(parse_size("").is_err());
        assert_eq!(format_size(65536), "64k");
        assert_eq!(format_size(1 << 20), "1m");
        assert_eq!(format_size(1000), "1000");
    }

    #[test]
    fn percents_and_durations() {
        assert!((parse_percent("20%").unwrap() - 0.2).abs() < 1e-12);
        assert!(parse_percent("100%").is_err());
        assert!(parse_percent("x").is_err());
        assert_eq!(parse_duration("10").unwrap(), 10 * SEC);
        assert_eq!(parse_duration("500ms").unwrap(), 500 * MS);
        assert_eq!(parse_duration("2us").unwrap(), 2 * US);
        assert!(parse_duration("abc").is_err());
    }
}
