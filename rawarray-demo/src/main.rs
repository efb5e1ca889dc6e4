//! A small N-body simulation that appends one record per particle per step to a `.ra` file,
//! with its parameters in the file's trailer; then reopens the file through the memory-mapped
//! reader, reads one step and a range of steps, and prints a summary.
//!
//! Run: `cargo run --release -p rawarray-demo [OUT_DIR]` (`--help` for the same text): the file
//! is `OUT_DIR/nbody.ra`, in the system's temp folder by default. At the end it prints the
//! command that inspects the file and two lines of Python that read it.
//!
//! A package of its own, depending on the library and serde only: the first run of the README's
//! main job builds those, not the root package's dev-dependencies. The root's tests
//! (`tests/simulation.rs`, `tests/python_package.rs`) include this file by `#[path]`.
//!
//! The file is a 1-d array of `Body` records (eltype 0, 76 bytes each), particle-fastest:
//! record `step * particles + id`. numpy reads it with the dtype stored in the trailer
//! (`tests/python/read_simulation.py`). If the run is killed, the file still holds every step
//! up to the last flush, and `rawarray_serde::recover` repairs it.

use std::error::Error;
use std::path::{Path, PathBuf};
use std::time::Instant;

use rawarray_serde::query::Predicate;
use rawarray_serde::{RaRecord, RecordOptions, RecordReader, RecordWriter, WriteOptions};
use serde::{Deserialize, Serialize};

/// One particle at one step.
#[derive(RaRecord, Clone, Debug, PartialEq)]
pub struct Body {
    /// Step number, from 0.
    pub step: u64,
    /// Simulation time: `step * dt`.
    pub time: f64,
    /// Particle number.
    pub id: u32,
    /// Position.
    pub position: [f64; 3],
    /// Velocity.
    pub velocity: [f64; 3],
    /// Kinetic energy plus half of the particle's pair potentials: the total energy is the sum.
    pub energy: f64,
}

/// The run's parameters, stored in the trailer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Params {
    /// Number of particles.
    pub particles: u32,
    /// Steps after the initial state.
    pub steps: u64,
    /// Time step.
    pub dt: f64,
    /// Plummer softening length.
    pub softening: f64,
    /// Gravitational constant.
    pub g: f64,
    /// Seed of the initial conditions.
    pub seed: u64,
    /// Steps between flushes (commits) of the file.
    pub flush_every: u64,
    /// Units and method, for whoever reads the file later.
    pub units: String,
    /// The integrator.
    pub integrator: String,
}

impl Default for Params {
    fn default() -> Params {
        Params {
            particles: 64,
            steps: 2000,
            dt: 1e-3,
            softening: 0.05,
            g: 1.0,
            seed: 42,
            flush_every: 100,
            units: "N-body units: G = 1, total mass 1".into(),
            integrator: "leapfrog (kick-drift-kick)".into(),
        }
    }
}

/// The particles' state.
pub struct Simulation {
    params: Params,
    step: u64,
    position: Vec<[f64; 3]>,
    velocity: Vec<[f64; 3]>,
    acceleration: Vec<[f64; 3]>,
}

impl Simulation {
    /// Particles uniform in a unit ball, nearly at rest, equal masses summing to 1.
    pub fn new(params: &Params) -> Simulation {
        let mut rng = params.seed;
        let mut uniform = move || {
            // splitmix64: deterministic, so a run can be recomputed to check its file.
            rng = rng.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = rng;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            (z ^ (z >> 31)) as f64 / u64::MAX as f64 * 2.0 - 1.0
        };
        let n = params.particles as usize;
        let mut position = Vec::with_capacity(n);
        while position.len() < n {
            let p = [uniform(), uniform(), uniform()];
            if p.iter().map(|x| x * x).sum::<f64>() <= 1.0 {
                position.push(p);
            }
        }
        let velocity = (0..n)
            .map(|_| [0.1 * uniform(), 0.1 * uniform(), 0.1 * uniform()])
            .collect();
        let mut sim = Simulation {
            params: params.clone(),
            step: 0,
            position,
            velocity,
            acceleration: vec![[0.0; 3]; n],
        };
        sim.acceleration = sim.accelerations();
        sim
    }

