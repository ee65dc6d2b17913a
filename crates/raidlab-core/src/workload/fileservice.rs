//! fio's `file_service_type`: which of a job's volumes (fio: its files)
//! its next I/O goes to.
//!
//! As fio's `__get_next_file` (io_u.c): `roundrobin` goes to the volumes
//! in turn, `random` picks one at random (uniformly, among those not run
//! out), each switching after `N` I/Os (`roundrobin:N`, `random:N`; 1 by
//! default); `sequential` stays on one volume until the job has run out of
//! it, then takes the next. fio's skewed choices (`zipf`, `pareto`,
//! `normal`, `gauss`) are not modelled and are refused.

use crate::rng::{mix, Rng};

/// How a job picks its next volume.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FileServiceKind {
    /// In turn (fio's default).
    Roundrobin,
    /// At random.
    Random,
    /// One after another, each until the job has run out of it.
    Sequential,
}

/// A job's `file_service_type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct FileService {
    /// How the next volume is picked.
    pub kind: FileServiceKind,
    /// I/Os to a volume before the next pick (`roundrobin` and `random`).
    pub every: u32,
}

impl Default for FileService {
    fn default() -> Self {
        FileService {
            kind: FileServiceKind::Roundrobin,
            every: 1,
        }
    }
}

/// Largest `N` of `roundrobin:N` and `random:N`.
const MAX_EVERY: u32 = 1 << 30;

impl FileService {
    /// Parse fio's value: `roundrobin`, `random`, `sequential`, each with
    /// an optional `:N`.
    pub fn parse(v: &str) -> Result<FileService, String> {
        let (name, n) = match v.split_once(':') {
            Some((name, n)) => (name, Some(n)),
            None => (v, None),
        };
        let kind = match name {
            "roundrobin" => FileServiceKind::Roundrobin,
            "random" => FileServiceKind::Random,
            "sequential" => FileServiceKind::Sequential,
            "zipf" | "pareto" | "normal" | "gauss" => {
                return Err(format!(
                    "file_service_type={v}: a skewed choice of volume is not modelled; give roundrobin, random or sequential"
                ))
            }
            _ => {
                return Err(format!(
                    "file_service_type={v}: expected roundrobin, random or sequential (each with :N, I/Os before switching)"
                ))
            }
        };
        let every = match n {
            None => 1,
            Some(n) => n
                .parse::<u32>()
                .ok()
                .filter(|n| (1..=MAX_EVERY).contains(n))
                .ok_or_else(|| {
                    format!("file_service_type={v}: the I/Os before switching are a whole number from 1 to {MAX_EVERY}")
                })?,
        };
        Ok(FileService { kind, every })
    }

    /// Whether this is fio's default (`roundrobin`, one I/O a turn).
    pub fn is_default(&self) -> bool {
        *self == FileService::default()
    }

    /// The value as fio reads it.
    pub fn text(&self) -> String {
        let name = match self.kind {
            FileServiceKind::Roundrobin => "roundrobin",
            FileServiceKind::Random => "random",
            FileServiceKind::Sequential => "sequential",
        };
        if self.every == 1 || self.kind == FileServiceKind::Sequential {
            name.to_string()
        } else {
            format!("{name}:{}", self.every)
        }
    }
}

/// One job's choice of volume, I/O by I/O.
#[derive(Debug, Clone)]
pub struct FileChooser {
    svc: FileService,
    /// The volume of the last I/O, and the I/Os it has left before the
    /// next pick.
    cur: Option<usize>,
    left: u32,
    rng: Rng,
}

impl FileChooser {
    /// Job `job`'s chooser, its random picks drawn from `seed`.
    pub fn new(svc: FileService, seed: u64, job: u32) -> FileChooser {
        FileChooser {
            svc,
            cur: None,
            left: 0,
            // Apart from the job's offset streams (a constant of its own).
            rng: Rng::new(mix(mix(seed, 0x6669_6c65_7376_6300), u64::from(job))),
        }
    }

