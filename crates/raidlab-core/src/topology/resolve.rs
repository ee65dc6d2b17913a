//! Resolution of a parsed expression against the presets: devices,
//! controllers, arrays and the host with their options and defaults.

use super::*;
use crate::kernel::KernelParseError;

pub(crate) fn invalid<T>(col: usize, msg: impl Into<String>) -> Result<T> {
    Err(Error::Invalid {
        col,
        msg: msg.into(),
    })
}

pub(crate) fn unknown_key<T>(o: &Opt, what: &str, allowed: &str) -> Result<T> {
    // The words other tools use for raidlab's options.
    let hint = match o.key.as_str() {
        "chunk" | "chunk_size" | "strip" | "stripe_size" => "; mdadm's chunk is 'stripe' here",
        "level" => "; the level is the array's name: raid5[...](...)",
        "write_cache" | "wce" => "; a drive's write cache is 'wc', a controller's 'cache'",
        _ => "",
    };
    invalid(
        o.col,
        format!(
            "unknown option '{}' for {what} (allowed: {allowed}){hint}",
            o.key
        ),
    )
}

pub(crate) fn on_off(o: &Opt) -> Result<bool> {
    match o.value.as_str() {
        "on" | "1" | "true" => Ok(true),
        "off" | "0" | "false" => Ok(false),
        v => invalid(o.col, format!("{}={v}: expected on or off", o.key)),
    }
}

pub(crate) struct Resolver<'a> {
    pub(crate) db: &'a PresetDb,
    pub(crate) counters: BTreeMap<String, usize>,
    pub(crate) devices: u32,
}

