//! Array options (`raid5[stripe=64k,bitmap=...]`) and the shape checks of
//! an expression: roots, elements, member counts.

use super::*;

/// The options of an array node, checked against its level. Shared by the
/// simulator's resolution and the real engine, which refuses some of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArrayOpts {
    /// `stripe=`, if given.
    pub stripe: Option<u64>,
    /// `layout=` (left-symmetric by default).
    pub layout: ArrayLayout,
    /// `spares=` and its column.
    pub spares: Option<(u32, usize)>,
    /// `impl=` and its column.
    pub imp: Option<(String, usize)>,
    /// `rebuild_min=` / `rebuild_max=`: a simulated rebuild's guaranteed
    /// and idle rates, bytes per second, and the column of the first given.
    pub rebuild_rates: (Option<u64>, Option<u64>, usize),
    /// `group_thread_cnt=` and its column.
    pub group_threads: Option<(u32, usize)>,
    /// `bitmap=`, `bitmap_chunk=` and `bitmap_device=`.
    pub bitmap: BitmapOpts,
    /// `consistency=ppl|resync` (true for ppl) and its column.
    pub consistency: Option<(bool, usize)>,
}

/// An array's bitmap options as given.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BitmapOpts {
    /// `bitmap=`: internal, external or none.
    pub kind: Option<BitmapKind>,
    /// `bitmap_chunk=`, bytes.
    pub chunk: Option<u64>,
    /// `bitmap_device=PRESET` and its column: the drive an external
    /// bitmap's file lives on.
    pub device: Option<(String, usize)>,
    /// Column of the first bitmap option given (0: none).
    pub col: usize,
}

/// Where md keeps an array's write-intent bitmap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BitmapKind {
    /// In the members' metadata, written to every member.
    Internal,
    /// In a file on another drive (mdadm's `--bitmap=FILE`).
    External,
    /// No bitmap.
    None,
}

/// The bitmap an array's options ask for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BitmapChoice {
    /// Its region, bytes.
    pub chunk: u64,
    /// An external bitmap's drive: preset name and column.
    pub device: Option<(String, usize)>,
}

/// mdadm's default bitmap chunk for an internal bitmap: 64 MiB (mdadm(8),
/// `--bitmap-chunk`: "when using an internal bitmap, the chunksize
/// defaults to 64Meg, or larger if necessary to fit the bitmap into the
/// available space").
pub const MD_BITMAP_CHUNK: u64 = 64 << 20;

/// `bitmap=internal|external|none`, `bitmap_chunk=SIZE` (a power of two
/// from 4k, mdadm's smallest, to 1t) or `bitmap_device=PRESET` on an array
/// with redundancy.
pub(crate) fn bitmap_option(a: &mut ArrayOpts, level: Level, o: &Opt) -> Result<()> {
    if matches!(level, Level::Raid0 | Level::Concat) {
        return invalid(o.col, format!("{}: a write-intent bitmap needs redundancy (raid1, raid4, raid5, raid6, raid10), not {}", o.key, level.word()));
    }
    if a.bitmap.col == 0 {
        a.bitmap.col = o.col;
    }
    match o.key.as_str() {
        "bitmap" => {
            a.bitmap.kind = Some(match o.value.as_str() {
                "internal" => BitmapKind::Internal,
                "external" => BitmapKind::External,
                "none" => BitmapKind::None,
                v => {
                    return invalid(
                        o.col,
                        format!("bitmap={v}: expected internal, external or none"),
                    )
                }
            });
            return Ok(());
        }
        "bitmap_device" => {
            a.bitmap.device = Some((o.value.clone(), o.col));
            return Ok(());
        }
        _ => {}
    }
    let c = parse_size(&o.value)
        .ok()
        .filter(|c| c.is_power_of_two() && (4096..=1 << 40).contains(c))
        .ok_or_else(|| Error::Invalid {
            col: o.col,
            msg: format!(
                "bitmap_chunk={}: expected a power of two from 4k to 1t",
                o.value
            ),
        })?;
    a.bitmap.chunk = Some(c);
    Ok(())
}

