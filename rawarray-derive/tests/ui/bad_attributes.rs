use rawarray_serde::RaRecord;

#[derive(RaRecord)]
struct Clash {
    #[ra(rename = "b")]
    a: u8,
    b: u8,
    #[ra(rename = "")]
    c: u8,
}

#[derive(RaRecord)]
#[ra(renamed = "x")]
struct Unknown {
    a: u8,
}

fn main() {}
