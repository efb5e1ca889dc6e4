use rawarray_serde::RaRecord;

#[derive(RaRecord)]
union Bits {
    f: f32,
    u: u32,
}

fn main() {}
