//! The main job (`rawarray-demo`: `cargo run --release -p rawarray-demo`) as its users meet it:
//! numpy reads its record file and parameters, and the two lines of Python it prints (shown
//! word for word in the README) read its records by field name. Workspace tests: they need the
//! demo and numpy.

mod common;

#[allow(dead_code)]
#[path = "../rawarray-demo/src/main.rs"]
mod simulation;

use std::fs;
use std::path::Path;

use rawarray_serde::{Element, RecordReader};
use serde_json::{json, Value};

#[test]
#[cfg_attr(skip_python, ignore = "RAWARRAY_SKIP_PYTHON=1: numpy interop skipped")]
fn numpy_reads_the_simulation() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nbody.ra");
    let params = simulation::Params {
        particles: 8,
        steps: 60,
        flush_every: 7,
        ..Default::default()
    };
    simulation::run(&path, &params).unwrap();

    // The truth: the same deterministic simulation, kept in memory.
    let truth = simulation::all_records(&params);
    assert_eq!(truth.len(), 8 * 61);
    let picks = [0, 1, 7, 8, 250, truth.len() - 1];
    let picks_arg = picks.map(|i| i.to_string()).join(",");
    let out = common::python("read_simulation.py", &[&path, &picks_arg]);
    let out: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(out["records"], truth.len());
    assert_eq!(out["params"], serde_json::to_value(&params).unwrap());
    for (k, &i) in picks.iter().enumerate() {
        let (got, want) = (&out["picked"][k], &truth[i]);
        assert_eq!(got["step"], want.step, "record {i}");
        assert_eq!(got["time"], want.time, "record {i}");
        assert_eq!(got["id"], want.id, "record {i}");
        assert_eq!(got["position"], json!(want.position), "record {i}");
        assert_eq!(got["velocity"], json!(want.velocity), "record {i}");
        assert_eq!(got["energy"], want.energy, "record {i}");
    }
    // numpy's per-step energy sums (pairwise summation) against ours (in order).
    let sums = out["energy_by_step"].as_array().unwrap();
    assert_eq!(sums.len(), 61);
    for (s, got) in sums.iter().enumerate() {
        let want: f64 = truth[s * 8..(s + 1) * 8].iter().map(|b| b.energy).sum();
        let got = got.as_f64().unwrap();
        assert!(
            (got - want).abs() <= 1e-12 * want.abs(),
            "step {s}: {got} vs {want}"
        );
    }
}

/// The two lines of Python the main job prints read its records by field name and its
/// parameters: run as printed (plus a line of ours that dumps what they read) and compared
/// with the simulation kept in memory.
#[test]
#[cfg_attr(skip_python, ignore = "RAWARRAY_SKIP_PYTHON=1: numpy interop skipped")]
fn the_main_jobs_python_lines_read_its_records() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nbody.ra");
    let params = simulation::Params {
        particles: 5,
        steps: 30,
        flush_every: 4,
        ..Default::default()
    };
    simulation::run(&path, &params).unwrap();
    let r = RecordReader::<simulation::Body>::open(&path).unwrap();
    let descr = simulation::Body::layout().numpy_descr();
    let lines = simulation::python_lines(&path, r.header().encoded_len(), r.len(), &descr);
    assert_eq!(lines.lines().count(), 2, "{lines}");
    let script = dir.path().join("read.py");
    fs::write(
        &script,
        format!(
            "{lines}\nprint(json.dumps({{\"params\": params, \"id\": bodies[\"id\"].tolist(), \
             \"energy\": bodies[\"energy\"].tolist()}}))\n"
        ),
    )
    .unwrap();
    let out = common::python::run_script(&script, &[]);
    let got: Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();

    let truth = simulation::all_records(&params);
    assert_eq!(got["params"], serde_json::to_value(&params).unwrap());
    assert_eq!(
        got["id"],
        json!(truth.iter().map(|b| b.id).collect::<Vec<_>>())
    );
    assert_eq!(
        got["energy"],
        json!(truth.iter().map(|b| b.energy).collect::<Vec<_>>())
    );
}