    fn mass(&self) -> f64 {
        1.0 / f64::from(self.params.particles)
    }

    fn accelerations(&self) -> Vec<[f64; 3]> {
        let (g, eps2, m) = (self.params.g, self.params.softening.powi(2), self.mass());
        let mut acc = vec![[0.0; 3]; self.position.len()];
        for (i, a) in acc.iter_mut().enumerate() {
            for (j, q) in self.position.iter().enumerate() {
                if i != j {
                    let d: [f64; 3] = std::array::from_fn(|c| q[c] - self.position[i][c]);
                    let r2 = d.iter().map(|x| x * x).sum::<f64>() + eps2;
                    let f = g * m / (r2 * r2.sqrt());
                    (0..3).for_each(|c| a[c] += f * d[c]);
                }
            }
        }
        acc
    }

    /// One kick-drift-kick step.
    pub fn advance(&mut self) {
        let dt = self.params.dt;
        for (v, a) in self.velocity.iter_mut().zip(&self.acceleration) {
            (0..3).for_each(|c| v[c] += 0.5 * dt * a[c]);
        }
        for (p, v) in self.position.iter_mut().zip(&self.velocity) {
            (0..3).for_each(|c| p[c] += dt * v[c]);
        }
        self.acceleration = self.accelerations();
        for (v, a) in self.velocity.iter_mut().zip(&self.acceleration) {
            (0..3).for_each(|c| v[c] += 0.5 * dt * a[c]);
        }
        self.step += 1;
    }

    /// The current state as one record per particle.
    pub fn records(&self) -> Vec<Body> {
        let (g, eps2, m) = (self.params.g, self.params.softening.powi(2), self.mass());
        (0..self.position.len())
            .map(|i| {
                let (p, v) = (self.position[i], self.velocity[i]);
                let kinetic = 0.5 * m * v.iter().map(|x| x * x).sum::<f64>();
                let potential: f64 = (self.position.iter().enumerate())
                    .filter(|&(j, _)| j != i)
                    .map(|(_, q)| {
                        let r2: f64 = (0..3).map(|c| (q[c] - p[c]).powi(2)).sum();
                        -g * m * m / (r2 + eps2).sqrt()
                    })
                    .sum();
                Body {
                    step: self.step,
                    time: self.step as f64 * self.params.dt,
                    id: i as u32,
                    position: p,
                    velocity: v,
                    energy: kinetic + 0.5 * potential,
                }
            })
            .collect()
    }
}

/// Every record a run with `params` writes, computed in memory, in the file's order: the truth
/// the tests compare the file with.
pub fn all_records(params: &Params) -> Vec<Body> {
    let mut sim = Simulation::new(params);
    let mut records = Vec::new();
    for step in 0..=params.steps {
        records.extend(sim.records());
        if step < params.steps {
            sim.advance();
        }
    }
    records
}

/// Runs the simulation, appending every step's records to `path` and flushing every
/// `flush_every` steps.
pub fn run(path: &Path, params: &Params) -> Result<(), Box<dyn Error>> {
    let mut writer: RecordWriter<Body> = RecordOptions::new().params(params).create(path)?;
    let mut sim = Simulation::new(params);
    for step in 0..=params.steps {
        writer.append_slice(&sim.records())?;
        if step % params.flush_every == 0 {
            writer.flush()?;
        }
        if step < params.steps {
            sim.advance();
        }
    }
    writer.finish()?;
    Ok(())
}

/// Steps per chunk of the compressed copy: a window of a few steps reads one or two chunks.
pub const STEPS_PER_CHUNK: u64 = 20;

