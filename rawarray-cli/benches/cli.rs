//! `cargo bench -p rawarray-cli --bench cli`: the release `ra` binary against `cp` and
//! `md5sum` on the same 256 MiB f32 file, in the same run, best of 5 alternating rounds.
//! Prints a table of throughputs and time ratios (ours / baseline; lower is better).
//!
//! `ra convert` syncs its output before renaming it into place (a crash never leaves a torn
//! file), which `cp` does not: the table also has `cp` followed by `sync FILE`.
//! Environment: RA_BENCH_MIB (default 256), RA_BENCH_ROUNDS (default 5).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use rawarray_serde::RawArray;

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// CPU seconds (user + system) used by the children waited for so far, from /proc/self/stat
/// (Linux; 0 elsewhere). Fields 16 and 17 are cutime and cstime, in clock ticks of 1/100 s.
fn children_cpu() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // The command name (field 2) may hold spaces: count fields after its closing parenthesis.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<f64> = rest
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0.0))
        .collect();
    f.get(13).copied().unwrap_or(0.0) / 100.0 + f.get(14).copied().unwrap_or(0.0) / 100.0
}

/// Wall and CPU seconds one run of `args` takes; panics if it fails.
fn run(args: &[&str], dir: &Path) -> (f64, f64) {
    let cpu = children_cpu();
    let t = Instant::now();
    let status = Command::new(args[0])
        .args(&args[1..])
        .current_dir(dir)
        .stdout(Stdio::null())
        .status()
        .unwrap_or_else(|e| panic!("{}: {e}", args[0]));
    let s = t.elapsed().as_secs_f64();
    assert!(status.success(), "{args:?} failed");
    (s, children_cpu() - cpu)
}

struct Op {
    name: &'static str,
    args: Vec<String>,
    /// Removed before each run, so every run writes a new file.
    output: Option<&'static str>,
}

fn main() {
    // `cargo bench` passes --bench; a plain `cargo test --benches` run must stay quick.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let mib = env_or("RA_BENCH_MIB", 256);
    let rounds = env_or("RA_BENCH_ROUNDS", 5);
    let ra = env!("CARGO_BIN_EXE_ra");
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let d = dir.path();

    // mib MiB of f32: dims [16384, n] (numpy (n, 16384)), pseudo-random values.
    let n = mib * (1 << 20) / 4;
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let values: Vec<f32> = (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 40) as f32 / (1u64 << 24) as f32
        })
        .collect();
    RawArray::from_shape_vec(vec![16384, (n / 16384) as u64], values)
        .unwrap()
        .write_file(d.join("a.ra"))
        .unwrap();
    run(&[ra, "convert", "a.ra", "a.npy"], d);
    let bytes = std::fs::metadata(d.join("a.ra")).unwrap().len() as f64;

    let s = |v: &[&str]| {
        v.iter()
            .map(std::string::ToString::to_string)
            .collect::<Vec<_>>()
    };
    let ops = [
        Op {
            name: "ra convert a.ra b.npy",
            args: s(&[ra, "convert", "a.ra", "b.npy"]),
            output: Some("b.npy"),
        },
        Op {
            name: "ra convert a.npy b.ra",
            args: s(&[ra, "convert", "a.npy", "b.ra"]),
            output: Some("b.ra"),
        },
        Op {
            name: "cp a.ra c.ra",
            args: s(&["cp", "a.ra", "c.ra"]),
            output: Some("c.ra"),
        },
        Op {
            name: "cp a.ra c.ra && sync c.ra",
            args: s(&["sh", "-c", "cp a.ra c.ra && sync c.ra"]),
            output: Some("c.ra"),
        },
        Op {
            name: "ra checksum a.ra",
            args: s(&[ra, "checksum", "a.ra"]),
            output: None,
        },
        Op {
            name: "ra checksum --algo md5 a.ra",
            args: s(&[ra, "checksum", "--algo", "md5", "a.ra"]),
            output: None,
        },
        Op {
            name: "md5sum a.ra",
            args: s(&["md5sum", "a.ra"]),
            output: None,
        },
        Op {
            name: "sha256sum a.ra",
            args: s(&["sha256sum", "a.ra"]),
            output: None,
        },
    ];
    // Warm the page cache for both inputs, then alternate so that load changes hit all alike.
    for f in ["a.ra", "a.npy"] {
        std::fs::read(d.join(f)).unwrap();
    }
    let mut best = vec![f64::INFINITY; ops.len()];
    let mut best_cpu = vec![f64::INFINITY; ops.len()];
    for _ in 0..rounds {
        for (i, op) in ops.iter().enumerate() {
            if let Some(out) = op.output {
                let _ = std::fs::remove_file(d.join(out));
            }
            let args: Vec<&str> = op.args.iter().map(String::as_str).collect();
            let (wall, cpu) = run(&args, d);
            best[i] = best[i].min(wall);
            best_cpu[i] = best_cpu[i].min(cpu);
        }
    }
    let pos = |name: &str| ops.iter().position(|o| o.name == name).unwrap();
    let t = |name: &str| best[pos(name)];
    let c = |name: &str| best_cpu[pos(name)];
    let mibs = |secs: f64| bytes / secs / f64::from(1 << 20);

    // Other work on the machine takes the cores the parallel digests need: say how much.
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "\n{mib} MiB f32, best of {rounds} alternating rounds, {} cores, load average {}\n",
        std::thread::available_parallelism().map_or(1, std::num::NonZero::get),
        load.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    );
    println!(
        "| operation | ours | baseline | ours MiB/s | baseline MiB/s | ratio (time) | target | CPU s ours | CPU s baseline |"
    );
    println!("|---|---|---|---:|---:|---:|---:|---:|---:|");
    let rows = [
        ("ra convert a.ra b.npy", "cp a.ra c.ra", "1.5"),
        ("ra convert a.ra b.npy", "cp a.ra c.ra && sync c.ra", ""),
        ("ra convert a.npy b.ra", "cp a.ra c.ra", "1.5"),
        ("ra convert a.npy b.ra", "cp a.ra c.ra && sync c.ra", ""),
        ("ra checksum a.ra", "md5sum a.ra", "1.2"),
        ("ra checksum --algo md5 a.ra", "md5sum a.ra", "1.2"),
        ("ra checksum a.ra", "sha256sum a.ra", ""),
    ];
    for (ours, base, target) in rows {
        println!(
            "| {} | `{ours}` | `{base}` | {:.0} | {:.0} | {:.2} | {target} | {:.2} | {:.2} |",
            if ours.contains("checksum") {
                "checksum"
            } else {
                "convert"
            },
            mibs(t(ours)),
            mibs(t(base)),
            t(ours) / t(base),
            c(ours),
            c(base)
        );
    }
    println!();
    println!(
        "`ra checksum` = md5 and sha256 of the file and of its data section (4 digests, one read);"
    );
    println!("`--algo md5` = md5 of the file and of its data section (2 digests, one read).");
    println!("CPU s: user + system seconds of the process (best run), from /proc/self/stat.");
}
