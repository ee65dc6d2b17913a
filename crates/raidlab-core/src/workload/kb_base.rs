//! fio's `kb_base` and how a job file's sizes read under it (parse.c
//! `__get_mult_bytes`): a size's unit `k`, `m`, `g`, `t`, `p` (or `kb`,
//! `mb`, ...) counts in powers of `kb_base`, and an IEC unit (`kib`, `mib`,
//! ...) in powers of the other base. With fio's default, 1024, `4k` is
//! 4,096 bytes and `4KiB` is 4,000 ("compatibility mode": old scripts'
//! power-of-2 values keep their SI prefixes); with `kb_base=1000` the units
//! mean what they say. A job file's sizes are turned into bytes this way
//! before the workload reads them, so they are what fio's would be.

/// The job-file keys whose values hold sizes (after fio's long names are
/// resolved): a number with a unit anywhere in such a value is a size.
pub(crate) const SIZE_KEYS: &[&str] = &[
    "bs",
    "bsrange",
    "bssplit",
    "size",
    "filesize",
    "offset",
    "offset_increment",
    "offset_align",
    "io_size",
    "zonesize",
    "zonerange",
    "zoneskip",
    "zonecapacity",
    "blockalign",
    "ba",
    "rate",
    "random_distribution",
    "rw",
];

/// fio's two `kb_base` values.
pub(crate) fn parse_kb_base(v: &str) -> Option<u64> {
    match v {
        "1000" => Some(1000),
        "1024" => Some(1024),
        _ => None,
    }
}

/// `value` with every whole number followed by a size unit written out in
/// bytes as fio reads it under `kb_base`, and whether an IEC unit was read
/// in powers of ten (fio's default turning `4KiB` into 4,000). A number
/// with a decimal point is left as raidlab reads it (fio would take its
/// integer part with no unit at all: `1.5k` is 1 byte to it).
pub(crate) fn in_bytes(value: &str, kb_base: u64) -> (String, bool) {
    let b = value.as_bytes();
    let (mut out, mut quirk, mut i) = (String::with_capacity(value.len()), false, 0);
    while i < b.len() {
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        let after_dot = start > 0 && b[start - 1] == b'.';
        let digits = &value[start..i];
        let unit_end = (i..b.len())
            .find(|&j| !b[j].is_ascii_alphabetic())
            .unwrap_or(b.len());
        let unit = value[i..unit_end].to_ascii_lowercase();
        let followed_by_dot = b.get(i) == Some(&b'.');
        match (
            digits.is_empty() || after_dot || followed_by_dot,
            unit_power(&unit),
        ) {
            (false, Some((pow, iec))) => {
                let base = match (iec, kb_base) {
                    (true, 1024) => 1000,
                    (true, _) => 1024,
                    (false, k) => k,
                };
                quirk |= iec && kb_base == 1024;
                match digits
                    .parse::<u64>()
                    .ok()
                    .and_then(|n| n.checked_mul(base.checked_pow(pow)?))
                {
                    Some(bytes) => out += &bytes.to_string(),
                    // Too large: left as written, for the key to refuse.
                    None => out += &value[start..unit_end],
                }
                i = unit_end;
            }
            _ if digits.is_empty() => {
                let c = value[i..].chars().next().expect("a character");
                out.push(c);
                i += c.len_utf8();
            }
            _ => out += digits,
        }
    }
    (out, quirk)
}

/// Write a job file's size values (`pairs`, the keys in [`SIZE_KEYS`]) out
/// in bytes as fio reads them under `kb_base`; the note to give when an IEC
/// size was read in powers of ten.
pub(crate) fn read_sizes(pairs: &mut [(String, String)], kb_base: u64) -> Option<String> {
    let mut iec = Vec::new();
    for (k, v) in pairs
        .iter_mut()
        .filter(|(k, _)| SIZE_KEYS.contains(&k.as_str()))
    {
        let (bytes, quirk) = in_bytes(v, kb_base);
        if quirk {
            iec.push(format!("{k}={v} is {k}={bytes}"));
        }
        *v = bytes;
    }
    (!iec.is_empty()).then(|| {
        format!(
            "fio reads KiB, MiB, ... as powers of 10 under kb_base=1024, its default, and so does raidlab reading a job file: {} (write 4k, or set kb_base=1000, for 4,096 bytes)",
            iec.join(", ")
        )
    })
}

/// The power a size unit raises its base to, and whether it is an IEC
/// unit; `None` for anything else (fio: `__get_mult_bytes`).
fn unit_power(unit: &str) -> Option<(u32, bool)> {
    let pow = match unit.chars().next()? {
        'k' => 1,
        'm' => 2,
        'g' => 3,
        't' => 4,
        'p' => 5,
        _ => return None,
    };
    match &unit[1..] {
        "" | "b" | "i" => Some((pow, false)),
        "ib" => Some((pow, true)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_fio_reads_them() {
        // fio 3.33, default kb_base: 4k and 4K 4096, 4KiB and 4kib 4000,
        // 1MiB 1000000, 2KB 2048, 4Ki 4096; with kb_base=1000, 4k is 4000
        // and 4KiB 4096.
        for (v, want, quirk) in [
            ("4k", "4096", false),
            ("4K", "4096", false),
            ("4KiB", "4000", true),
            ("4kib", "4000", true),
            ("1MiB", "1000000", true),
            ("2KB", "2048", false),
            ("4Ki", "4096", false),
            ("4k/50:64k/50", "4096/50:65536/50", false),
            (
                "zoned_abs:60/20g:40/1t",
                "zoned_abs:60/21474836480:40/1099511627776",
                false,
            ),
            ("write:-8k", "write:-8192", false),
            ("randread:8", "randread:8", false),
            ("25%", "25%", false),
            ("1.5k", "1.5k", false),
            ("4k,64k", "4096,65536", false),
            ("99999999999p", "99999999999p", false),
        ] {
            assert_eq!(in_bytes(v, 1024), (want.to_string(), quirk), "{v}");
        }
        assert_eq!(in_bytes("4k", 1000).0, "4000");
        assert_eq!(in_bytes("4KiB", 1000), ("4096".to_string(), false));
        assert_eq!(parse_kb_base("1000"), Some(1000));
        assert_eq!(parse_kb_base("512"), None);
    }
}
