use rawarray_serde::RaRecord;

#[derive(RaRecord)]
struct Marker;

fn main() {}
