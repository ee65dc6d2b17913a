//! fio's `random_distribution=zoned:A/R:A/R:...`: the job's region cut, from
//! its start, into zones of R per cent of it, each taking A per cent of the
//! random accesses, spread evenly inside it (fio's `zoned`, lib/zipf.c's
//! neighbour `__get_next_rand_offset_zoned`: no hashing, so a zone is a
//! contiguous range of the file, the hot data where the spec puts it), and
//! `zoned_abs:A/SIZE:...`, the same with each zone's size in bytes (fio's
//! `__get_next_rand_offset_zoned_abs`: zone ends in blocks of the
//! direction's grain, the rest of the region past the last zone untouched).

use crate::units::{format_size, parse_size};
use serde::Serialize;

/// Most zones a spec may give: a hot/warm/cold description needs a few;
/// the bound keeps the distribution a fixed-size value.
pub const MAX_ZONES: usize = 16;

/// A zoned access distribution: per zone, its share of the accesses, in
/// whole per cent as fio takes them, and its share of the region (whole
/// per cent) or, `absolute`, its size in bytes, in region order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Zones {
    n: u8,
    access: [u8; MAX_ZONES],
    span: [u64; MAX_ZONES],
    absolute: bool,
}

impl Zones {
    /// Parse the part after `zoned:` (`60/10:30/20:10/70`); the message
    /// says what is wrong.
    pub fn parse(spec: &str) -> Result<Zones, String> {
        Zones::parse_as(spec, false)
    }

    /// Parse the part after `zoned_abs:` (`60/20g:30/100g:10/500g`): sizes
    /// in bytes, whose sum must fit the job's region (checked with the
    /// regions, [`Zones::bytes`]).
    pub fn parse_abs(spec: &str) -> Result<Zones, String> {
        Zones::parse_as(spec, true)
    }

    fn parse_as(spec: &str, absolute: bool) -> Result<Zones, String> {
        let mut z = Zones {
            n: 0,
            access: [0; MAX_ZONES],
            span: [0; MAX_ZONES],
            absolute,
        };
        if spec.contains(',') {
            return Err(
                "one set of zones for every direction (zones per direction are not supported)"
                    .to_string(),
            );
        }
        // fio's `split_parse_ddir`: a relative zone's size missing (no `/`,
        // nothing after it, or 0) is a share of the rest.
        let mut missing = [false; MAX_ZONES];
        for part in spec.split(':') {
            let (a, r) = match part.split_once('/') {
                Some((a, r)) => (a, Some(r)),
                None if !absolute => (part, None),
                None => return Err(format!("zone '{part}': expected ACCESS%/SIZE")),
            };
            let pct = |s: &str| match s.parse::<u8>() {
                Ok(x) if x <= 100 => Ok(x),
                _ => Err(format!(
                    "zone '{part}': '{s}' is not a whole percentage from 0 to 100"
                )),
            };
            let a = pct(a)?;
            let r = match r {
                Some(r) if absolute => parse_size(r)
                    .ok()
                    .filter(|&b| b <= MAX_ZONE_BYTES)
                    .ok_or_else(|| {
                        format!("zone '{part}': '{r}' is not a size in bytes (e.g. 20g)")
                    })?,
                Some(r) if !r.is_empty() => u64::from(pct(r)?),
                _ => 0,
            };
            let i = z.n as usize;
            if i == MAX_ZONES {
                return Err(format!("at most {MAX_ZONES} zones"));
            }
            missing[i] = !absolute && r == 0;
            z.access[i] = a;
            z.span[i] = r;
            z.n += 1;
        }
        let total: u64 = z.access.iter().map(|&x| u64::from(x)).sum();
        if total != 100 {
            return Err(format!("the zones' accesses add up to {total} %, not 100"));
        }
        if !absolute {
            z.share_the_rest(&missing)?;
        }
        for i in 0..z.n as usize {
            if z.access[i] > 0 && z.span[i] == 0 {
                return Err(format!(
                    "zone {}: {} % of the accesses to an empty range",
                    i + 1,
                    z.access[i]
                ));
            }
        }
        Ok(z)
    }