impl Resolver<'_> {
    pub(crate) fn label(&mut self, name: &str) -> String {
        let n = self.counters.entry(name.to_string()).or_insert(0);
        let l = format!("{name}#{n}");
        *n += 1;
        l
    }

    pub(crate) fn unknown_preset<T>(&self, name: &str, col: usize) -> Result<T> {
        invalid(col, self.db.unknown(name))
    }

    /// Resolve one node of the tree; `in_ctrl` is the port rate and name of
    /// the controller it sits in, if any. A counted leaf (`4*x25e`) gives
    /// several devices.
    pub(crate) fn node(&mut self, ast: &Ast, in_ctrl: Option<(f64, &str)>) -> Result<Vec<Node>> {
        match classify(ast)? {
            Element::Leaf {
                name,
                count,
                opts,
                col,
            } => self.leaf_devices(name, count, opts, col, in_ctrl),
            Element::Array {
                level,
                opts,
                children,
                col,
            } => Ok(vec![Node::Array(
                self.array(level, opts, children, col, in_ctrl)?,
            )]),
            Element::Group {
                name,
                opts,
                children,
                col,
            } => self.group(name, opts, children, col, in_ctrl),
        }
    }

    /// `count` devices of preset `name`.
    pub(crate) fn leaf_devices(
        &mut self,
        name: &str,
        count: u32,
        opts: &[Opt],
        col: usize,
        in_ctrl: Option<(f64, &str)>,
    ) -> Result<Vec<Node>> {
        let preset = self
            .db
            .get(name)
            .or_else(|| self.db.by_path(name).map(|(_, p)| p));
        let model = match preset {
            Some(Preset::Ssd(p)) => DeviceModel::Ssd(Arc::new(p.clone())),
            Some(Preset::Hdd(p)) => DeviceModel::Hdd(Arc::new(p.clone())),
            Some(Preset::Controller(_)) => {
                return invalid(
                    col,
                    format!(
                        "controller '{name}' needs devices or an array in parentheses: {name}(...)"
                    ),
                )
            }
            Some(Preset::Host(_)) => {
                return invalid(
                    col,
                    format!(
                        "'{name}' is a host profile, not a device: write host[profile={name}](...) around the arrays it runs"
                    ),
                )
            }
            None => return self.unknown_preset(name, col),
        };
        let mut model = model;
        let DeviceOptions {
            wc,
            op,
            state,
            queue_depth,
        } = device_options(name, &mut model, opts)?;
        self.devices += count;
        if self.devices > MAX_DEVICES {
            return invalid(col, format!("more than {MAX_DEVICES} devices"));
        }
        let dev_link = match &model {
            DeviceModel::Ssd(p) => p.link_mbps,
            DeviceModel::Hdd(p) => p.link_mbps,
        };
        let link_mbps = match in_ctrl {
            Some((port, _)) => dev_link.min(port),
            None => dev_link,
        };
        Ok((0..count)
            .map(|_| {
                Node::Device(Device {
                    preset: name.to_string(),
                    label: self.label(name),
                    model: model.clone(),
                    wc,
                    op,
                    state,
                    queue_depth,
                    link_mbps,
                    failed: false,
                    col,
                })
            })
            .collect())
    }

    /// `NAME(...)` that is not an array: a controller (never inside another).
    pub(crate) fn group(
        &mut self,
        name: &str,
        opts: &[Opt],
        children: &[Ast],
        col: usize,
        in_ctrl: Option<(f64, &str)>,
    ) -> Result<Vec<Node>> {
        let params = match self.db.get(name) {
            Some(Preset::Controller(p)) => p.clone(),
            Some(Preset::Ssd(_) | Preset::Hdd(_)) => {
                return invalid(
                    col,
                    format!(
                        "'{name}' is a device; only controllers, arrays and host take parentheses"
                    ),
                )
            }
            Some(Preset::Host(_)) => {
                return invalid(
                    col,
                    format!(
                        "'{name}' is a host profile, not a node: write host[profile={name}](...) to run the arrays inside on it"
                    ),
                )
            }
            None => return self.unknown_preset(name, col),
        };
        if let Some((_, outer)) = in_ctrl {
            return invalid(
                col,
                format!("controller '{name}' inside controller '{outer}'"),
            );
        }
        Ok(vec![Node::Controller(
            self.controller(name, params, opts, children, col)?,
        )])
    }

    pub(crate) fn controller(
        &mut self,
        name: &str,
        mut params: ControllerParams,
        opts: &[Opt],
        children: &[Ast],
        col: usize,
    ) -> Result<Controller> {
        let o = controller_options(&mut params, opts)?;
        let label = self.label(name);
        let port = params.port_mbps;
        let mut kids = Vec::new();
        for c in children {
            kids.extend(self.node(c, Some((port, name)))?);
        }
        self.check_attachable(name, &params, &kids, col)?;
        md_limits_unused(name, &params, &kids)?;
        let mode = controller_mode(name, o.mode, &kids, col)?;
        let ndev = count_devices(&kids);
        if ndev > params.ports as usize {
            return invalid(
                col,
                format!(
                    "{name} has {} ports but {ndev} devices are attached",
                    params.ports
                ),
            );
        }
        Ok(Controller {
            preset: name.to_string(),
            label,
            // No cache, no write-back.
            write_back: o.write_back && params.cache_mb > 0,
            params: Arc::new(params),
            mode,
            readahead: o.readahead,
            children: kids,
            col,
        })
    }

    /// Refuse what controller `name` cannot hold: an array, where it is a
    /// host bus adapter (it passes drives through and runs no RAID), and an
    /// NVMe drive, where its lanes are SAS/SATA only.
    pub(crate) fn check_attachable(
        &self,
        name: &str,
        params: &ControllerParams,
        kids: &[Node],
        col: usize,
    ) -> Result<()> {
        if !params.raid && kids.iter().any(|k| matches!(k, Node::Array(_))) {
            return invalid(
                col,
                format!(
                    "{name} is a host bus adapter: it passes drives through and runs no RAID; put the array on the host around it, e.g. raid5({name}[mode=jbod](4*DRIVE))"
                ),
            );
        }
        if params.nvme {
            return Ok(());
        }
        let mut devices = Vec::new();
        kids.iter().for_each(|k| k.collect_devices(&mut devices));
        if let Some(d) = devices
            .iter()
            .find(|d| matches!(&d.model, DeviceModel::Ssd(p) if p.nvme))
        {
            let tri: Vec<&str> = self
                .db
                .names()
                .into_iter()
                .filter(|n| matches!(self.db.get(n), Some(Preset::Controller(c)) if c.nvme))
                .collect();
            return invalid(
                col,
                format!(
                    "{} is an NVMe drive and {name} takes SAS/SATA drives only; a tri-mode controller ({}) or the host's own lanes take NVMe",
                    d.preset,
                    tri.join(", ")
                ),
            );
        }
        Ok(())
    }

    /// An array's members as the expression gives them, and where its
    /// `missing` ones stand: (index among the members, count, column).
    fn members(
        &mut self,
        children: &[Ast],
        in_ctrl: Option<(f64, &str)>,
    ) -> Result<(Vec<Node>, Vec<Missing>)> {
        let mut members = Vec::new();
        let mut missing = Vec::new();
        for c in children {
            if let Ast::Leaf {
                name, count, col, ..
            } = c
            {
                if name == "missing" {
                    missing.push((members.len(), *count, *col));
                    continue;
                }
            }
            for n in self.node(c, in_ctrl)? {
                if let Node::Controller(ctl) = &n {
                    // A controller's volumes become members one by one.
                    if ctl.children.is_empty() {
                        return invalid(ctl.col, "controller without volumes");
                    }
                }
                members.push(n);
            }
        }
        Ok((members, missing))
    }

    pub(crate) fn array(
        &mut self,
        level: Level,
        o: ArrayOpts,
        children: &[Ast],
        col: usize,
        in_ctrl: Option<(f64, &str)>,
    ) -> Result<Array> {
        let (stripe, layout) = (o.stripe, o.layout);
        let spares = o.spares.map_or(0, |s| s.0);
        if let (Some((_, icol)), Some((_, ctrl))) = (&o.imp, in_ctrl) {
            return invalid(
                *icol,
                format!("impl is for host software RAID; this array is run by {ctrl}"),
            );
        }
        let mut imp = o.imp.map(|i| i.0);
        if in_ctrl.is_none() && imp.is_none() {
            imp = Some("md".into());
        }
        md_only_layout(layout, imp.as_deref(), in_ctrl, col)?;
        let (mut members, missing) = self.members(children, in_ctrl)?;
        self.fill_missing(&mut members, &missing, (level, layout), spares, col)?;
        let volumes: usize = members.iter().map(Node::volumes).sum();
        let active = volumes.saturating_sub(spares as usize);
        check_members(level, active, col)?;
        if let Some((_, ctrl)) = in_ctrl {
            check_controller_builds(ctrl, level, active, col)?;
        }
        // Without a stripe, the array takes its RAID implementation's
        // default: the controller's or the host software RAID profile's
        // (filled in by `default_stripes` once the tree is built).
        let stripe = stripe.unwrap_or(0);
        let rebuild_rates = rebuild_rates(o.rebuild_rates)?;
        let bitmap = bitmap_choice(&o.bitmap, imp.as_deref())?;
        let bitmap_chunk = bitmap.as_ref().map(|b| b.chunk);
        let bitmap_device = match bitmap.and_then(|b| b.device) {
            Some((name, dcol)) => Some(Box::new(self.bitmap_device(&name, dcol)?)),
            None => None,
        };
        let ppl = ppl_policy(
            o.consistency,
            bitmap_chunk.is_some(),
            imp.as_deref(),
            members.len(),
        )?;
        let group_threads = match o.group_threads {
            Some((n, gcol)) if !md_family(imp.as_deref()) => {
                return invalid(
                    gcol,
                    format!("group_thread_cnt={n}: md's stripe workers; this array is not md"),
                )
            }
            g => g.map_or(0, |g| g.0),
        };
        Ok(Array {
            level,
            stripe,
            layout,
            spares,
            imp,
            members,
            rebuild_rates,
            group_threads,
            bitmap_chunk,
            bitmap_device,
            ppl,
            col,
        })
    }

    /// The drive of preset `name` an external bitmap's file lives on: an
    /// SSD or a disk of its own, attached to the host.
    fn bitmap_device(&mut self, name: &str, col: usize) -> Result<Device> {
        match self.leaf_devices(name, 1, &[], col, None)?.pop() {
            Some(Node::Device(d)) => Ok(d),
            _ => invalid(
                col,
                format!("bitmap_device={name}: expected an SSD or disk preset"),
            ),
        }
    }
}