/// Runs the simulation as [`run`] does, its records compressed (zstd, chunks of
/// [`STEPS_PER_CHUNK`] steps) with per-chunk statistics, as a run written for later queries
/// would be: a query of a window of steps reads only the chunks whose steps can match.
pub fn run_compressed(path: &Path, params: &Params) -> Result<(), Box<dyn Error>> {
    let chunk = STEPS_PER_CHUNK * u64::from(params.particles);
    let storage = WriteOptions::for_name("zstd")?.chunks(vec![chunk]);
    let mut writer: RecordWriter<Body> = RecordOptions::new()
        .params(params)
        .storage(storage)
        .create(path)?;
    let mut sim = Simulation::new(params);
    for step in 0..=params.steps {
        writer.append_slice(&sim.records())?;
        if step % params.flush_every == 0 {
            writer.flush()?;
        }
        if step < params.steps {
            sim.advance();
        }
    }
    writer.finish()?;
    Ok(())
}

/// The records of steps `steps` (inclusive) of a compressed run, and the fraction of its
/// stored bytes the query read (the chunks whose statistics allow a match).
pub fn window(
    path: &Path,
    steps: std::ops::RangeInclusive<u64>,
) -> Result<(Vec<Body>, f64), Box<dyn Error>> {
    let reader = RecordReader::<Body>::open(path)?;
    let q = reader.query(&Predicate::between("step", *steps.start(), *steps.end()))?;
    let (stored, read) = q.pruning().stored_bytes();
    let fraction = read as f64 / stored.max(1) as f64;
    let records = q.collect::<Result<Vec<_>, _>>()?;
    Ok((records, fraction))
}

/// The `ra sql` query and the Python line that read steps `steps` of the compressed run at
/// `path`, each reading only the chunks that can match.
pub fn query_lines(path: &Path, steps: std::ops::RangeInclusive<u64>) -> String {
    let (lo, hi) = (steps.start(), steps.end());
    let path = path.display();
    format!(
        "ra sql \"SELECT step, sum(energy) FROM '{path}' WHERE step BETWEEN {lo} AND {hi} GROUP BY step ORDER BY step\"\n\
         python3 -c 'import rawarray; w = rawarray.read(\"{path}\", filters=[(\"step\", \">=\", {lo}), (\"step\", \"<=\", {hi})]); print(len(w), w[\"energy\"][:4])'"
    )
}

fn total_energy(bodies: &[Body]) -> f64 {
    bodies.iter().map(|b| b.energy).sum()
}

/// What `--help` prints.
const USAGE: &str = "\
Usage: cargo run --release -p rawarray-demo [OUT_DIR]