/// The Rust guide shows the lines the default run prints for `/tmp/nbody.ra`, word for word.
#[test]
fn the_rust_guide_shows_the_main_jobs_python_lines() {
    let defaults = simulation::Params::default();
    let records = defaults.particles as usize * (defaults.steps as usize + 1);
    let header_len = 48 + 8; // one dim
    let descr = simulation::Body::layout().numpy_descr();
    let lines = simulation::python_lines(Path::new("/tmp/nbody.ra"), header_len, records, &descr);
    let guide = include_str!("../doc/rust.md");
    assert!(
        guide.contains(&format!("```python\n{lines}\n```")),
        "doc/rust.md should show:\n{lines}"
    );
}

/// The main job is a package of its own that needs only the library and serde (a root example
/// built the root's dev-dependencies first: proptest, trybuild, bincode, object_store, tokio),
/// and the docs run it so; the command it prints to inspect the file builds `ra` first, since
/// the demo does not.
#[test]
fn the_main_job_builds_only_what_it_needs_and_prints_no_bare_ra() {
    let readme = include_str!("../README.md");
    assert!(
        readme.contains("`cargo run --release -p rawarray-demo`"),
        "the README names the command of the main job"
    );
    let guide = include_str!("../doc/development.md");
    assert!(
        guide.contains("```sh\ncargo run --release -p rawarray-demo "),
        "doc/development.md's getting started runs the demo package first"
    );
    assert!(!readme.contains("--example simulation"));
    let manifest = include_str!("../rawarray-demo/Cargo.toml");
    let deps: Vec<&str> = manifest
        .split_once("[dependencies]\n")
        .expect("a [dependencies] table")
        .1
        .lines()
        .take_while(|l| !l.starts_with('['))
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| l.split(['.', ' ', '=']).next().unwrap())
        .collect();
    assert_eq!(deps, ["rawarray-serde", "serde"]);
    assert!(!manifest.contains("[dev-dependencies]"));
    let shown = simulation::inspect_command(Path::new("/tmp/nbody.ra"));
    let command = shown.lines().nth(1).unwrap().trim();
    assert_eq!(
        command,
        "cargo run --release -p rawarray-cli -- info /tmp/nbody.ra"
    );
    assert!(include_str!("../doc/rust.md").contains(&format!("`{command}`")));
}

/// The compressed copy the demo also writes (issue 35): a window of steps read by a query is
/// exactly those steps' records of the simulation kept in memory, read from a small part of
/// the file (its chunks hold 20 steps each; 10 steps touch one or two of them).
#[test]
fn a_window_of_steps_of_the_compressed_run_reads_a_small_part_of_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nbody_z.ra");
    let params = simulation::Params {
        particles: 8,
        steps: 400,
        flush_every: 7,
        ..Default::default()
    };
    simulation::run_compressed(&path, &params).unwrap();
    let truth = simulation::all_records(&params);
    let (got, fraction) = simulation::window(&path, 200..=209).unwrap();
    let want: Vec<_> = truth
        .iter()
        .filter(|b| (200..=209).contains(&b.step))
        .cloned()
        .collect();
    assert_eq!(got.len(), 80);
    assert_eq!(got, want);
    // 21 chunks of 20 steps (the last has 1): the window lies in chunk 10 alone.
    assert!(
        fraction > 0.0 && fraction < 0.1,
        "read {fraction} of the stored bytes"
    );
    // What the demo prints names this file and this window in both languages.
    let lines = simulation::query_lines(&path, 200..=209);
    assert!(lines.contains("WHERE step BETWEEN 200 AND 209"), "{lines}");
    assert!(
        lines.contains("(\"step\", \">=\", 200), (\"step\", \"<=\", 209)"),
        "{lines}"
    );
}
