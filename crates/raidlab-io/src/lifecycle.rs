//! An array's life around a run: members checked, created and opened,
//! superblocks assembled, a dirty array resynchronised, spares rebuilt,
//! the arrays marked active before writes and clean after them.

use crate::backend::{self, MemberCounters, Members};
use crate::error::{Error, ErrorKind};
use crate::options::RunOptions;
use crate::safety::{self, Access, Guard};
use crate::topo::{RealNode, RealTopology};
use crate::{exec, intent, md, meta, rebuild, resync, verify};
use raidlab_core::result::ArrayMeta;
use raidlab_layout::{ArrayLayout, Level};
use std::fs::{File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;

/// Member size each leaf needs for the volume to hold `span` bytes: its
/// share of the data, plus md's data offset for a member of an array.
pub(crate) fn needed_leaf_size(n: &RealNode, span: u64, out: &mut Vec<(usize, u64)>) {
    match n {
        RealNode::Array {
            level,
            chunk,
            layout,
            children,
            spares,
            ..
        } => {
            let k = children.len() as u64;
            let per = match level {
                // Far and offset copies: the rows of a RAID 0, twice.
                Level::Raid10 if *layout != ArrayLayout::Near2 => {
                    2 * span.div_ceil(k * chunk) * chunk
                }
                Level::Raid0 => span.div_ceil(k * chunk) * chunk,
                Level::Raid4 | Level::Raid5 => span.div_ceil((k - 1) * chunk) * chunk,
                Level::Raid6 => span.div_ceil((k - 2) * chunk) * chunk,
                Level::Raid10 => (span * 2).div_ceil(k * chunk) * chunk + chunk,
                Level::Raid1 => span.next_multiple_of(512),
                Level::Concat => span.div_ceil(k).next_multiple_of(512),
            };
            let md_chunk = md::md_chunk(*level, *chunk);
            for c in children.iter().chain(spares) {
                match c {
                    RealNode::Member(i) => out.push((*i, md::device_for_data(per, md_chunk))),
                    _ => needed_leaf_size(c, per, out),
                }
            }
        }
        RealNode::Member(i) => out.push((*i, span)),
        RealNode::Missing => {}
    }
}

pub(crate) fn device_size(f: &File) -> std::io::Result<u64> {
    use std::io::{Seek, SeekFrom};
    let mut f = f;
    f.seek(SeekFrom::End(0))
}

/// How a command opens its members: for reading or writing, O_DIRECT
/// where the file system allows it, under the safety rules or forced.
#[derive(Debug, Clone, Copy)]
pub(crate) struct OpenMode {
    pub(crate) access: Access,
    pub(crate) direct: bool,
    pub(crate) guard: Guard,
}

impl OpenMode {
    /// Writing through the page cache under `guard`: how the maintenance
    /// commands (create, rebuild) open members.
    pub(crate) fn writing(guard: Guard) -> Self {
        OpenMode {
            access: Access::Write,
            direct: false,
            guard,
        }
    }
}

/// Open one member as `mode` says: the file, and whether it is direct.
pub(crate) fn open_member(path: &std::path::Path, mode: OpenMode) -> std::io::Result<(File, bool)> {
    let writes = mode.access.writes();
    let mut o = OpenOptions::new();
    o.read(true).write(writes);
    // A block device written to is opened exclusively (O_EXCL) unless
    // `--force`: the open fails while it is mounted, held by md or device
    // mapper, or open exclusively elsewhere, and nothing else can claim it
    // during the run.
    let excl = if mode.guard == Guard::Checked && writes && is_block_device(path) {
        libc::O_EXCL
    } else {
        0
    };
    o.custom_flags(excl);
    if mode.direct {
        let mut od = o.clone();
        od.custom_flags(libc::O_DIRECT | excl);
        match od.open(path) {
            Ok(f) => return Ok((f, true)),
            // The file system does not do direct I/O (tmpfs): buffered it is.
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {}
            Err(e) => return Err(e),
        }
    }
    Ok((o.open(path)?, false))
}

pub(crate) fn is_block_device(path: &std::path::Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::metadata(path).is_ok_and(|m| m.file_type().is_block_device())
}

/// The root array's live write-intent bitmap, when it has one.
pub(crate) fn intent_for(
    asm: &meta::Assembly,
    vol: &exec::Vol,
    events: u64,
) -> Option<intent::Intent> {
    match (&asm.bitmap, &vol.nodes[0]) {
        (Some(bm), exec::VNode::Array { geo, .. }) => Some(intent::Intent::new(
            geo.clone(),
            bm.chunk,
            asm.root_uuid,
            events,
            asm.leaves.iter().map(|l| l.member).collect(),
        )),
        _ => None,
    }
}

/// What a run did to its arrays' metadata.
pub(crate) struct Life {
    /// md's event count on the members now.
    pub(crate) events: u64,
    /// Bytes resynchronised before the workload.
    pub(crate) resynced: u64,
    /// Bytes rebuilt onto spares.
    pub(crate) spare_bytes: u64,
    /// Bytes of each member its array uses.
    pub(crate) used: Vec<u64>,
}

/// Check and create the members, assemble their arrays and load the
/// verify state; a refused run leaves no member files it created.
pub(crate) fn open_run(
    topo: &RealTopology,
    needed: Option<u64>,
    access: Access,
    opts: &RunOptions,
) -> Result<(Arrays, Vec<Option<safety::Kind>>, verify::Generations), Error> {
    // Creating arrays writes their metadata, even in a read run.
    let prepare = Access::from_writes(access.writes() || opts.create);
    let (kinds, made) = prepare_members(topo, needed, prepare, opts.guard())?;
    let opened = check_aliases(topo)
        .and_then(|()| assemble_arrays(topo, access, opts))
        .and_then(|a| Ok((load_verify_state(opts, &a.asm)?, a)));
    match opened {
        Ok((gens, arrays)) => Ok((arrays, kinds, gens)),
        Err(e) => {
            // Nothing was written yet.
            for &i in &made {
                let _ = std::fs::remove_file(&topo.members[i].path);
            }
            Err(e)
        }
    }
}

/// Before the workload: resynchronise an array not stopped cleanly,
/// rebuild spares that took missing members' places, and mark the arrays
/// active (md does before its first write: a crash from then on leaves
/// them to be resynced). A read run that creates its arrays writes them
/// clean.
pub(crate) fn mark_active(
    topo: &RealTopology,
    members: &mut Members,
    vol: &exec::Vol,
    asm: &meta::Assembly,
    sizes: &[u64],
    access: Access,
    opts: &RunOptions,
) -> Result<Life, Error> {
    let writes = access.writes();
    let (resynced, mut events) = resync_if_dirty(topo, members, vol, asm, opts)?;
    let spare_bytes = rebuild_spares(topo, members, vol, asm)?;
    let used = vol.member_use(sizes.len());
    if asm.has_metadata() && (writes || asm.created) {
        events += 1;
        asm.write(&members.files, sizes, &used, events, !writes, &[])
            .map_err(|e| Error::io("writing metadata", e))?;
    }
    Ok(Life {
        events,
        resynced,
        spare_bytes,
        used,
    })
}

/// After the workload: every write completed, so once the data is durable
/// the arrays are clean again (members that failed keep their old
/// superblocks); spares then take failed members' places.
pub(crate) fn mark_clean(
    topo: &mut RealTopology,
    members: &Members,
    asm: &meta::Assembly,
    sizes: &[u64],
    life: &mut Life,
) -> Result<(), Error> {
    life.events += 1;
    let failed = failed_members(members);
    for (f, _) in members.files.iter().zip(&failed).filter(|(_, &d)| !d) {
        f.sync_data()
            .map_err(|e| Error::io("flushing members", e))?;
    }
    asm.write(
        &members.files,
        sizes,
        &life.used,
        life.events,
        true,
        &failed,
    )
    .map_err(|e| Error::io("writing metadata", e))?;
    if let Some((after, bytes, ev)) = spares_for_failed(topo, members, sizes, &failed, life.events)?
    {
        *topo = after;
        life.spare_bytes += bytes;
        life.events = ev;
    }
    Ok(())
}

/// A run's generation nonce: its epoch in the high half (seconds since
/// 1970, past every epoch a loaded verify state holds, so later runs write
/// larger generations); writes number themselves in the low half.
pub(crate) fn run_nonce(gens: &verify::Generations) -> u64 {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_secs());
    secs.max(gens.max_epoch() + 1).clamp(1, u32::MAX as u64) << 32
}

