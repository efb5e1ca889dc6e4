use rawarray_serde::RaRecord;

#[derive(RaRecord)]
struct Samples {
    id: u32,
    values: Vec<f32>,
}

fn main() {}
