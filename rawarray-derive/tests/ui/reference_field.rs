use rawarray_serde::RaRecord;

#[derive(RaRecord)]
struct View<'a> {
    len: u32,
    data: &'a [u8; 4],
}

fn main() {}