/// The result's account of the arrays' metadata, when there is an array.
pub(crate) fn array_meta(
    topo: &RealTopology,
    asm: &meta::Assembly,
    life: &Life,
) -> Option<ArrayMeta> {
    asm.has_metadata().then(|| ArrayMeta {
        uuid: md::uuid_text(&asm.root_uuid),
        created: asm.created,
        events: life.events,
        resynced_bytes: life.resynced,
        took_over: topo
            .took_over
            .iter()
            .map(|t| {
                format!(
                    "{} took slot {} of the array at column {} ({} bytes rebuilt)",
                    topo.members[t.member].path.display(),
                    t.slot + 1,
                    t.col,
                    life.spare_bytes
                )
            })
            .collect(),
        topology: (!topo.took_over.is_empty()).then(|| topo.expression()),
    })
}

/// Check every member against the safety rules and create the member files
/// that do not exist, at the size the workload needs. Returns each member's
/// kind and the members it created.
pub(crate) fn prepare_members(
    topo: &RealTopology,
    bytes_needed: Option<u64>,
    access: Access,
    guard: Guard,
) -> Result<(Vec<Option<safety::Kind>>, Vec<usize>), Error> {
    let mut made = Vec::new();
    let mut kinds = Vec::new();
    for m in &topo.members {
        kinds.push(safety::check(&m.path, access, guard)?);
    }
    let mut needed = Vec::new();
    if let Some(span) = bytes_needed {
        needed_leaf_size(&topo.root, span, &mut needed);
    }
    for (i, m) in topo.members.iter().enumerate() {
        if kinds[i].is_some() {
            continue;
        }
        if m.path.exists() {
            // Another name for it (an alias) created it a moment ago;
            // `check_aliases` refuses the pair.
            kinds[i] = Some(safety::Kind::File);
            continue;
        }
        if !access.writes() {
            // A read run has nothing to read from a file it would create
            // blank: a path that does not exist is a mistake (a misspelt
            // member), not a member to make.
            return Err(Error::new(
                ErrorKind::Refused,
                format!(
                    "{} does not exist: a read-only run does not create members (check the path, or write first)",
                    m.path.display()
                ),
            ));
        }
        let size = m
            .size
            .or_else(|| needed.iter().find(|(j, _)| *j == i).map(|(_, s)| *s))
            .ok_or_else(|| {
                Error::new(ErrorKind::Size, format!(
                    "{} does not exist: give the workload a size= (or the member [size=...]) so raidlab can create it",
                    m.path.display()
                ))
            })?;
        create_file(&m.path, size)?;
        kinds[i] = Some(safety::Kind::File);
        made.push(i);
    }
    Ok((kinds, made))
}

