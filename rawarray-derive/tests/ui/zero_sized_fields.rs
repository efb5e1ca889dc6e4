use rawarray_serde::RaRecord;

#[derive(RaRecord)]
struct Nothing {
    a: [u8; 0],
    b: [f64; 0],
}

fn main() {}
