//! Chunked compression: a smooth 3-D field (quantized, as measurements are) written with zstd after a byte shuffle, in chunks of
//! 16 planes, then one plane read back through `ArrayReader`, which decodes only the chunk
//! holding it, and the whole array read back to check every value.
//!
//! Run: `cargo run --example chunked [OUT_DIR]` (default: the system's temp folder).
//! tests/examples.rs runs it.

use std::path::Path;

use rawarray_serde::{ArrayReader, Codec, RawArray, Shuffle, WriteOptions};

/// The field's dims in the file's order (x fastest): numpy's shape is `(nz, ny, nx)`.
pub const DIMS: [u64; 3] = [256, 128, 64];

/// The chunk shape, in the same order: 16 whole planes of the last dim per chunk.
pub const CHUNKS: [u64; 3] = [256, 128, 16];

/// What [`run`] measured: the file's bytes against the plain data's, and the reads a plane took.
#[derive(Debug)]
pub struct Outcome {
    /// Bytes of the plain data (`4 x` the element count).
    pub plain_bytes: u64,
    /// Bytes of the chunked file.
    pub file_bytes: u64,
    /// Reads (chunks decoded) for one plane.
    pub plane_reads: u64,
}

/// Writes `DIR/field_z.ra` chunked and reads it back, checking every value read.
pub fn run(dir: &Path) -> Result<Outcome, Box<dyn std::error::Error>> {
    let [nx, ny, nz] = DIMS;
    let values: Vec<f32> = (0..nx * ny * nz)
        .map(|k| {
            let (x, y, z) = (k % nx, (k / nx) % ny, k / (nx * ny));
            // Quantized to 1/256, as a measurement is: the low mantissa bits are zeros.
            let v = (x as f32 * 0.05).sin() * (y as f32 * 0.03).cos() + z as f32 * 0.01;
            (v * 256.0).round() / 256.0
        })
        .collect();
    let field = RawArray::from_shape_vec(DIMS.to_vec(), values)?;
    let path = dir.join("field_z.ra");
    let opts = WriteOptions::new()
        .codec(Codec::Zstd)
        .level(3)
        .shuffle(Shuffle::Byte)
        .chunks(CHUNKS.to_vec());
    field.write_file_with(&path, &opts)?;

    // Plane z = 37 (numpy: a[37]) lies in chunk 2 alone.
    let r = ArrayReader::open(&path)?;
    let plane: RawArray<f32> = r.read_subset(&[0..nx, 0..ny, 37..38])?;
    let start = (37 * nx * ny) as usize;
    if plane.as_slice() != &field.as_slice()[start..start + (nx * ny) as usize] {
        return Err("the plane read back differs from the one written".into());
    }
    let plane_reads = r.io_stats().reads;

    let back: RawArray<f32> = RawArray::read_file(&path)?;
    if back != field {
        return Err("the array read back differs from the one written".into());
    }
    Ok(Outcome {
        plain_bytes: 4 * nx * ny * nz,
        file_bytes: std::fs::metadata(&path)?.len(),
        plane_reads,
    })
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::args()
        .nth(1)
        .map(std::path::PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    std::fs::create_dir_all(&dir)?;
    let o = run(&dir)?;
    println!(
        "{}: {} plain bytes stored in {} (ratio {:.2}); one plane decoded {} chunk(s)",
        dir.join("field_z.ra").display(),
        o.plain_bytes,
        o.file_bytes,
        o.plain_bytes as f64 / o.file_bytes as f64,
        o.plane_reads
    );
    Ok(())
}
