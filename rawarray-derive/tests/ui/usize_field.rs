use rawarray_serde::RaRecord;

#[derive(RaRecord)]
struct Counter {
    count: usize,
}

fn main() {}
