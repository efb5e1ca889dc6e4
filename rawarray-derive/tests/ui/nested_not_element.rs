use rawarray_serde::RaRecord;

#[derive(RaRecord)]
struct Grid {
    cells: [[Option<u8>; 3]; 3],
}

fn main() {}
