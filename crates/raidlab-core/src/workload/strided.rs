//! fio's strided zones (`zonemode=strided`, io_u.c
//! `setup_strided_zone_mode`): a job's I/O stays in one zone of
//! `zonerange` bytes until `zonesize` bytes have been issued there, then
//! moves on `zonerange + zoneskip` bytes, wrapping to the region's start
//! past its end. Random offsets are drawn inside the zone (fio's
//! `last_block` takes `zonerange` as the file's size), sequential ones go
//! on from the last and return to the zone's start at its end, and the
//! random map starts afresh every `zonerange` bytes issued.
//!
//! fio wraps at the file's end; raidlab at the job's region's end, which
//! is the same for a file fio sized with `size` (on a larger device fio
//! strides on past `size`).

use crate::units::format_size;
use serde::Serialize;

/// A job's strided zones.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Strided {
    /// Bytes issued in a zone before moving to the next (`zonesize`).
    pub size: u64,
    /// A zone's bytes (`zonerange`; fio's default: `zonesize`).
    pub range: u64,
    /// Bytes skipped after a zone, beyond its range (`zoneskip`).
    pub skip: u64,
}

/// The zone keys as given, before they are settled into [`Strided`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct ZoneKeys {
    /// `zonemode`: `Some(true)` strided, `Some(false)` none.
    pub strided: Option<bool>,
    pub size: Option<u64>,
    pub range: Option<u64>,
    pub skip: Option<u64>,
}

