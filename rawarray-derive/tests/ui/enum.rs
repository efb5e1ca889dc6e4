use rawarray_serde::RaRecord;

#[derive(RaRecord)]
enum Shape {
    Circle(f64),
    Square(f64),
}

fn main() {}