/// Refuse a hardware array of `level` over `active` members that
/// controller `ctrl`'s firmware does not build (its RAID 10 is a stripe of
/// two-drive mirrors: `Level::controller_builds`), naming the rule and the
/// host software RAID that takes the same members.
fn check_controller_builds(ctrl: &str, level: Level, active: usize, col: usize) -> Result<()> {
    if level.controller_builds(active) {
        return Ok(());
    }
    debug_assert_eq!(level, Level::Raid10, "the one level a controller limits");
    invalid(
        col,
        format!(
            "{ctrl} builds RAID 10 as a stripe of two-drive mirrors: an even number of members, at least 4, not {active}; md's raid10 takes {active}: put it on the host, e.g. raid10({ctrl}[mode=jbod]({active}*DRIVE))"
        ),
    )
}

/// Far and offset RAID 10 copies are md's own layouts: refused on a
/// controller's array (`in_ctrl`) or another software RAID (`imp`).
fn md_only_layout(
    layout: ArrayLayout,
    imp: Option<&str>,
    in_ctrl: Option<(f64, &str)>,
    col: usize,
) -> Result<()> {
    if !matches!(layout, ArrayLayout::Far2 | ArrayLayout::Offset2) || imp == Some("md") {
        return Ok(());
    }
    let by = in_ctrl.map_or_else(
        || format!("impl={}", imp.unwrap_or("?")),
        |c| c.1.to_string(),
    );
    invalid(
        col,
        format!(
            "layout={} is md's own RAID 10 layout; {by} mirrors neighbouring members only (n2)",
            layout.word()
        ),
    )
}