/// `create`'s work; `made` collects the member files it creates.
pub(crate) fn create_made<'t>(
    topo: &'t RealTopology,
    assume_clean: bool,
    guard: Guard,
    made: &mut Vec<&'t std::path::Path>,
) -> Result<CreateReport, Error> {
    for m in &topo.members {
        if safety::check(&m.path, Access::Write, guard)?.is_none() {
            let size = m.size.ok_or_else(|| {
                Error::new(
                    ErrorKind::Size,
                    format!(
                        "{} does not exist: give it a [size=...] to create it",
                        m.path.display()
                    ),
                )
            })?;
            create_file(&m.path, size)?;
            made.push(&m.path);
        }
    }
    check_aliases(topo)?;
    let (members, sizes, _) = open_members(topo, OpenMode::writing(guard))?;
    let asm = meta::assemble(topo, &members.files, &sizes, meta::Intent::Create)?;
    needs_array(&asm, "create")?;
    let vol = exec::Vol::build(&topo.root, &data_areas(&sizes, &asm), &asm.offsets)?;
    let used = vol.member_use(sizes.len());
    let write = |a: &meta::Assembly, events, clean| {
        a.write(
            &members.files,
            &sizes,
            &used,
            events,
            clean,
            &failed_members(&members),
        )
        .map_err(|e| Error::io("writing metadata", e))
    };
    let mut resynced = 0;
    if assume_clean {
        write(&asm, 1, true)?;
    } else {
        // Active, and without a bitmap, until the resync is done: a crash
        // midway resyncs the whole array again.
        let mut pending = asm.clone();
        pending.bitmap = None;
        write(&pending, 1, false)?;
        resynced =
            resync::resync(&vol, &members, None).map_err(|e| Error::io("initial resync", e))?;
        write(&asm, 2, true)?;
    }
    Ok(CreateReport {
        uuid: md::uuid_text(&asm.root_uuid),
        members: topo
            .members
            .iter()
            .map(|m| m.path.display().to_string())
            .collect(),
        capacity: vol.capacity,
        resynced_bytes: resynced,
    })
}