/// The bitmap an array's options ask for: its chunk, and the drive of an
/// external one (`bitmap_chunk=` alone implies an internal bitmap,
/// `bitmap_device=` an external one); md only.
pub(crate) fn bitmap_choice(
    bitmap: &BitmapOpts,
    imp: Option<&str>,
) -> Result<Option<BitmapChoice>> {
    let col = bitmap.col;
    if col > 0 && !md_family(imp) {
        return invalid(
            col,
            "bitmap, bitmap_chunk and bitmap_device are md's write-intent bitmap; this array is not md",
        );
    }
    let kind = bitmap.kind.unwrap_or(match (&bitmap.device, bitmap.chunk) {
        (Some(_), _) => BitmapKind::External,
        (None, Some(_)) => BitmapKind::Internal,
        (None, None) => BitmapKind::None,
    });
    let chunk = bitmap.chunk.unwrap_or(MD_BITMAP_CHUNK);
    match (kind, &bitmap.device) {
        (BitmapKind::None, _) if bitmap.chunk.is_some() || bitmap.device.is_some() => {
            invalid(col, "bitmap=none with a bitmap_chunk or bitmap_device")
        }
        (BitmapKind::None, _) => Ok(None),
        (BitmapKind::Internal, Some((_, dcol))) => invalid(
            *dcol,
            "bitmap_device is for an external bitmap; bitmap=internal keeps it on the members",
        ),
        (BitmapKind::Internal, None) => Ok(Some(BitmapChoice {
            chunk,
            device: None,
        })),
        (BitmapKind::External, None) => invalid(
            col,
            "bitmap=external needs bitmap_device=PRESET, the drive its file lives on",
        ),
        (BitmapKind::External, Some(d)) => Ok(Some(BitmapChoice {
            chunk,
            device: Some(d.clone()),
        })),
    }
}

/// Most members md's Partial Parity Log handles ("There is a limitation of
/// maximum 64 disks in the array for PPL", Documentation/md/raid5-ppl.rst).
pub const PPL_MAX_MEMBERS: usize = 64;

/// `consistency=ppl|resync` (mdadm's `--consistency-policy`): whether the
/// array keeps md's Partial Parity Log, which exists for RAID 5 only
/// ("PPL is a feature available for RAID5 arrays", raid5-ppl.rst).
pub(crate) fn consistency_option(level: Level, o: &Opt) -> Result<bool> {
    match o.value.as_str() {
        "ppl" if level == Level::Raid5 => Ok(true),
        "ppl" => invalid(
            o.col,
            format!(
                "consistency=ppl: md's Partial Parity Log exists for raid5 only, not {}",
                level.word()
            ),
        ),
        "resync" if level.parity_members() > 0 || matches!(level, Level::Raid1 | Level::Raid10) => {
            Ok(false)
        }
        "resync" => invalid(
            o.col,
            format!(
                "consistency=resync: {} has no redundancy to resync",
                level.word()
            ),
        ),
        v => invalid(o.col, format!("consistency={v}: expected ppl or resync")),
    }
}

/// Implementations that run md's own code: its bitmap, stripe workers and
/// Partial Parity Log apply (Intel VROC on Linux is md with IMSM metadata).
pub(crate) fn md_family(imp: Option<&str>) -> bool {
    matches!(imp, Some("md" | "vroc"))
}

/// `stripe=SIZE`: a power of two from 4 KiB to 1 GiB.
fn stripe_option(o: &Opt) -> Result<u64> {
    let s = parse_size(&o.value).map_err(|m| Error::Invalid {
        col: o.col,
        msg: m.to_string(),
    })?;
    if s < 4096 || !s.is_power_of_two() || s > 1 << 30 {
        return invalid(
            o.col,
            format!(
                "stripe={}: the stripe unit must be a power of two from 4k to 1g",
                o.value
            ),
        );
    }
    Ok(s)
}