/// Refuse md's rebuild limits on the arrays of controller `name` when it
/// paces rebuilds by its own rate (`rebuild_rate`), where they would do
/// nothing.
fn md_limits_unused(name: &str, params: &ControllerParams, kids: &[Node]) -> Result<()> {
    if params.rebuild_rate_pct.is_none() {
        return Ok(());
    }
    for k in kids {
        if let Node::Array(a) = k {
            if a.rebuild_rates != (MD_SPEED_LIMIT_MIN, MD_SPEED_LIMIT_MAX) {
                return invalid(
                    a.col,
                    format!(
                        "rebuild_min and rebuild_max are md's; {name} paces a rebuild by its rebuild_rate"
                    ),
                );
            }
        }
    }
    Ok(())
}

/// Where an array's `missing` members stand: (index among the members
/// given, count, column).
type Missing = (usize, u32, usize);

/// md's resync rate bounds (`rebuild_min`, `rebuild_max`, the column
/// either was set at), md's defaults where unset.
fn rebuild_rates((lo, hi, col): (Option<u64>, Option<u64>, usize)) -> Result<(u64, u64)> {
    let rates = (
        lo.unwrap_or(MD_SPEED_LIMIT_MIN),
        hi.unwrap_or(MD_SPEED_LIMIT_MAX),
    );
    if rates.0 > rates.1 {
        return invalid(col, "rebuild_min is above rebuild_max");
    }
    Ok(rates)
}

/// Whether an array keeps md's Partial Parity Log: `consistency=ppl` on an
/// md-family array of at most [`PPL_MAX_MEMBERS`] members without a
/// write-intent bitmap ("using write-intent bitmap and PPL together is not
/// supported", raid5-ppl.rst).
pub(crate) fn ppl_policy(
    consistency: Option<(bool, usize)>,
    bitmap: bool,
    imp: Option<&str>,
    members: usize,
) -> Result<bool> {
    let Some((ppl, col)) = consistency else {
        return Ok(false);
    };
    if !md_family(imp) {
        return invalid(
            col,
            "consistency is md's --consistency-policy; this array is not md",
        );
    }
    if !ppl {
        return Ok(false);
    }
    if bitmap {
        return invalid(
            col,
            "consistency=ppl with a write-intent bitmap: md does not support both",
        );
    }
    if members > PPL_MAX_MEMBERS {
        return invalid(col, format!("consistency=ppl: md's Partial Parity Log takes at most {PPL_MAX_MEMBERS} members, not {members}"));
    }
    Ok(true)
}

