//! Fuzzing the parsers with proptest: arbitrary strings and grammar-shaped
//! strings must give a value or a typed error, never a panic.

use proptest::prelude::*;
use raidlab_core::preset::PresetDb;
use raidlab_core::topology::{parse, resolve};
use raidlab_core::workload::jobfile_limits::MAX_LINE;
use raidlab_core::workload::{
    expand_includes, expand_keywords, job_streams, parse_job_file, parse_job_phases, substitute,
    Keywords, Region, Workload,
};

fn token() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("raid0".to_string()),
        Just("raid1".to_string()),
        Just("raid5".to_string()),
        Just("raid6".to_string()),
        Just("raid10".to_string()),
        Just("concat".to_string()),
        Just("host".to_string()),
        Just("x25e".to_string()),
        Just("s3500-80".to_string()),
        Just("hdd-sas10k".to_string()),
        Just("adaptec5085".to_string()),
        Just("hba".to_string()),
        Just("(".to_string()),
        Just(")".to_string()),
        Just("[".to_string()),
        Just("]".to_string()),
        Just(",".to_string()),
        Just("=".to_string()),
        Just("*".to_string()),
        Just(" ".to_string()),
        Just("#".to_string()),
        Just("\n".to_string()),
        Just("stripe".to_string()),
        Just("64k".to_string()),
        Just("mode".to_string()),
        Just("volume".to_string()),
        Just("op".to_string()),
        Just("20%".to_string()),
        Just("wc".to_string()),
        Just("queue_depth=".to_string()),
        Just("off".to_string()),
        Just("consistency=ppl".to_string()),
        Just("impl=vroc".to_string()),
        Just("host[profile=host2020]".to_string()),
        Just("host[kernel=".to_string()),
        Just("bitmap_device=".to_string()),
        Just("bitmap=external".to_string()),
        Just("group_thread_cnt=2".to_string()),
        "[0-9]{1,2}\\.[0-9]{1,3}(\\.[0-9]{0,4})?",
        "[0-9]{1,6}",
        "\\PC{0,3}",
    ]
}

