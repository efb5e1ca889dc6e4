use rawarray_serde::RaRecord;

#[derive(RaRecord)]
struct Boxed(u8, Box<[f64; 3]>);

fn main() {}