    /// Give the zones whose size was left out (`missing`) equal whole
    /// shares of what the others leave of 100 %, as fio's
    /// `zone_split_ddir` does (rounding down). The given sizes may add up
    /// to less than 100 with none left out: the rest of the region is then
    /// not accessed, as in fio.
    fn share_the_rest(&mut self, missing: &[bool; MAX_ZONES]) -> Result<(), String> {
        let given: u64 = self.span.iter().sum();
        if given > 100 {
            return Err(format!(
                "the zones' ranges add up to {given} %, more than 100"
            ));
        }
        let n = missing.iter().filter(|&&m| m).count() as u64;
        // fio counts a lone zone's missing size as 100 % given, which
        // leaves it none (an empty range, refused below).
        if n > 0 && self.n > 1 {
            for (span, _) in self.span.iter_mut().zip(missing).filter(|(_, &m)| m) {
                *span = (100 - given) / n;
            }
        }
        Ok(())
    }

    /// The bytes the zones cover, when their sizes are absolute.
    pub fn bytes(&self) -> Option<u64> {
        self.absolute.then(|| self.span.iter().sum())
    }

    /// fio's name of the distribution, `zoned` or `zoned_abs`.
    pub fn kind(&self) -> &'static str {
        if self.absolute {
            "zoned_abs"
        } else {
            "zoned"
        }
    }

    /// The spec as fio writes it (`60/10:30/20:10/70`, `60/20g:40/1t`).
    pub fn word(&self) -> String {
        (0..self.n as usize)
            .map(|i| match self.absolute {
                false => format!("{}/{}", self.access[i], self.span[i]),
                true => format!("{}/{}", self.access[i], format_size(self.span[i])),
            })
            .collect::<Vec<_>>()
            .join(":")
    }

    /// The block of `0..nblocks` (blocks of `grain` bytes) that a draw
    /// falls on: `u_zone` and `u_block` are uniform in `[0, 1)`, the first
    /// choosing the zone by its share of the accesses, the second the
    /// block inside it.
    pub fn pick(&self, nblocks: u64, grain: u64, u_zone: f64, u_block: f64) -> u64 {
        debug_assert!(nblocks > 0 && grain > 0);
        let n = self.n as usize;
        let target = u_zone * 100.0;
        let mut acc = 0.0;
        let mut zone = n - 1;
        for i in 0..n {
            acc += f64::from(self.access[i]);
            if target < acc && self.access[i] > 0 {
                zone = i;
                break;
            }
        }
        let (first, end) = if self.absolute {
            // fio: the zone's first and end blocks, its byte bounds over
            // the grain.
            let start: u64 = self.span[..zone].iter().sum();
            (start / grain, (start + self.span[zone]) / grain)
        } else {
            // fio: the zone starts where the ones before it end.
            let start = self.span[..zone].iter().sum::<u64>() as f64;
            let at = |pct: f64| ((pct / 100.0) * nblocks as f64) as u64;
            (at(start), at(start + self.span[zone] as f64))
        };
        let first = first.min(nblocks - 1);
        let width = end.min(nblocks).saturating_sub(first).max(1);
        (first + (u_block * width as f64) as u64).min(nblocks - 1)
    }
}

