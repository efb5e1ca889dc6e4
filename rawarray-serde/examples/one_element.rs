//! Open + one element of a chunked 1 GiB f32 field (numpy shape (1024, 512, 512)), `REPS`
//! times, for profilers: the file is written once to `PATH` (default /dev/shm/one_element.ra)
//! with the default chunked options, or `BLOCKS` (file order, comma-separated).
use rawarray_serde::{ArrayReader, RawArray, WriteOptions};
use std::time::Instant;

fn main() {
    let path = std::env::var("PATH_RA").unwrap_or_else(|_| "/dev/shm/one_element.ra".into());
    let reps: usize = std::env::var("REPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2000);
    let dims = vec![512u64, 512, 1024];
    if std::fs::metadata(&path).is_err() {
        let n: usize = dims.iter().product::<u64>() as usize;
        let values: Vec<f32> = (0..n)
            .map(|i| {
                let (x, y, z) = (i % 512, i / 512 % 512, i / (512 * 512));
                ((x as f32 / 17.0).sin() * (y as f32 / 23.0).cos()) + z as f32 / 1024.0
            })
            .collect();
        let mut opts = WriteOptions::chunked();
        if let Ok(b) = std::env::var("BLOCKS") {
            opts = opts.blocks(b.split(',').map(|x| x.parse().unwrap()).collect());
        }
        RawArray::from_shape_vec(dims.clone(), values)
            .unwrap()
            .write_file_with(&path, &opts)
            .unwrap();
    }
    let ranges = [256..257u64, 256..257, 512..513];
    let mut open_t = Vec::new();
    let mut all_t = Vec::new();
    for _ in 0..reps {
        let t = Instant::now();
        let r = ArrayReader::open(&path).unwrap();
        let t1 = t.elapsed();
        let v = r.read_subset_bytes(&ranges).unwrap();
        all_t.push(t.elapsed().as_secs_f64());
        open_t.push(t1.as_secs_f64());
        std::hint::black_box(v);
    }
    open_t.sort_by(f64::total_cmp);
    all_t.sort_by(f64::total_cmp);
    println!(
        "open: best {:.1} us, median {:.1} us; open + one element: best {:.1} us, median {:.1} us",
        open_t[0] * 1e6,
        open_t[reps / 2] * 1e6,
        all_t[0] * 1e6,
        all_t[reps / 2] * 1e6
    );
}
