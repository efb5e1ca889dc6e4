//! Writes a few arrays to `.ra` files and reads them back: a 2-D f64 field, a point cloud,
//! a complex signal (compressed), and a file of unknown type through the dynamic reader.
//!
//! Run: `cargo run --example arrays [OUT_DIR]`

use num_complex::Complex;
use rawarray_serde::{DynArray, RawArray, WriteOptions};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::args()
        .nth(1)
        .map(std::path::PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    std::fs::create_dir_all(&dir)?;

    // A 64 x 32 temperature field, column-major: the first index varies fastest.
    let (nx, ny) = (64u64, 32u64);
    let field: Vec<f64> = (0..nx * ny)
        .map(|k| {
            let (x, y) = ((k % nx) as f64 / nx as f64, (k / nx) as f64 / ny as f64);
            (std::f64::consts::PI * x).sin() * (std::f64::consts::PI * y).sin()
        })
        .collect();
    let field = RawArray::from_shape_vec(vec![nx, ny], field)?;
    let path = dir.join("field.ra");
    field.write_file(&path)?;
    let back: RawArray<f64> = RawArray::read_file(&path)?;
    assert_eq!(back, field);
    println!(
        "{}: f64 {:?}, centre {:.3}",
        path.display(),
        back.dims(),
        back.get(&[nx / 2, ny / 2]).unwrap()
    );

    // A point cloud: Vec<[f32; 3]> is the file f32 [3, n]; numpy sees shape (n, 3).
    let points: Vec<[f32; 3]> = (0..1000)
        .map(|i| [i as f32, (i * 2) as f32, (i * 3) as f32])
        .collect();
    let path = dir.join("points.ra");
    RawArray::from_vec(points.clone()).write_file(&path)?;
    let back: RawArray<[f32; 3]> = RawArray::read_file(&path)?;
    assert_eq!(back.as_slice(), &points[..]);
    println!("{}: [f32; 3] x {}", path.display(), back.len());

    // A complex signal, LZ4-compressed.
    let signal: Vec<Complex<f32>> = (0..4096)
        .map(|k| Complex::from_polar(1.0, k as f32 * 0.01))
        .collect();
    let path = dir.join("signal.ra");
    RawArray::from_vec(signal.clone())
        .write_file_with(&path, &WriteOptions::new().compress(true))?;
    let back: RawArray<Complex<f32>> = RawArray::read_file(&path)?;
    assert_eq!(back.as_slice(), &signal[..]);

    // Any file, type unknown ahead: the dynamic reader.
    let any = DynArray::read_file(&path)?;
    let h = any.header();
    println!(
        "{}: {} ({}), dims {:?}, {} bytes on disk, {} plain",
        path.display(),
        h.type_label(),
        h.numpy_dtype().unwrap_or("-"),
        h.dims,
        std::fs::metadata(&path)?.len(),
        any.data().len()
    );
    Ok(())
}
