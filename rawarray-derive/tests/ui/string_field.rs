use rawarray_serde::RaRecord;

#[derive(RaRecord)]
struct Named {
    name: String,
    value: f64,
}

fn main() {}