/// Check every member of a rebuild against the safety rules (it writes),
/// and create the replacement files that do not exist, at the size of the
/// largest member.
pub(crate) fn create_replacements(topo: &RealTopology, guard: Guard) -> Result<(), Error> {
    let mut absent = Vec::new();
    for m in &topo.members {
        if safety::check(&m.path, Access::Write, guard)?.is_none() {
            absent.push(&m.path);
        }
    }
    let size = topo
        .members
        .iter()
        .filter_map(|m| std::fs::metadata(&m.path).ok().map(|md| md.len()))
        .max()
        .unwrap_or(0);
    for p in absent {
        create_file(p, size)?;
    }
    Ok(())
}

/// Rebuild the hot spares that took missing members' places, before the
/// workload (md starts the recovery at once; here the run waits for it).
/// Returns the bytes written.
pub(crate) fn rebuild_spares(
    topo: &RealTopology,
    members: &Members,
    vol: &exec::Vol,
    asm: &meta::Assembly,
) -> Result<u64, Error> {
    if asm.rebuild.is_empty() {
        return Ok(0);
    }
    debug_assert!(
        !topo.took_over.is_empty(),
        "only spares are rebuilt by a run"
    );
    let pace = rebuild::Pace {
        max_rate: None,
        progress: &|_, _| {},
    };
    rebuild::rebuild(vol, members, &asm.rebuild, &pace, &rebuild::Resume::none())
        .map_err(|e| Error::io("rebuilding onto a spare", e))
}

/// After a run in which members failed: hot spares of their arrays take
/// their places and are rebuilt there (md starts this recovery when the
/// member fails; here it follows the workload). Returns the topology as it
/// now stands, the bytes rebuilt and the members' event count, or `None`
/// when no spare could take a failed member's place.
pub(crate) fn spares_for_failed(
    topo: &RealTopology,
    members: &Members,
    sizes: &[u64],
    failed: &[bool],
    events: u64,
) -> Result<Option<(RealTopology, u64, u64)>, Error> {
    let dead: Vec<usize> = (0..failed.len()).filter(|&m| failed[m]).collect();
    if dead.is_empty() {
        return Ok(None);
    }
    let mut after = topo.clone();
    after.fail_members(&dead);
    let before = after.took_over.len();
    let moved = after.root.take_spares();
    if moved.is_empty() {
        return Ok(None);
    }
    after.took_over.truncate(before);
    after.took_over.extend(moved);
    let asm = meta::assemble(&after, &members.files, sizes, meta::Intent::Assemble)?;
    let vol = exec::Vol::build(&after.root, &data_areas(sizes, &asm), &asm.offsets)?;
    let bytes = rebuild_spares(&after, members, &vol, &asm)?;
    asm.write(
        &members.files,
        sizes,
        &vol.member_use(sizes.len()),
        events + 1,
        true,
        failed,
    )
    .map_err(|e| Error::io("writing metadata", e))?;
    Ok(Some((after, bytes, events + 1)))
}

