use rawarray_serde::RaRecord;

struct Meters(f64);

#[derive(RaRecord)]
struct Trip {
    id: u32,
    length: Meters,
}

fn main() {}