    /// The volume of `n` the next I/O goes to, `out(v)` saying which the
    /// job has run out of; `None` once it has run out of all.
    #[inline]
    pub fn next(&mut self, n: usize, out: impl Fn(usize) -> bool) -> Option<usize> {
        if n == 1 {
            // One volume: every choice is the same.
            return (!out(0)).then_some(0);
        }
        if let Some(c) = self.cur.filter(|&c| !out(c)) {
            if self.svc.kind == FileServiceKind::Sequential {
                return Some(c);
            }
            if self.left > 0 {
                self.left -= 1;
                return Some(c);
            }
        }
        let pick = match self.svc.kind {
            FileServiceKind::Roundrobin | FileServiceKind::Sequential => {
                let from = self.cur.map_or(0, |c| c + 1);
                (0..n).map(|i| (from + i) % n).find(|&v| !out(v))?
            }
            FileServiceKind::Random => {
                let live = (0..n).filter(|&v| !out(v)).count();
                if live == 0 {
                    return None;
                }
                let k = self.rng.below(live as u64) as usize;
                (0..n).filter(|&v| !out(v)).nth(k)?
            }
        };
        self.cur = Some(pick);
        self.left = self.svc.every - 1;
        Some(pick)
    }

    /// The volume the next I/O would go to under the default round robin,
    /// without choosing it (a replayed trace's flush looks ahead so).
    pub fn upcoming(&self, n: usize) -> usize {
        if n == 1 {
            return 0;
        }
        self.cur.map_or(0, |c| (c + 1) % n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn picks(svc: &str, n: usize, count: usize, out: impl Fn(usize, usize) -> bool) -> Vec<usize> {
        let mut c = FileChooser::new(FileService::parse(svc).unwrap(), 1, 0);
        (0..count).map_while(|i| c.next(n, |v| out(i, v))).collect()
    }

    #[test]
    fn values_read_as_fio_reads_them() {
        assert!(FileService::parse("roundrobin").unwrap().is_default());
        let s = FileService::parse("random:8").unwrap();
        assert_eq!(
            (s.kind, s.every, s.text()),
            (FileServiceKind::Random, 8, "random:8".into())
        );
        assert_eq!(FileService::parse(&s.text()).unwrap(), s);
        for bad in ["zipf:1.2", "gauss", "lottery", "random:0", "roundrobin:x"] {
            assert!(FileService::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn round_robin_goes_in_turn_and_switches_every_n() {
        assert_eq!(
            picks("roundrobin", 3, 7, |_, _| false),
            [0, 1, 2, 0, 1, 2, 0]
        );
        assert_eq!(
            picks("roundrobin:2", 3, 7, |_, _| false),
            [0, 0, 1, 1, 2, 2, 0]
        );
        // A volume run out of is passed over.
        assert_eq!(picks("roundrobin", 3, 5, |_, v| v == 1), [0, 2, 0, 2, 0]);
    }

    #[test]
    fn sequential_stays_until_the_volume_runs_out() {
        let v = picks("sequential", 3, 9, |i, v| {
            (i >= 3 && v == 0) || (i >= 6 && v == 1)
        });
        assert_eq!(v, [0, 0, 0, 1, 1, 1, 2, 2, 2]);
        assert_eq!(picks("sequential", 2, 3, |_, _| true), Vec::<usize>::new());
    }

    #[test]
    fn random_spreads_evenly_and_is_repeatable() {
        let v = picks("random", 4, 40_000, |_, _| false);
        for vol in 0..4 {
            let k = v.iter().filter(|&&x| x == vol).count();
            assert!((9_500..10_500).contains(&k), "volume {vol}: {k}");
        }
        assert_eq!(v, picks("random", 4, 40_000, |_, _| false));
        let runs = picks("random:4", 4, 400, |_, _| false);
        assert!(
            runs.chunks(4).all(|c| c.iter().all(|&x| x == c[0])),
            "{runs:?}"
        );
        assert!(picks("random", 3, 100, |_, v| v != 2)
            .iter()
            .all(|&x| x == 2));
    }
}