/// The generations a verified run starts from: what `--verify-state`
/// recorded for this volume (its root array's UUID; zeros for a lone
/// path), or none.
pub(crate) fn load_verify_state(
    opts: &RunOptions,
    asm: &meta::Assembly,
) -> Result<verify::Generations, Error> {
    let gens = verify::Generations::default();
    if let (true, Some(p)) = (opts.verify, &opts.verify_state) {
        if p.exists() {
            gens.load(p, &asm.root_uuid).map_err(|e| {
                Error::new(
                    ErrorKind::Refused,
                    format!("verify state {}: {e}", p.display()),
                )
            })?;
        }
    }
    Ok(gens)
}

/// Create a member file of `size` bytes (sparse), refusing to touch one
/// that appeared meanwhile.
pub(crate) fn create_file(path: &std::path::Path, size: u64) -> Result<(), Error> {
    let f =
        File::create_new(path).map_err(|e| Error::io(format!("creating {}", path.display()), e))?;
    f.set_len(size).map_err(|e| {
        // It was made here: a file that cannot have its size goes again.
        let _ = std::fs::remove_file(path);
        let kind = match e.raw_os_error() {
            Some(libc::EFBIG | libc::ENOSPC | libc::EINVAL) => ErrorKind::Size,
            _ => ErrorKind::Io,
        };
        Error::new(
            kind,
            format!("creating {} at {size} bytes: {e}", path.display()),
        )
    })
}

/// Refuse a command that needs an array (`what` it would do) on a lone
/// path.
pub(crate) fn needs_array(asm: &meta::Assembly, what: &str) -> Result<(), Error> {
    if asm.has_metadata() {
        return Ok(());
    }
    Err(Error::new(
        ErrorKind::Expression,
        format!("a lone path is no array: there is nothing to {what}"),
    ))
}

/// Open members, their arrays assembled (or created) and compiled.
pub(crate) struct Arrays {
    pub(crate) members: Members,
    /// Device sizes.
    pub(crate) sizes: Vec<u64>,
    pub(crate) all_direct: bool,
    pub(crate) asm: meta::Assembly,
    pub(crate) vol: exec::Vol,
}

/// Open the members, read their superblocks and compile the volume over
/// their data areas. A read run whose arrays need a resync opens its
/// members for writing.
pub(crate) fn assemble_arrays(
    topo: &RealTopology,
    access: Access,
    opts: &RunOptions,
) -> Result<Arrays, Error> {
    let writes = access.writes();
    let mode = OpenMode {
        access,
        direct: opts.direct,
        guard: opts.guard(),
    };
    let (members, sizes, all_direct) = open_members(topo, mode)?;
    let intent = if opts.create {
        meta::Intent::Create
    } else {
        meta::Intent::Assemble
    };
    let asm = meta::assemble(topo, &members.files, &sizes, intent)?;
    // A read-only run over bare members (no metadata anywhere) reads them
    // as they are, from their first byte, writing nothing: it creates no
    // array unless asked (--create).
    let asm = if asm.created && !writes && !opts.create {
        asm.bare()
    } else {
        asm
    };
    if (asm.dirty || asm.created) && !writes {
        // Resyncing and creating write: reopen for it.
        return assemble_arrays(topo, Access::Write, opts);
    }
    let vol = exec::Vol::build(&topo.root, &data_areas(&sizes, &asm), &asm.offsets)?;
    Ok(Arrays {
        members,
        sizes,
        all_direct,
        asm,
        vol,
    })
}

/// Which members have failed so far (an I/O error during the run or a
/// resync).
pub(crate) fn failed_members(members: &Members) -> Vec<bool> {
    (0..members.files.len())
        .map(|m| members.health.is_dead(m))
        .collect()
}

/// The bytes of data each member holds for the volume: from its data
/// offset to its end, or to what its superblock records its array using of
/// it (md keeps an array's recorded size when members grow).
pub(crate) fn data_areas(sizes: &[u64], asm: &meta::Assembly) -> Vec<u64> {
    sizes
        .iter()
        .zip(&asm.offsets)
        .enumerate()
        .map(|(m, (s, o))| match asm.recorded.get(m) {
            Some(&r) if r > 0 => r.min(s - o),
            _ => s - o,
        })
        .collect()
}