impl ZoneKeys {
    /// Take one zone key; `Ok(false)`: not a zone key. Sizes arrive in
    /// bytes (a job file's under its `kb_base`).
    pub fn set(&mut self, k: &str, v: &str) -> Result<bool, String> {
        let bytes = |v: &str| {
            crate::units::parse_size(v).map_err(|_| format!("{k}={v}: expected a size in bytes"))
        };
        match k {
            "zonemode" => {
                self.strided = Some(match v {
                    "strided" => true,
                    "none" => false,
                    "zbd" => {
                        return Err("zonemode=zbd: zoned block devices are not modelled; \
                                    zonemode=strided and none are"
                            .into())
                    }
                    _ => return Err(format!("zonemode={v}: expected none or strided")),
                })
            }
            "zonesize" => self.size = Some(bytes(v)?),
            "zonerange" => self.range = Some(bytes(v)?),
            "zoneskip" => self.skip = Some(bytes(v)?),
            // fio ignores it but for zonemode=zbd.
            "zonecapacity" => {
                bytes(v)?;
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The zones these keys give, as fio's `fixup_options` settles them:
    /// `zonemode` is `none` unless given, and then refuses a `zonesize`
    /// ("--zonemode=none and --zonesize are not compatible") and ignores
    /// `zonerange` and `zoneskip`; strided needs a `zonesize`, and
    /// `zonerange` defaults to it.
    pub fn settle(self) -> Result<Option<Strided>, String> {
        if self.strided != Some(true) {
            return match self.size {
                Some(_) => Err(
                    "zonesize needs zonemode=strided (fio: \"--zonemode=none and \
                                --zonesize are not compatible\")"
                        .into(),
                ),
                None => Ok(None),
            };
        }
        let size = match self.size {
            Some(s) if s > 0 => s,
            _ => return Err("zonemode=strided needs a positive zonesize".into()),
        };
        let range = self.range.filter(|&r| r > 0).unwrap_or(size);
        Ok(Some(Strided {
            size,
            range,
            skip: self.skip.unwrap_or(0),
        }))
    }
}

impl Strided {
    /// The keys that give these zones, as `export-fio` and `--echo` write
    /// them.
    pub fn pairs(&self) -> Vec<(String, String)> {
        let mut v = vec![
            ("zonemode".into(), "strided".into()),
            ("zonesize".into(), format_size(self.size)),
            ("zonerange".into(), format_size(self.range)),
        ];
        if self.skip > 0 {
            v.push(("zoneskip".into(), format_size(self.skip)));
        }
        v
    }
}

/// Where a job is in its zones: the zone's start in its region, and the
/// bytes issued in it so far.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ZoneWalk {
    zones: Strided,
    start: u64,
    issued: u64,
    /// Zones entered so far, for the random map's key.
    entered: u64,
}

impl ZoneWalk {
    pub fn new(zones: Strided) -> ZoneWalk {
        ZoneWalk {
            zones,
            start: 0,
            issued: 0,
            entered: 0,
        }
    }

    /// Before an I/O of a region `span` bytes long: move to the next zone
    /// when this one has had its bytes (wrapping to the region's start
    /// past its end). Whether it moved.
    pub fn advance(&mut self, span: u64) -> bool {
        if self.issued < self.zones.size {
            return false;
        }
        self.issued = 0;
        self.entered += 1;
        self.start = self
            .start
            .saturating_add(self.zones.range)
            .saturating_add(self.zones.skip);
        if self.start >= span {
            self.start = 0;
        }
        true
    }

    /// Go back to the region's first zone (the one the walk is in is
    /// clipped by the region's end too short for an I/O).
    pub fn restart(&mut self) {
        self.start = 0;
    }

    /// The zone's bytes in a region of `span`: its start and its end,
    /// clipped to the region.
    pub fn window(&self, span: u64) -> (u64, u64) {
        (
            self.start,
            self.start.saturating_add(self.zones.range).min(span),
        )
    }

    /// Whether the random map starts afresh before this I/O (fio resets
    /// it every `zonerange` bytes issued in a zone).
    pub fn map_resets(&self) -> bool {
        self.issued.is_multiple_of(self.zones.range)
    }

    /// A key that differs from zone to zone, so that each zone's map
    /// visits its blocks in an order of its own.
    pub fn entered(&self) -> u64 {
        self.entered
    }

    /// An I/O of `len` bytes was issued in the zone.
    pub fn issued(&mut self, len: u64) {
        self.issued += len;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(pairs: &[(&str, &str)]) -> Result<Option<Strided>, String> {
        let mut k = ZoneKeys::default();
        for (a, b) in pairs {
            assert!(k.set(a, b)?);
        }
        k.settle()
    }

    #[test]
    fn settles_as_fio_does() {
        // zonerange defaults to zonesize.
        assert_eq!(
            keys(&[("zonemode", "strided"), ("zonesize", "1048576")]).unwrap(),
            Some(Strided {
                size: 1 << 20,
                range: 1 << 20,
                skip: 0
            })
        );
        // fio's zonemode is none unless given, and none refuses a zonesize
        // but ignores a range and a skip.
        assert!(keys(&[("zonesize", "4096")])
            .unwrap_err()
            .contains("zonemode=strided"));
        assert!(keys(&[("zonemode", "none"), ("zonesize", "4096")]).is_err());
        assert_eq!(
            keys(&[
                ("zonemode", "none"),
                ("zonerange", "4096"),
                ("zoneskip", "1")
            ])
            .unwrap(),
            None
        );
        assert_eq!(keys(&[]).unwrap(), None);
        assert!(keys(&[("zonemode", "strided")]).is_err());
        assert!(keys(&[("zonemode", "zbd")]).unwrap_err().contains("zbd"));
        assert!(keys(&[("zonemode", "x")]).is_err());
        assert!(keys(&[("zonesize", "lots")]).is_err());
    }

    #[test]
    fn walks_zones_and_wraps() {
        let z = Strided {
            size: 8192,
            range: 16384,
            skip: 16384,
        };
        let mut w = ZoneWalk::new(z);
        let span = 100_000;
        let mut starts = Vec::new();
        for _ in 0..10 {
            w.advance(span);
            starts.push(w.window(span).0);
            w.issued(4096);
        }
        // Two 4 KiB I/Os a zone, zones 32 KiB apart, wrapping past 100,000.
        assert_eq!(
            starts,
            [0, 0, 32768, 32768, 65536, 65536, 98304, 98304, 0, 0]
        );
        // The last zone is clipped to the region.
        w.start = 98304;
        assert_eq!(w.window(span), (98304, 100_000));
    }
}
