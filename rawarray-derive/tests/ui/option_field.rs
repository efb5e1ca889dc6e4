use rawarray_serde::RaRecord;

#[derive(RaRecord)]
struct Reading {
    time: u64,
    value: Option<f32>,
}

fn main() {}
