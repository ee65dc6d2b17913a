//! Fuzzing the report parsers with proptest: `--vary` values, templates,
//! `--shard`, results tables and sweep slices give a value or a typed error,
//! never a panic; and a sweep's own output always merges back to itself.

use proptest::prelude::*;
use raidlab_report::plot::Table;
use raidlab_report::sweep::{merge, parse_shard, placeholders, Sweep, Vary};

fn vary_like() -> impl Strategy<Value = String> {
    let tok = prop_oneof![
        Just("bs".to_string()),
        Just("=".to_string()),
        Just("..".to_string()),
        Just(",".to_string()),
        Just("|".to_string()),
        Just("*".to_string()),
        Just(":".to_string()),
        Just("4k".to_string()),
        Just("0".to_string()),
        Just("1".to_string()),
        Just("18446744073709551615".to_string()),
        Just("99999999999".to_string()),
        Just("1m".to_string()),
        Just(" ".to_string()),
        "[a-z0-9]{1,3}",
    ];
    prop::collection::vec(tok, 0..10).prop_map(|v| v.concat())
}

fn csv_like() -> impl Strategy<Value = String> {
    let tok = prop_oneof![
        Just("run".to_string()),
        Just(",".to_string()),
        Just("\"".to_string()),
        Just("\n".to_string()),
        Just("0".to_string()),
        Just("1".to_string()),
        Just("x".to_string()),
        Just("{".to_string()),
        Just("}".to_string()),
        Just("\"rows\":".to_string()),
        Just("\"columns\":".to_string()),
        Just("\"sweep\":{}".to_string()),
        Just("[".to_string()),
        Just("]".to_string()),
    ];
    prop::collection::vec(tok, 0..24).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn vary_and_shard_never_panic(s in vary_like(), t in ".{0,40}") {
        if let Ok(v) = Vary::parse(&s) {
            prop_assert!(!v.values.is_empty());
            prop_assert!(v.values.len() <= raidlab_report::sweep::MAX_RUNS);
        }
        let _ = Vary::parse(&t);
        let _ = parse_shard(&t);
        let _ = placeholders(&t);
        let _ = placeholders(&s.replace('=', "{").replace(',', "}"));
    }

    #[test]
    fn tables_and_slices_never_panic(a in csv_like(), b in csv_like(), c in ".{0,60}") {
        let _ = Table::parse(&a);
        let _ = Table::parse(&c);
        let _ = merge(&[("a".into(), a.clone()), ("b".into(), b)]);
        let _ = merge(&[("c".into(), c)]);
        let _ = merge(&[("a".into(), a)]);
    }

    #[test]
    fn shards_of_any_sweep_merge_to_the_whole(
        sizes in prop::collection::vec(1usize..4, 1..4),
        n in 1usize..6,
    ) {
        let vary: Vec<Vary> = sizes
            .iter()
            .enumerate()
            .map(|(i, &k)| Vary {
                name: format!("v{i}"),
                values: (0..k).map(|j| format!("{j}")).collect(),
            })
            .collect();
        let topology = vary.iter().map(|v| format!("{{{}}}", v.name)).collect::<Vec<_>>().join("-");
        let sweep = Sweep { topology, workload: "rw=read".into(), vary, engine: "sim".into(), seed: 1 };
        sweep.check().unwrap();
        let width = raidlab_report::sweep::columns(&sweep).len();
        let fake = |runs: &[raidlab_report::sweep::Run]| -> Vec<Vec<serde_json::Value>> {
            runs.iter()
                .map(|r| {
                    let mut v = vec![serde_json::json!(r.index)];
                    v.resize(width, serde_json::Value::Null);
                    v
                })
                .collect()
        };
        let all = sweep.runs(None);
        let whole = raidlab_report::sweep::to_csv(&sweep, &fake(&all));
        let slices: Vec<(String, String)> = (1..=n)
            .map(|i| {
                let r = sweep.runs(Some((i, n)));
                (format!("s{i}"), raidlab_report::sweep::to_csv(&sweep, &fake(&r)))
            })
            .collect();
        // Empty slices (more shards than runs) carry only the header.
        prop_assert_eq!(merge(&slices).unwrap(), whole);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Any numbers a results file may hold draw (or are refused), never panic.
    #[test]
    fn charts_of_any_numbers_draw(
        xs in prop::collection::vec(prop_oneof![Just(0.0), Just(1e-300), Just(1e300), -1e6f64..1e6], 1..12),
        ys in prop::collection::vec(prop_oneof![Just(0.0), Just(-0.0), Just(1e-300), Just(1e300), -1e9f64..1e9], 12),
        cats in any::<bool>(),
        log_x in any::<bool>(),
        log_y in any::<bool>(),
    ) {
        let mut csv = String::from("x,y,s\n");
        for (i, x) in xs.iter().enumerate() {
            let x = if cats { format!("c{}", i % 5) } else { format!("{x}") };
            csv += &format!("{x},{},{}\n", ys[i], i % 3);
        }
        let t = Table::parse(&csv).unwrap();
        let spec = raidlab_report::plot::PlotSpec {
            x: "x".into(),
            y: "y".into(),
            series: Some("s".into()),
            filters: vec![],
            kind: None,
            log_x,
            log_y,
            title: None,
        };
        if let Ok(c) = raidlab_report::plot::chart(&t, &spec) {
            let _ = c.svg();
        }
    }
}