/// The largest zone of `zoned_abs`: 2^56 bytes, past any volume (the sum
/// is then checked against the job's region).
const MAX_ZONE_BYTES: u64 = 1 << 56;

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn specs_parse_echo_and_are_checked() {
        let z = Zones::parse("60/10:30/20:10/70").unwrap();
        assert_eq!(z.word(), "60/10:30/20:10/70");
        for (bad, says) in [
            ("60/10:30/20", "accesses add up to 90"),
            ("60/10:40/95", "ranges add up to 105 %, more than 100"),
            ("60", "accesses add up to 60"),
            ("50/0:50/100", "empty range"),
            ("50/:50/100", "empty range"),
            ("100", "empty range"),
            ("150/50:-50/50", "not a whole percentage"),
            ("50.5/50:49.5/50", "not a whole percentage"),
        ] {
            let e = Zones::parse(bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
        let many = vec!["5/5"; 20].join(":");
        assert!(Zones::parse(&many).unwrap_err().contains("at most 16"));
    }

    /// fio's `zone_split_ddir`: sizes left out (no `/`, nothing after it,
    /// or 0) share what the given ones leave, rounded down; given sizes
    /// under 100 % leave the rest of the region alone. fio's own
    /// examples/rand-zones.fio ends in `20/`.
    #[test]
    fn sizes_left_out_share_the_rest_as_in_fio() {
        for (spec, word) in [
            ("50/5:30/15:20/", "50/5:30/15:20/80"),
            ("50/5:30:20/0", "50/5:30/47:20/47"),
            ("60/10:40/20", "60/10:40/20"),
        ] {
            assert_eq!(Zones::parse(spec).unwrap().word(), word, "{spec}");
        }
        // 60/10:40/20 leaves blocks 300-999 of 1,000 alone.
        let z = Zones::parse("60/10:40/20").unwrap();
        let mut rng = crate::rng::Rng::new(5);
        let mut hits = [0u32; 2];
        for _ in 0..10_000 {
            let b = z.pick(1000, 1, rng.unit(), rng.unit());
            assert!(b < 300, "{b}");
            hits[usize::from(b >= 100)] += 1;
        }
        assert!((5_700..6_300).contains(&hits[0]), "{hits:?}");
    }

    #[test]
    fn absolute_zones_parse_echo_and_fall_on_their_bytes() {
        let z = Zones::parse_abs("60/20g:30/100g:10/500g").unwrap();
        assert_eq!(
            (z.word(), z.kind()),
            ("60/20g:30/100g:10/500g".to_string(), "zoned_abs")
        );
        assert_eq!(z.bytes(), Some(620 << 30));
        assert_eq!(Zones::parse("60/10:40/90").unwrap().bytes(), None);
        for (bad, says) in [
            ("60/20g:30/1g", "accesses add up to 90"),
            ("60/20x:40/1g", "not a size"),
            ("50/0:50/1g", "empty range"),
        ] {
            let e = Zones::parse_abs(bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
        // 4 KiB blocks: all accesses to bytes 1-3 MiB of a 1 GiB region,
        // none past the zones' end.
        let z = Zones::parse_abs("0/1m:100/2m").unwrap();
        let mut rng = crate::rng::Rng::new(3);
        for _ in 0..10_000 {
            let b = z.pick(1 << 18, 4096, rng.unit(), rng.unit());
            assert!((256..768).contains(&b), "{b}");
        }
    }

    #[test]
    fn each_zone_takes_its_share_of_the_draws_in_its_range() {
        // 60 % of the accesses to the first 10 % of 1,000 blocks, 30 % to
        // the next 20 %, 10 % to the last 70 %.
        let z = Zones::parse("60/10:30/20:10/70").unwrap();
        let mut rng = crate::rng::Rng::new(7);
        let mut hits = [0u32; 3];
        for _ in 0..100_000 {
            let b = z.pick(1000, 1, rng.unit(), rng.unit());
            hits[match b {
                0..=99 => 0,
                100..=299 => 1,
                _ => 2,
            }] += 1;
        }
        for (got, want) in hits.iter().zip([60_000.0, 30_000.0, 10_000.0]) {
            assert!((*got as f64 / want - 1.0).abs() < 0.03, "{hits:?}");
        }
    }

    proptest! {
        #[test]
        fn draws_stay_in_the_region(
            a in 0u32..=100, r in 1u32..=99,
            nblocks in 1u64..1_000_000, u in 0.0f64..1.0, v in 0.0f64..1.0,
        ) {
            let spec = format!("{a}/{r}:{}/{}", 100 - a, 100 - r);
            let z = Zones::parse(&spec).unwrap();
            prop_assert!(z.pick(nblocks, 4096, u, v) < nblocks);
        }
    }
}