/// `layout=`: a parity layout for RAID 5 and 6, a copy layout for RAID 10
/// (`None`: keep the level's default).
fn layout_option(level: Level, o: &Opt) -> Result<Option<ArrayLayout>> {
    match level {
        Level::Raid4 => invalid(o.col, "raid4 has one layout, parity on its last member (md's level 4): no layout="),
        Level::Raid5 | Level::Raid6 => ArrayLayout::from_word(&o.value).filter(|l| !l.is_mirror()).map(Some).ok_or_else(|| Error::Invalid {
            col: o.col,
            msg: format!("layout={}: expected left-symmetric, left-asymmetric, right-symmetric or right-asymmetric", o.value),
        }),
        Level::Raid10 => ArrayLayout::from_word(&o.value).filter(|l| l.is_mirror()).map(Some).ok_or_else(|| Error::Invalid {
            col: o.col,
            msg: format!("layout={}: raid10 takes n2 (near copies, the default), f2 (far) or o2 (offset), two copies each", o.value),
        }),
        _ => invalid(o.col, format!("layout applies to raid5, raid6 and raid10, not {}", level.word())),
    }
}

/// `rebuild_min=`/`rebuild_max=`: bytes per second, at least 1 KiB.
fn rate_option(o: &Opt) -> Result<u64> {
    parse_size(&o.value)
        .ok()
        .filter(|&r| r >= 1024)
        .ok_or_else(|| Error::Invalid {
            col: o.col,
            msg: format!(
                "{}={}: expected a rate in bytes per second of at least 1k, e.g. 200m",
                o.key, o.value
            ),
        })
}

/// Check the options of an array of `level`.
pub fn array_options(level: Level, opts: &[Opt]) -> Result<ArrayOpts> {
    let mut a = ArrayOpts {
        stripe: None,
        layout: ArrayLayout::default_for(level),
        spares: None,
        imp: None,
        rebuild_rates: (None, None, 0),
        group_threads: None,
        bitmap: BitmapOpts::default(),
        consistency: None,
    };
    for o in opts {
        match o.key.as_str() {
            "stripe" => a.stripe = Some(stripe_option(o)?),
            "layout" => {
                if let Some(l) = layout_option(level, o)? {
                    a.layout = l;
                }
            }
            "spares" => {
                let n = o.value.parse().ok().filter(|&n: &u32| n <= 64).ok_or_else(|| Error::Invalid {
                    col: o.col,
                    msg: format!("spares={}: expected a count", o.value),
                })?;
                a.spares = Some((n, o.col));
            }
            "bitmap" | "bitmap_chunk" | "bitmap_device" => bitmap_option(&mut a, level, o)?,
            "consistency" => a.consistency = Some((consistency_option(level, o)?, o.col)),
            "group_thread_cnt" => {
                if level.parity_members() == 0 {
                    return invalid(o.col, format!("group_thread_cnt applies to raid4, raid5 and raid6 (md's stripe workers), not {}", level.word()));
                }
                // md accepts up to 8192 (raid5_store_group_thread_cnt).
                let n = o.value.parse().ok().filter(|&n: &u32| n <= 8192).ok_or_else(|| Error::Invalid {
                    col: o.col,
                    msg: format!("group_thread_cnt={}: expected 0 to 8192 (md's limit)", o.value),
                })?;
                a.group_threads = Some((n, o.col));
            }
            "impl" => {
                if !IMPLS.contains(&o.value.as_str()) {
                    return invalid(o.col, format!("impl={}: expected {}", o.value, IMPLS.join(", ")));
                }
                a.imp = Some((o.value.clone(), o.col));
            }
            "rebuild_min" | "rebuild_max" => {
                let r = rate_option(o)?;
                if a.rebuild_rates.2 == 0 {
                    a.rebuild_rates.2 = o.col;
                }
                if o.key == "rebuild_min" {
                    a.rebuild_rates.0 = Some(r);
                } else {
                    a.rebuild_rates.1 = Some(r);
                }
            }
            _ => {
                return unknown_key(
                    o,
                    "an array",
                    "stripe, layout, spares, impl, rebuild_min, rebuild_max, group_thread_cnt, bitmap, bitmap_chunk, bitmap_device, consistency",
                )
            }
        }
    }
    Ok(a)
}

