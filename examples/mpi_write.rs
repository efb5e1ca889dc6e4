//! MPI ranks write one `.ra` file together from Rust: each rank writes its slab of a 3-D field
//! through `ArrayWriter`, in place, on a shared filesystem. No MPI library is linked: the
//! launcher's environment says which rank a process is (`OMPI_COMM_WORLD_RANK`/`_SIZE` from
//! OpenMPI's `mpirun`, `PMI_RANK`/`PMI_SIZE` from MPICH's and Intel's, `SLURM_PROCID`/
//! `SLURM_NTASKS` from `srun`), and the file itself is the only thing the ranks share.
//!
//! Run: `cargo build --example mpi_write && mpirun -n 4 target/debug/examples/mpi_write
//! field.ra [NT NY NX]` (as root, OpenMPI wants `--allow-run-as-root`; more ranks than cores,
//! `--oversubscribe`). tests/mpi.rs runs it with 4 ranks.
//!
//! Every rank calls `ArrayWriter::options()...open_or_create`: exactly one creates the file, the others
//! open it; rank `r` of `size` writes the planes `r*nt/size .. (r+1)*nt/size` of the slowest
//! axis (numpy's first), then `finish`es (syncs; the last writer removes the journal). The
//! field is [`field`], the same as rawarray-python/examples/mpi_write.py's, so any rank computes
//! any part of it; the file has dims `[nx, ny, nt]` (x fastest), numpy's shape `(nt, ny, nx)`.

use rawarray_serde::ArrayWriter;

/// The value at `(t, y, x)`: any rank computes any block the same way.
pub fn field(t: u64, y: u64, x: u64) -> f64 {
    let (t, y, x) = (t as f64, y as f64, x as f64);
    (0.1 * t + 0.01 * y).sin() * (0.02 * x).cos() + t
}

/// This process's rank and the number of ranks, as the launcher set them.
pub fn rank_and_size() -> Result<(u64, u64), String> {
    const PAIRS: [(&str, &str); 3] = [
        ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
        ("PMI_RANK", "PMI_SIZE"),
        ("SLURM_PROCID", "SLURM_NTASKS"),
    ];
    let number = |name: &str, value: String| {
        value
            .parse::<u64>()
            .map_err(|_| format!("{name}: expected a number, found {value:?}"))
    };
    for (rank, size) in PAIRS {
        if let (Ok(r), Ok(s)) = (std::env::var(rank), std::env::var(size)) {
            let (r, s) = (number(rank, r)?, number(size, s)?);
            if r >= s {
                return Err(format!("{rank} is {r}, but {size} is {s}"));
            }
            return Ok((r, s));
        }
    }
    Err(
        "no rank in the environment: launch this with mpirun, mpiexec or srun \
         (OMPI_COMM_WORLD_RANK, PMI_RANK or SLURM_PROCID)"
            .into(),
    )
}

/// Writes this rank's slab of the field of numpy shape `(nt, ny, nx)` into `path`; returns
/// the planes written and whether this rank created the file.
pub fn write_slab(
    path: &std::path::Path,
    [nt, ny, nx]: [u64; 3],
    rank: u64,
    size: u64,
) -> rawarray_serde::Result<(std::ops::Range<u64>, bool)> {
    let planes = rank * nt / size..(rank + 1) * nt / size;
    let w = ArrayWriter::options()
        .array::<f64>(&[nx, ny, nt])
        .open_or_create(path)?;
    // The block in the file's order: x fastest, then y, then t.
    let values: Vec<f64> = planes
        .clone()
        .flat_map(|t| (0..ny).flat_map(move |y| (0..nx).map(move |x| field(t, y, x))))
        .collect();
    w.write_subset(&[0..nx, 0..ny, planes.clone()], &values)?;
    let created = w.created();
    w.finish()?;
    Ok((planes, created))
}

/// `path [NT NY NX]` from the command line, then this rank's slab.
pub fn main_with(args: &[String]) -> Result<(), Box<dyn std::error::Error>> {
    let path = args.first().ok_or("usage: mpi_write PATH [NT NY NX]")?;
    let shape = match &args[1..] {
        [] => [16, 64, 48],
        [t, y, x] => [t.parse()?, y.parse()?, x.parse()?],
        _ => return Err("usage: mpi_write PATH [NT NY NX]".into()),
    };
    let (rank, size) = rank_and_size()?;
    let (planes, created) = write_slab(path.as_ref(), shape, rank, size)?;
    println!("rank {rank} of {size}: planes {planes:?} of {path} {shape:?}, created={created}");
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    main_with(&args)
}