impl Resolver<'_> {
    /// Put a failed device (a copy of a sibling device, marked failed) in
    /// the place of every `missing`, and refuse an array that has lost
    /// more members than its level tolerates.
    pub(crate) fn fill_missing(
        &mut self,
        members: &mut Vec<Node>,
        missing: &[Missing],
        (level, layout): (Level, ArrayLayout),
        spares: u32,
        col: usize,
    ) -> Result<()> {
        let Some(&(_, _, mcol)) = missing.first() else {
            return Ok(());
        };
        let Some(Node::Device(like)) = members.iter().find(|n| matches!(n, Node::Device(_))) else {
            return invalid(
                mcol,
                "'missing' stands for a failed device: its array needs a device member to copy",
            );
        };
        let like = like.clone();
        for &(at, count, mcol) in missing.iter().rev() {
            for _ in 0..count {
                let mut d = like.clone();
                d.failed = true;
                d.label = self.label("missing");
                d.col = mcol;
                members.insert(at, Node::Device(d));
            }
        }
        let active = members.len() - spares as usize;
        let lost: Vec<usize> = (0..active)
            .filter(|&i| matches!(&members[i], Node::Device(d) if d.failed))
            .collect();
        // Spares hold nothing until they are rebuilt: the data must survive
        // on the members left.
        if !level.survives(layout, active, &lost) {
            return invalid(
                col,
                format!(
                    "{} has lost {} member{} ({} missing): its data is gone",
                    level.word(),
                    lost.len(),
                    if lost.len() == 1 { "" } else { "s" },
                    lost.len()
                ),
            );
        }
        Ok(())
    }
}

/// A device's options as the expression sets them.
pub(crate) struct DeviceOptions {
    /// Volatile write cache on.
    pub(crate) wc: bool,
    /// Extra over-provisioning.
    pub(crate) op: f64,
    /// Starting state.
    pub(crate) state: Option<SsdState>,
    /// Command queue depth below the preset's, if set.
    pub(crate) queue_depth: Option<u32>,
}

/// A device's options; `queue_depth=` is applied to `model` as well.
pub(crate) fn device_options(
    name: &str,
    model: &mut DeviceModel,
    opts: &[Opt],
) -> Result<DeviceOptions> {
    let is_ssd = matches!(model, DeviceModel::Ssd(_));
    let mut wc = match model {
        DeviceModel::Ssd(p) => p.write_cache,
        DeviceModel::Hdd(p) => p.write_cache,
    };
    let mut op = 0.0;
    let mut state = None;
    let mut queue_depth = None;
    for o in opts {
        match o.key.as_str() {
            "wc" => wc = on_off(o)?,
            "queue_depth" => {
                let most = match model {
                    DeviceModel::Ssd(p) => p.queue_depth,
                    DeviceModel::Hdd(p) => p.queue_depth,
                };
                let qd = o
                    .value
                    .parse::<u32>()
                    .ok()
                    .filter(|q| (1..=most).contains(q))
                    .ok_or_else(|| Error::Invalid {
                        col: o.col,
                        msg: format!(
                            "queue_depth={}: expected 1 to {most}, the commands '{name}' queues (1: no NCQ)",
                            o.value
                        ),
                    })?;
                match model {
                    DeviceModel::Ssd(p) => std::sync::Arc::make_mut(p).queue_depth = qd,
                    DeviceModel::Hdd(p) => std::sync::Arc::make_mut(p).queue_depth = qd,
                }
                queue_depth = Some(qd);
            }
            "op" if is_ssd => {
                op = parse_percent(&o.value).map_err(|m| Error::Invalid {
                    col: o.col,
                    msg: m.to_string(),
                })?;
                if op > 0.9 {
                    return invalid(o.col, "op must leave at least 10% of the capacity");
                }
            }
            "state" if is_ssd => {
                state = Some(SsdState::from_word(&o.value).ok_or_else(|| Error::Invalid {
                    col: o.col,
                    msg: format!("state={}: expected fob, fill or steady", o.value),
                })?)
            }
            "op" | "state" => {
                return invalid(
                    o.col,
                    format!("option '{}' applies to SSDs, '{name}' is a disk", o.key),
                )
            }
            _ => return unknown_key(o, "a device", "wc, op, state, queue_depth"),
        }
    }
    Ok(DeviceOptions {
        wc,
        op,
        state,
        queue_depth,
    })
}