/// An expression's root: the `host(...)` wrapper, if any, and the nodes it
/// runs.
#[derive(Debug, Clone, Copy)]
pub struct Root<'a> {
    /// `host`'s options and column, when the expression is wrapped in it.
    pub host: Option<(&'a [Opt], usize)>,
    /// The nodes under the host: one, or several the simulator runs side
    /// by side as separate volumes.
    pub inners: &'a [Ast],
}

/// Split `host(...)` off the root of `ast`; the host wraps one node or
/// more. Both engines start their walk here.
pub fn split_root(ast: &Ast) -> Result<Root<'_>> {
    match ast {
        Ast::Group {
            name,
            opts,
            children,
            col,
        } if name == "host" => {
            if children.is_empty() {
                return invalid(*col, "host(...) wraps at least one node");
            }
            Ok(Root {
                host: Some((opts, *col)),
                inners: children,
            })
        }
        _ => Ok(Root {
            host: None,
            inners: std::slice::from_ref(ast),
        }),
    }
}

/// One node of an expression, classified by the grammar rules both engines
/// share: the simulator gives leaves and other groups presets, the real
/// engine paths and nothing.
#[derive(Debug, Clone)]
pub enum Element<'a> {
    /// `[COUNT*]NAME[opts]`: a preset, a path or `missing`.
    Leaf {
        /// Name as written.
        name: &'a str,
        /// Repeat count.
        count: u32,
        /// Options, unchecked.
        opts: &'a [Opt],
        /// Column.
        col: usize,
    },
    /// `LEVEL[opts](...)`, its options checked against the level.
    Array {
        /// RAID level.
        level: Level,
        /// Checked options.
        opts: ArrayOpts,
        /// Members.
        children: &'a [Ast],
        /// Column.
        col: usize,
    },
    /// Any other `NAME[opts](...)`: a controller in the simulator.
    Group {
        /// Name as written.
        name: &'a str,
        /// Options, unchecked.
        opts: &'a [Opt],
        /// Children.
        children: &'a [Ast],
        /// Column.
        col: usize,
    },
}

/// Classify a node below the root: a RAID level or `host` without
/// parentheses and a `host` that does not wrap the whole expression are
/// refused here, for both engines.
pub fn classify(ast: &Ast) -> Result<Element<'_>> {
    match ast {
        Ast::Leaf {
            name,
            count,
            opts,
            col,
        } => {
            if Level::from_word(name).is_some() || name == "host" {
                return invalid(
                    *col,
                    format!("'{name}' needs members in parentheses: {name}(...)"),
                );
            }
            Ok(Element::Leaf {
                name,
                count: *count,
                opts,
                col: *col,
            })
        }
        Ast::Group { name, col, .. } if name == "host" => {
            invalid(*col, "host(...) may only wrap the whole expression")
        }
        Ast::Group {
            name,
            opts,
            children,
            col,
        } => Ok(match Level::from_word(name) {
            Some(level) => Element::Array {
                level,
                opts: array_options(level, opts)?,
                children,
                col: *col,
            },
            None => Element::Group {
                name,
                opts,
                children,
                col: *col,
            },
        }),
    }
}

/// Refuse an array of `level` with fewer `active` members (spares not
/// counted) than the level needs.
pub fn check_members(level: Level, active: usize, col: usize) -> Result<()> {
    let min = level.min_members();
    if active >= min {
        return Ok(());
    }
    invalid(
        col,
        format!(
            "{} with {active} active member{} ({} needs at least {min})",
            level.word(),
            if active == 1 { "" } else { "s" },
            level.word()
        ),
    )
}