fn wl_token() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("rw=randread".to_string()),
        Just("rw=".to_string()),
        Just("bs=".to_string()),
        Just("bssplit=4k/50:".to_string()),
        Just("bsrange=".to_string()),
        Just("bsrange=4k-".to_string()),
        Just("preset=heavy".to_string()),
        Just("random_distribution=zipf:".to_string()),
        Just("random_distribution=zoned:".to_string()),
        Just("random_distribution=zoned:50/50:".to_string()),
        Just("size=".to_string()),
        Just("offset=".to_string()),
        Just("offset_increment=".to_string()),
        Just("numjobs=".to_string()),
        Just("io_size=".to_string()),
        Just("loops=".to_string()),
        Just("filesize=".to_string()),
        Just("bs=4k,".to_string()),
        Just("runtime=".to_string()),
        Just("state=steady".to_string()),
        Just("iodepth_batch_submit=".to_string()),
        Just("iodepth_batch_complete_min=".to_string()),
        Just("iodepth_low=".to_string()),
        Just("rw=randrw:".to_string()),
        Just("rw=write:-".to_string()),
        Just("rw_sequencer=identical".to_string()),
        Just("seq_position=shared".to_string()),
        Just("zonemode=strided".to_string()),
        Just("zonesize=".to_string()),
        Just("zonerange=".to_string()),
        Just("zoneskip=".to_string()),
        Just("verify_backlog=".to_string()),
        Just("verify_backlog_batch=".to_string()),
        Just("latency_target=".to_string()),
        Just("latency_window=".to_string()),
        Just("latency_percentile=".to_string()),
        Just("ss=iops_slope:".to_string()),
        Just("ss=bw:".to_string()),
        Just("ss_dur=".to_string()),
        Just("ss_interval=".to_string()),
        Just("file_service_type=random:".to_string()),
        Just("file_service_type=".to_string()),
        Just(" ".to_string()),
        "[a-z_]{1,8}=[0-9a-z.:/%]{0,8}",
        "\\PC{0,4}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn topology_parser_never_panics(s in "\\PC{0,80}") {
        let _ = parse(&s);
        let _ = resolve(&s, &PresetDb::builtin());
    }

    #[test]
    fn grammar_shaped_expressions_never_panic(toks in proptest::collection::vec(token(), 0..40)) {
        let s: String = toks.concat();
        let db = PresetDb::builtin();
        if let Err(e) = resolve(&s, &db) {
            let m = e.to_string();
            prop_assert!(!m.contains('\n'), "one-line message: {}", m);
            prop_assert!(m.contains("column") || m.contains("preset"), "names the place: {}", m);
        }
    }

    #[test]
    fn workload_parser_never_panics(toks in proptest::collection::vec(wl_token(), 0..12)) {
        let s = toks.join(" ");
        if let Err(e) = Workload::parse(&s) {
            prop_assert!(!e.to_string().contains('\n'));
        }
    }

    /// Whatever offsets, sizes and job counts parse, every job's region
    /// lies inside the volume and holds the largest block, or the
    /// workload is refused with one line.
    #[test]
    fn regions_stay_inside_the_volume(
        offset in prop_oneof!["[0-9]{1,3}%", "[0-9]{1,4}[kmg]"],
        step in prop_oneof!["[0-9]{1,2}%", "[0-9]{1,4}[km]"],
        size in prop_oneof!["[0-9]{1,3}%", "[0-9]{1,4}[kmg]"],
        jobs in 1u32..40,
        bs in prop_oneof![Just("4k"), Just("64k"), Just("1m"), Just("4k,128k")],
        cap_sectors in 1u64..(1 << 33),
    ) {
        let text = format!("bs={bs} numjobs={jobs} offset={offset} offset_increment={step} size={size}");
        let Ok(w) = Workload::parse(&text) else { return Ok(()) };
        let cap = cap_sectors * 512;
        match w.regions(cap) {
            Ok(rs) => {
                prop_assert_eq!(rs.len(), jobs as usize);
                for r in rs {
                    prop_assert!(r.end() <= cap && r.span >= w.max_bs(), "{}: {:?} on {}", text, r, cap);
                }
            }
            Err(e) => prop_assert!(!e.to_string().contains('\n')),
        }
    }

    /// Whatever offset modifier a stream has, every I/O lies inside its
    /// job's region and a one-pass job ends, having moved no more than
    /// its pass.
    #[test]
    fn modified_streams_stay_inside_their_region_and_end(
        mode in prop_oneof![Just("read"), Just("write"), Just("rw"), Just("randread"), Just("randrw")],
        modifier in prop_oneof![Just(String::new()), "-?[0-9]{1,3}[k]".prop_map(|m| format!(":{m}")), "[1-9][0-9]?".prop_map(|m| format!(":{m}"))],
        extra in prop_oneof![Just(""), Just("rw_sequencer=identical"), Just("seq_position=shared"), Just("percentage_random=40"), Just("loops=3"), Just("verify_backlog=7"), Just("verify_backlog=5 verify_backlog_batch=2")],
        bs in prop_oneof![Just("4k"), Just("64k"), Just("4k,16k")],
        zones in prop_oneof![Just(None), (1u64..256, 4u64..512, 0u64..256).prop_map(Some)],
        start_blocks in 0u64..64,
        span_kb in 64u64..4096,
        seed in 0u64..1000,
    ) {
        let zone_keys = zones.map_or(String::new(), |(s, r, k)| format!("zonemode=strided zonesize={s}k zonerange={r}k zoneskip={k}k"));
        let text = format!("rw={mode}{modifier} bs={bs} {extra} {zone_keys}");
        let Ok(w) = Workload::parse(&text) else { return Ok(()) };
        let region = Region { start: start_blocks * 4096, span: span_kb * 1024 };
        let s = job_streams(&w, &[region], seed).remove(0);
        let (mut ios, mut bytes) = (0u64, 0u64);
        for io in s {
            prop_assert!(io.offset >= region.start && io.offset + io.len as u64 <= region.end(), "{}: {:?} outside {:?}", text, io, region);
            if let Some(z) = w.strided {
                // Inside a zone: zones start every range + skip bytes from
                // the region's start.
                let into = (io.offset - region.start) % (z.range + z.skip);
                prop_assert!(into + io.len as u64 <= z.range, "{}: {:?} outside its zone", text, io);
            }
            ios += 1;
            bytes += io.len as u64;
            prop_assert!(ios <= 1 << 20, "{}: a one-pass stream must end", text);
        }
        // verify_backlog's read-backs come on top of the pass's bytes, at
        // most one for each write.
        let most = w.pass_bytes(region.span) * if w.backlog.is_some() { 2 } else { 1 };
        prop_assert!(bytes <= most, "{}: {} bytes", text, bytes);
    }

    /// Sizes in a job file, under either kb_base, give a workload or one
    /// line saying what is wrong, never a panic; a whole size in one of
    /// fio's units reads as fio reads it.
    #[test]
    fn job_file_sizes_under_kb_base_never_panic(
        v in "(-?[0-9]{1,12}(\\.[0-9])?([kKmMgGtTpP]([iI]?[bB]?))?[,:/]?){1,4}|\\PC{0,12}",
        base in prop_oneof![Just("1000"), Just("1024")],
        key in prop_oneof![Just("bs"), Just("size"), Just("bssplit"), Just("offset"), Just("rw"), Just("rate")],
        n in 1u64..64,
    ) {
        let text = format!("[j]\nkb_base={base}\n{key}={v}\n");
        if let Err(e) = parse_job_file(&text) {
            prop_assert!(!e.to_string().contains('\n'), "{}", e);
        }
        let w = parse_job_file(&format!("[j]\nkb_base={base}\nsize={n}KiB\n")).unwrap();
        let unit: u64 = if base == "1000" { 1024 } else { 1000 };
        prop_assert_eq!(w.size, Some(n * unit));
    }

    #[test]
    fn job_file_parser_never_panics(s in "(\\[[a-z]{0,6}\\]\n|[a-z_]{1,10}(=[0-9a-z:/]{0,6})?\n|; \\PC{0,5}\n|\\PC{0,8}\n){0,10}") {
        let _ = parse_job_file(&s);
    }

    /// fio's keywords and arithmetic never panic, on any text: the text
    /// expanded line for line, or one line saying what is wrong.
    #[test]
    fn job_file_arithmetic_never_panics(
        text in "([a-z]{1,4}=(\\(|\\)|[0-9]{1,6}|[-+*/%^.]|\\$ncpus|\\$mb_memory|\\$pagesize|\\PC){0,24}\n){0,6}",
    ) {
        let k = Keywords {
            ncpus: Some(192),
            mb_memory: None,
            pagesize: Some(4096),
            whose: "the simulated host".into(),
        };
        match expand_keywords(&text, &k) {
            Ok(t) => prop_assert_eq!(t.lines().count(), text.lines().count()),
            Err(e) => prop_assert!(!e.to_string().contains('\n'), "{}", e),
        }
    }

    /// `${VAR}` substitution never panics, on any text and any values:
    /// the text, or one line naming the line grown past fio's bound.
    #[test]
    fn job_file_variables_never_panic(
        text in "(\\$|\\{|\\}|[a-z=\n]|\\PC){0,60}",
        value in "\\PC{0,20}",
        times in 0usize..600,
    ) {
        let v = value.repeat(times);
        match substitute(&text, &|_| Some(v.clone())) {
            Ok(t) => prop_assert!(t.lines().all(|l| l.len() <= MAX_LINE + 1)),
            Err(e) => prop_assert!(!e.to_string().contains('\n'), "{}", e),
        }
    }

    /// Job files of several sections, with and without `stonewall`: every
    /// section in a phase (its own, or beside the one before) in the order
    /// written, or one line saying what is wrong.
    #[test]
    fn job_file_phases_never_panic(
        secs in prop::collection::vec(
            ("(global|[a-z]{1,4})", any::<bool>(), "(rw=(read|randwrite|x)|bs=(4k|0)|iodepth=[0-9]{1,3}|stonewall=0|\\PC{0,6})"),
            0..8,
        ),
    ) {
        let text: String = secs
            .iter()
            .map(|(name, wall, opt)| {
                let wall = if *wall { "stonewall\n" } else { "" };
                format!("[{name}]\n{wall}{opt}\n")
            })
            .collect();
        match parse_job_phases(&text) {
            Ok(p) => {
                let jobs: Vec<&str> = secs
                    .iter()
                    .map(|(n, _, _)| n.as_str())
                    .filter(|n| *n != "global")
                    .collect();
                let parsed: Vec<String> = p
                    .iter()
                    .flat_map(|p| p.sections().map(|(n, _)| n.to_string()))
                    .collect();
                prop_assert_eq!(parsed, jobs, "{}", text);
            }
            Err(e) => prop_assert!(!e.to_string().contains('\n'), "{}", e),
        }
    }

    #[test]
    fn preset_loader_never_panics(s in "(\\[[a-z0-9-]{0,6}\\]\n|base = \"(x25e|hba|host|nope)\"\n|[a-z_]{1,12} = (-?[0-9]{1,4}|\"[a-z]{0,4}\"|true)\n|\\PC{0,8}\n){0,8}") {
        let mut db = PresetDb::builtin();
        let _ = db.load_str(&s);
    }

    /// Files that include one another in any pattern (themselves, in
    /// cycles, twice over, from outside a section) expand or are refused
    /// with a line naming the file, within the text bound, and what
    /// expands parses or is refused: never a panic or a hang.
    #[test]
    fn includes_expand_or_are_refused(
        files in prop::collection::vec(
            prop::collection::vec("(include f[0-3]|include=f[0-3]|include|\\[x\\]|bs=4k|rw=read|\\PC{0,6})", 0..5),
            4,
        ),
        top in prop::collection::vec("(\\[(a|global)\\]|include f[0-3]|rw=randread|\\PC{0,6})", 0..6),
    ) {
        let read = |_: &str, name: &str| -> raidlab_core::Result<(String, String)> {
            let i: usize = name.trim_start_matches('f').parse().map_err(|_| {
                raidlab_core::Error::Workload(format!("cannot read '{name}'"))
            })?;
            Ok((name.to_string(), files.get(i).map(|l| l.join("\n")).unwrap_or_default()))
        };
        match expand_includes(&top.join("\n"), "job.fio", &read) {
            Ok((text, origins)) => {
                prop_assert_eq!(origins.len(), text.lines().count());
                prop_assert!(text.len() <= 4 << 20);
                let _ = parse_job_phases(&text);
            }
            Err(e) => prop_assert!(e.to_string().contains(" line ") || e.to_string().contains("cannot read"), "{}", e),
        }
    }
}