/// A controller's options, applied to its parameters where they override
/// them (`cache_mb`, `pcie`).
pub(crate) struct ControllerOptions {
    pub(crate) mode: Option<Mode>,
    pub(crate) write_back: bool,
    pub(crate) readahead: ReadAhead,
}

pub(crate) fn controller_options(
    params: &mut ControllerParams,
    opts: &[Opt],
) -> Result<ControllerOptions> {
    let mut o = ControllerOptions {
        mode: None,
        write_back: params.cache == "wb",
        readahead: ReadAhead::from_word(&params.readahead).unwrap_or(ReadAhead::Adaptive),
    };
    for opt in opts {
        let v = opt.value.as_str();
        match opt.key.as_str() {
            "cache" => {
                o.write_back = match v {
                    "wb" => true,
                    "wt" => false,
                    _ => return invalid(opt.col, format!("cache={v}: expected wb or wt")),
                }
            }
            "readahead" => {
                o.readahead = ReadAhead::from_word(v).ok_or_else(|| Error::Invalid {
                    col: opt.col,
                    msg: format!("readahead={v}: expected on, off or adaptive"),
                })?
            }
            "mode" => {
                o.mode = Some(Mode::from_word(v).ok_or_else(|| Error::Invalid {
                    col: opt.col,
                    msg: format!("mode={v}: expected raid, volume or jbod"),
                })?)
            }
            "cache_mb" => {
                params.cache_mb = v
                    .parse()
                    .ok()
                    .filter(|&mb: &u32| mb <= MAX_CACHE_MB)
                    .ok_or_else(|| Error::Invalid {
                        col: opt.col,
                        msg: format!(
                            "cache_mb={v}: expected MiB from 0 to {MAX_CACHE_MB} (1 TiB), e.g. 512"
                        ),
                    })?
            }
            "pcie" => (params.pcie_gen, params.pcie_lanes) = pcie(opt)?,
            "rebuild_rate" => {
                params.rebuild_rate_pct = Some(
                    v.trim_end_matches('%')
                        .parse()
                        .ok()
                        .filter(|r: &u32| crate::preset::REBUILD_RATE_PCT.contains(r))
                        .ok_or_else(|| Error::Invalid {
                            col: opt.col,
                            msg: format!(
                                "rebuild_rate={v}: expected a share of the controller from 1 to 100 (%), e.g. 30"
                            ),
                        })?,
                )
            }
            _ => {
                return unknown_key(
                    opt,
                    "a controller",
                    "cache, readahead, mode, cache_mb, pcie, rebuild_rate",
                )
            }
        }
    }
    Ok(o)
}

/// `pcie=GENxLANES`: (generation 1-5, lanes 1/2/4/8/16).
pub(crate) fn pcie(o: &Opt) -> Result<(u32, u32)> {
    let bad = || Error::Invalid {
        col: o.col,
        msg: format!("pcie={}: expected GENxLANES, e.g. 2x8", o.value),
    };
    let (g, l) = o.value.split_once('x').ok_or_else(bad)?;
    let g: u32 = g.parse().map_err(|_| bad())?;
    let l: u32 = l.parse().map_err(|_| bad())?;
    if !(1..=5).contains(&g) || ![1, 2, 4, 8, 16].contains(&l) {
        return Err(bad());
    }
    Ok((g, l))
}