/// Resynchronise arrays whose superblocks say they were not stopped
/// cleanly, then mark them clean (returns the bytes rewritten and the event
/// count now on the members); a dirty array with a member missing is
/// refused (its parity may not match its data) unless `--force`.
pub(crate) fn resync_if_dirty(
    topo: &RealTopology,
    members: &mut Members,
    vol: &exec::Vol,
    asm: &meta::Assembly,
    opts: &RunOptions,
) -> Result<(u64, u64), Error> {
    if !asm.dirty {
        return Ok((0, asm.events));
    }
    if topo.root.has_missing() || !asm.rebuild.is_empty() {
        if opts.force {
            return Ok((0, asm.events));
        }
        return Err(Error::new(
            ErrorKind::Refused,
            "the array was not stopped cleanly and a member is missing: its parity or copies may not match its data (the write hole), so a lost member could be rebuilt wrong. Run it once with every member to resynchronise it, or --force to use it as it is".to_string(),
        ));
    }
    let bytes = resync::resync(vol, members, asm.bitmap.as_ref())
        .map_err(|e| Error::io("resynchronising", e))?;
    let sizes: Vec<u64> = members
        .files
        .iter()
        .map(device_size)
        .collect::<std::io::Result<_>>()
        .map_err(|e| Error::io("member size", e))?;
    // A member that failed during the resync keeps its old superblock and
    // its slot is marked faulty, as after a run.
    asm.write(
        &members.files,
        &sizes,
        &vol.member_use(sizes.len()),
        asm.events + 1,
        true,
        &failed_members(members),
    )
    .map_err(|e| Error::io("writing metadata", e))?;
    // The run's own figures start after the resync.
    members.counters = members
        .counters
        .iter()
        .map(|_| MemberCounters::default())
        .collect();
    Ok((bytes, asm.events + 1))
}

/// Refuse two members that are one file or device under different names
/// (`a.img` and `$PWD/a.img`, a hard link, a symlink, a loop device and its
/// backing file): the array would write one member's data over another's.
pub(crate) fn check_aliases(topo: &RealTopology) -> Result<(), Error> {
    let mut seen: Vec<((u64, u64), usize)> = Vec::new();
    for (i, m) in topo.members.iter().enumerate() {
        let ids = safety::identity(&m.path).map_err(|e| Error::io(m.path.display(), e))?;
        for id in ids {
            if let Some(&(_, j)) = seen.iter().find(|(s, _)| *s == id) {
                return Err(Error::new(
                    ErrorKind::Expression,
                    format!(
                        "'{}' (column {}) and '{}' (column {}) are the same file or device: a member can appear once",
                        topo.members[j].path.display(),
                        topo.members[j].col,
                        m.path.display(),
                        m.col
                    ),
                ));
            }
            seen.push((id, i));
        }
    }
    Ok(())
}

/// Open every member as `mode` says (O_DIRECT when asked and the file
/// system allows it; block devices written to exclusively under the
/// safety rules): the members, their sizes, and whether all are direct.
pub(crate) fn open_members(
    topo: &RealTopology,
    mode: OpenMode,
) -> Result<(Members, Vec<u64>, bool), Error> {
    let mut files = Vec::new();
    let mut sizes = Vec::new();
    let mut all_direct = true;
    for m in &topo.members {
        let (f, d) = open_member(&m.path, mode)
            .map_err(|e| Error::io(format!("opening {}", m.path.display()), e))?;
        all_direct &= d;
        sizes.push(
            device_size(&f).map_err(|e| Error::io(format!("size of {}", m.path.display()), e))?,
        );
        files.push(f);
    }
    let members = Members {
        files,
        paths: topo
            .members
            .iter()
            .map(|m| m.path.display().to_string())
            .collect(),
        counters: topo
            .members
            .iter()
            .map(|_| MemberCounters::default())
            .collect(),
        health: backend::Health::new(topo.members.iter().map(|m| m.fault.clone()).collect()),
    };
    Ok((members, sizes, all_direct))
}

/// What `create` did.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct CreateReport {
    /// UUID of the root array.
    pub uuid: String,
    /// The members, in expression order.
    pub members: Vec<String>,
    /// Bytes of the volume.
    pub capacity: u64,
    /// Bytes rewritten by the initial resync (0 with `assume_clean`).
    pub resynced_bytes: u64,
}
