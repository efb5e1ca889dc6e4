//! A struct deriving both `RaRecord` and serde's traits: the serde path and the derive's typed
//! path write byte-identical files, and each reads the other's.

use rawarray_serde::{from_slice, to_vec, RaRecord, RawArray};
use serde::{Deserialize, Serialize};

#[derive(RaRecord, Serialize, Deserialize, Clone, Debug, PartialEq)]
struct Foo {
    info: [u8; 12],
    index: u32,
    v: [f64; 8],
}

#[derive(RaRecord, Serialize, Deserialize, Clone, Copy, Debug, PartialEq)]
struct Particle {
    id: u32,
    alive: bool,
    pos: [f32; 3],
    z: num_complex::Complex<f64>,
    h: half::f16,
}

fn foos(n: u32) -> Vec<Foo> {
    (0..n)
        .map(|i| Foo {
            info: *b"rawarray-foo",
            index: i,
            v: std::array::from_fn(|k| k as f64 * 0.5 - f64::from(i)),
        })
        .collect()
}

#[test]
fn foo_records_agree_byte_for_byte() {
    let v = foos(17);
    let by_serde = to_vec(&v).unwrap();
    let by_derive = RawArray::from_vec(v.clone()).to_bytes();
    assert_eq!(by_serde, by_derive);
    assert_eq!(by_serde.len(), 56 + 17 * 80);
    assert_eq!(
        RawArray::<Foo>::from_bytes(&by_serde).unwrap().into_vec(),
        v
    );
    assert_eq!(from_slice::<Vec<Foo>>(&by_derive).unwrap(), v);
}

#[test]
fn records_with_bool_complex_and_f16_agree() {
    let v: Vec<Particle> = (0..9)
        .map(|i| Particle {
            id: i,
            alive: i % 2 == 0,
            pos: [i as f32, -(i as f32), 0.25],
            z: num_complex::Complex::new(f64::from(i), 1.0),
            h: half::f16::from_f32(i as f32 * 0.5),
        })
        .collect();
    let by_serde = to_vec(&v).unwrap();
    assert_eq!(by_serde, RawArray::from_vec(v.clone()).to_bytes());
    assert_eq!(from_slice::<Vec<Particle>>(&by_serde).unwrap(), v);
    // 2-D arrays of records agree too.
    let grid: Vec<Vec<Particle>> = v.chunks(3).map(<[Particle]>::to_vec).collect();
    let typed = RawArray::from_shape_vec(vec![3, 3], v.clone()).unwrap();
    assert_eq!(to_vec(&grid).unwrap(), typed.to_bytes());
}