/// A controller's mode: as asked, or `raid` when it holds an array and
/// `volume` otherwise; refused when it does not fit what the controller
/// holds.
pub(crate) fn controller_mode(
    name: &str,
    asked: Option<Mode>,
    kids: &[Node],
    col: usize,
) -> Result<Mode> {
    let has_array = kids.iter().any(|k| matches!(k, Node::Array(_)));
    let has_dev = kids.iter().any(|k| matches!(k, Node::Device(_)));
    let mode = asked.unwrap_or(if has_array { Mode::Raid } else { Mode::Volume });
    if mode == Mode::Raid && has_dev {
        return invalid(col, format!("{name} in raid mode holds bare devices: put them in an array, or use mode=volume or mode=jbod"));
    }
    if mode != Mode::Raid && has_array {
        return invalid(
            col,
            format!(
                "{name} in mode={} cannot run arrays; drop the mode option",
                mode.word()
            ),
        );
    }
    Ok(mode)
}

pub(crate) fn count_devices(nodes: &[Node]) -> usize {
    nodes
        .iter()
        .map(|n| match n {
            Node::Device(_) => 1,
            Node::Controller(c) => count_devices(&c.children),
            Node::Array(a) => count_devices(&a.members),
        })
        .sum()
}

/// Give arrays without an explicit stripe their implementation's default:
/// the controller's for hardware RAID, the host profile's (`impl`) for
/// software RAID.
pub(crate) fn default_stripes(n: &mut Node, ctrl_default: Option<u64>, host: &HostParams) {
    match n {
        Node::Device(_) => {}
        Node::Controller(c) => {
            let d = c.params.default_stripe_kb as u64 * 1024;
            c.children
                .iter_mut()
                .for_each(|x| default_stripes(x, Some(d), host));
        }
        Node::Array(a) => {
            if a.stripe == 0 {
                a.stripe = match (ctrl_default, &a.imp) {
                    (Some(d), _) => d,
                    (None, Some(imp)) => host.impls[imp.as_str()].default_stripe_kb as u64 * 1024,
                    (None, None) => unreachable!("a host array always has an impl"),
                };
            }
            a.members
                .iter_mut()
                .for_each(|x| default_stripes(x, ctrl_default, host));
        }
    }
}

/// Check every host software array against its implementation's profile
/// in host preset `profile`: the profile exists and takes the array's
/// level, member count and stripe unit, and the host's kernel has the md
/// features the array asks for.
pub(crate) fn check_impls(n: &Node, host: &HostParams, profile: &str) -> Result<()> {
    let Node::Array(a) = n else {
        if let Node::Controller(c) = n {
            for x in &c.children {
                check_impls(x, host, profile)?;
            }
        }
        return Ok(());
    };
    if let Some(name) = &a.imp {
        let Some(imp) = host.impls.get(name) else {
            return invalid(
                a.col,
                format!(
                    "impl={name}: host preset '{profile}' has no {name} profile (impls.{name})"
                ),
            );
        };
        check_impl(a, name, imp)?;
    }
    check_kernel(a, host)?;
    a.members
        .iter()
        .try_for_each(|m| check_impls(m, host, profile))
}

/// md features the host's kernel does not have yet are refused: stripe
/// workers before Linux 3.12, the Partial Parity Log before 4.12.
fn check_kernel(a: &Array, host: &HostParams) -> Result<()> {
    let k = host.kernel;
    let too_old = |what: &str, since: &str| {
        format!("{what} came in Linux {since}; this host runs {k} (set host[kernel=...] or a newer profile, e.g. host[profile=host2020](...))")
    };
    if a.group_threads > 0 && !k.md_raid5_workers() {
        return invalid(
            a.col,
            too_old("group_thread_cnt, md's stripe workers,", "3.12"),
        );
    }
    if a.ppl && !k.md_ppl() {
        return invalid(
            a.col,
            too_old("consistency=ppl, md's Partial Parity Log,", "4.12"),
        );
    }
    Ok(())
}

