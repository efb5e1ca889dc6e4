//! The records of this crate work through the renamed dependency.

use ra_renamed::{Element, RawArray};
use rawarray_derive_renamed_test::{no_prelude, Explicit, Sample, Tagged};

const _: () = assert!(Sample::ELBYTE == 24);

fn sample(i: u32) -> Sample {
    Sample {
        t: f64::from(i) / 8.0,
        v: [i as f32, 1.0, -1.0],
        channel: i,
    }
}

#[test]
fn derived_through_the_manifest_name() {
    assert_eq!(Sample::OFFSETS, [0, 8, 20]);
    assert!(
        Sample::as_pod_bytes(&[sample(1)]).is_some(),
        "Pod takes one copy"
    );
    let a = RawArray::from_vec((0..4).map(sample).collect());
    let bytes = a.to_bytes();
    assert_eq!(
        u64::from_le_bytes(bytes[24..32].try_into().unwrap()),
        24,
        "elbyte"
    );
    assert_eq!(RawArray::<Sample>::from_bytes(&bytes).unwrap(), a);

    let t = RawArray::from_vec(vec![Tagged {
        tag: 1,
        value: [2u16; 2],
    }]);
    assert_eq!(Tagged::<[u16; 2]>::ELBYTE, 5);
    assert_eq!(RawArray::from_bytes(&t.to_bytes()).unwrap(), t);
}

#[test]
fn derived_through_the_crate_attribute() {
    assert_eq!(Explicit::OFFSETS, [0, 2]);
    let a = RawArray::from_vec(vec![Explicit(7, sample(3))]);
    assert_eq!(RawArray::<Explicit>::from_bytes(&a.to_bytes()).unwrap(), a);
}

#[test]
fn derived_without_the_prelude() {
    let p = no_prelude::Plain {
        on: true,
        bytes: [1, 2, 3],
    };
    let mut out = [0u8; 4];
    p.write_le(&mut out);
    assert_eq!(out, [1, 1, 2, 3]);
    assert_eq!(no_prelude::Plain::read_le(&out).unwrap(), p);
    assert!(no_prelude::Pod::as_pod_bytes(&[no_prelude::Pod { x: 1.0 }]).is_some());
}
