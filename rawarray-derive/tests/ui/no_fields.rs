use rawarray_serde::RaRecord;

#[derive(RaRecord)]
struct Empty {}

fn main() {}