/// Array `a` within what implementation `name` builds.
pub(crate) fn check_impl(a: &Array, name: &str, imp: &SwImplParams) -> Result<()> {
    if !imp.levels.is_empty() && !imp.levels.iter().any(|l| l == a.level.word()) {
        return invalid(
            a.col,
            format!(
                "impl={name} builds {}, not {}",
                imp.levels.join(", "),
                a.level.word()
            ),
        );
    }
    let n = a.members.len();
    if imp.max_members != 0 && n > imp.max_members as usize {
        return invalid(
            a.col,
            format!(
                "impl={name} takes at most {} members, not {n}",
                imp.max_members
            ),
        );
    }
    let kb = a.stripe / 1024;
    if imp.max_stripe_kb != 0 && kb > u64::from(imp.max_stripe_kb) {
        return invalid(
            a.col,
            format!(
                "impl={name} takes stripes up to {}k, not {kb}k",
                imp.max_stripe_kb
            ),
        );
    }
    Ok(())
}

/// Apply `host[cores=..,ghz=..,kernel=..]` to the host profile.
/// `profile=NAME`: the host preset NAME in place of the default `host`
/// (its cores and clock may still be set by `cores=` and `ghz=`).
pub(crate) fn host_profile(
    host: &mut HostParams,
    opts: &[Opt],
    db: &PresetDb,
) -> Result<Option<String>> {
    let Some(o) = opts.iter().find(|o| o.key == "profile") else {
        return Ok(None);
    };
    match db.get(&o.value) {
        Some(Preset::Host(h)) => {
            *host = h.clone();
            Ok(Some(o.value.clone()))
        }
        _ => invalid(
            o.col,
            format!(
                "profile={}: not a host preset (see 'raidlab presets')",
                o.value
            ),
        ),
    }
}

pub(crate) fn host_options(host: &mut HostParams, opts: &[Opt]) -> Result<()> {
    for o in opts {
        match o.key.as_str() {
            "profile" => {}
            "cores" => {
                host.cores = o
                    .value
                    .parse()
                    .ok()
                    .filter(|&c: &u32| (1..=1024).contains(&c))
                    .ok_or_else(|| Error::Invalid {
                        col: o.col,
                        msg: format!("cores={}: expected 1..1024", o.value),
                    })?
            }
            "ghz" => {
                host.ghz = o
                    .value
                    .parse()
                    .ok()
                    .filter(|&g: &f64| g > 0.1 && g < 20.0)
                    .ok_or_else(|| Error::Invalid {
                        col: o.col,
                        msg: format!("ghz={}: expected a clock such as 3.0", o.value),
                    })?
            }
            "kernel" => {
                host.kernel = o
                    .value
                    .parse()
                    .map_err(|e: KernelParseError| Error::Invalid {
                        col: o.col,
                        msg: e.to_string(),
                    })?
            }
            _ => return unknown_key(o, "host", "profile, cores, ghz, kernel"),
        }
    }
    Ok(())
}

/// Parse and resolve an expression against presets.
pub fn resolve(expr: &str, db: &PresetDb) -> Result<Topology> {
    let ast = parse(expr)?;
    let Some(Preset::Host(default_host)) = db.get("host") else {
        return Err(Error::Preset("the 'host' preset is missing".into()));
    };
    let mut host = default_host.clone();
    let root = split_root(&ast)?;
    let mut profile = None;
    if let Some((opts, _)) = root.host {
        profile = host_profile(&mut host, opts, db)?;
        host_options(&mut host, opts)?;
    }
    let mut r = Resolver {
        db,
        counters: BTreeMap::new(),
        devices: 0,
    };
    let mut nodes = Vec::new();
    for inner in root.inners {
        nodes.extend(r.node(inner, None)?);
    }
    for n in &mut nodes {
        check_impls(n, &host, profile.as_deref().unwrap_or("host"))?;
        default_stripes(n, None, &host);
    }
    let root = nodes.remove(0);
    Ok(Topology {
        expr: without_comments(expr),
        host: Arc::new(host),
        host_profile: profile,
        root,
        more_roots: nodes,
    })
}