Runs a 64-particle N-body simulation for 2000 steps, appending one record per particle per
step to OUT_DIR/nbody.ra (default OUT_DIR: the system's temp folder) and committing every 100
steps; then reads the file back through a memory map and prints a summary, the command that
inspects the file, and two lines of Python that read its records by field name.";

/// How to look into the file with `ra`. The demo does not build `ra` (its own package), so the
/// command is the one that builds it first; `cargo install --locked --path rawarray-cli` puts `ra` on
/// the PATH for `ra info FILE`.
pub fn inspect_command(path: &Path) -> String {
    format!(
        "Look into the file (the first run builds ra; `cargo install --locked --path rawarray-cli` installs it):\n  \
         cargo run --release -p rawarray-cli -- info {}",
        path.display()
    )
}

/// Two lines of Python (numpy only) that read a record file's parameters and records by field
/// name: the parameters from the trailer's JSON, which ends 28 bytes before the end of the file
/// with its length 16 bytes before the end; the records with the dtype the schema gives.
pub fn python_lines(path: &Path, header_len: usize, records: usize, numpy_descr: &str) -> String {
    let path = path.display();
    format!(
        "import json, numpy as np; raw = open(\"{path}\", \"rb\").read(); \
         params = json.loads(raw[-28 - int.from_bytes(raw[-16:-8], \"little\"):-28])[\"params\"]\n\
         bodies = np.frombuffer(raw, {numpy_descr}, count={records}, offset={header_len}); \
         print(params[\"dt\"], bodies[\"energy\"][:4])"
    )
}

fn main() -> Result<(), Box<dyn Error>> {
    let arg = std::env::args().nth(1);
    if matches!(arg.as_deref(), Some("-h" | "--help")) {
        println!("{USAGE}");
        return Ok(());
    }
    let dir = arg.map(PathBuf::from).unwrap_or_else(std::env::temp_dir);
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("nbody.ra");

    let started = Instant::now();
    run(&path, &Params::default())?;
    let ran = started.elapsed();

    // Read it back without loading it: the map costs nothing until records are touched.
    let reader = RecordReader::<Body>::open(&path)?;
    let params: Params = reader.trailer().ok_or("no trailer")?.params_as()?;
    let n = params.particles as usize;
    let steps = reader.len() / n;
    println!(
        "{}: {} records ({} steps x {} particles, {} bytes each), {:.1} MiB, written in {:.2?}",
        path.display(),
        reader.len(),
        steps,
        n,
        reader.header().elbyte,
        std::fs::metadata(&path)?.len() as f64 / f64::from(1 << 20),
        ran
    );
    println!(
        "params from the trailer: dt {}, softening {}, {}",
        params.dt, params.softening, params.integrator
    );

    // Step k: one slice of the records.
    let k = steps / 2;
    let step_k = reader.slice(k * n..(k + 1) * n)?;
    let fastest = step_k
        .iter()
        .max_by(|a, b| speed(a).total_cmp(&speed(b)))
        .ok_or("empty step")?;
    println!(
        "step {k} (t = {:.3}): total energy {:.9}, fastest particle {} at speed {:.4}",
        step_k[0].time,
        total_energy(&step_k),
        fastest.id,
        speed(fastest)
    );

    // A range of steps: energy conservation over the run, every tenth of it.
    let e0 = total_energy(&reader.slice(0..n)?);
    let mut worst = 0.0f64;
    for s in (0..steps).step_by((steps / 10).max(1)) {
        let e = total_energy(&reader.slice(s * n..(s + 1) * n)?);
        worst = worst.max(((e - e0) / e0).abs());
    }
    let last = reader.slice((steps - 1) * n..steps * n)?;
    println!(
        "energy: {e0:.9} at t = 0, {:.9} at t = {:.3}; worst relative drift {worst:.2e}",
        total_energy(&last),
        last[0].time
    );

    let header_len = reader.header().encoded_len();
    let descr = <Body as rawarray_serde::Element>::layout().numpy_descr();
    println!("\n{}", inspect_command(&path));
    println!("Read it from Python (numpy; the parameters are the trailer's JSON at the end):");
    for line in python_lines(&path, header_len, reader.len(), &descr).lines() {
        println!("  {line}");
    }

    // The same run compressed with per-chunk statistics: a window of steps reads only the
    // chunks whose statistics allow a match.
    let zpath = dir.join("nbody_z.ra");
    run_compressed(&zpath, &params)?;
    let steps_window = 1000..=1009;
    let (records, fraction) = window(&zpath, steps_window.clone())?;
    println!(
        "\nCompressed with per-chunk statistics: {} ({:.1} MiB). Steps {}..={}: {} records, read \
         from {:.1}% of its stored bytes:",
        zpath.display(),
        std::fs::metadata(&zpath)?.len() as f64 / f64::from(1 << 20),
        steps_window.start(),
        steps_window.end(),
        records.len(),
        100.0 * fraction
    );
    for line in query_lines(&zpath, steps_window).lines() {
        println!("  {line}");
    }
    Ok(())
}

fn speed(b: &Body) -> f64 {
    b.velocity.iter().map(|v| v * v).sum::<f64>().sqrt()
}
