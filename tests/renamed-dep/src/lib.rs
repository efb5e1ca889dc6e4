//! Records derived through a renamed `rawarray-serde` dependency (`ra_renamed`), under
//! `#![deny(missing_docs)]` so the generated public items must carry docs.
#![deny(missing_docs)]

use ra_renamed::RaRecord;

/// Found through `Cargo.toml`: no attribute.
#[derive(RaRecord, Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
pub struct Sample {
    /// Seconds.
    pub t: f64,
    /// A value per axis.
    pub v: [f32; 3],
    /// Its channel.
    pub channel: u32,
}

/// A generic record, also without an attribute.
#[derive(RaRecord, Clone, Debug, PartialEq)]
pub struct Tagged<T> {
    /// The tag.
    pub tag: u8,
    /// The value.
    pub value: T,
}

/// The crate again, under a path of our own.
pub mod reexported {
    pub use ra_renamed::*;
}

/// Named through `#[ra(crate = "...")]`.
#[derive(RaRecord, Clone, Debug, PartialEq)]
#[ra(crate = "crate::reexported")]
pub struct Explicit(pub u16, pub Sample);

/// The generated code names nothing from the prelude: it compiles where the prelude is absent
/// and common names are taken.
pub mod no_prelude {
    #![no_implicit_prelude]

    /// Shadows `core::result::Result` for this module.
    pub type Result = ();
    /// Shadows `Option`.
    pub struct Option;
    /// Shadows `Vec`.
    pub struct Vec;

    /// A record derived here.
    #[derive(::ra_renamed::RaRecord, ::core::fmt::Debug, ::core::cmp::PartialEq)]
    pub struct Plain {
        /// A flag.
        pub on: bool,
        /// Some bytes.
        pub bytes: [u8; 3],
    }

    /// A `Pod` record derived here.
    #[derive(
        ::ra_renamed::RaRecord,
        ::core::clone::Clone,
        ::core::marker::Copy,
        ::bytemuck::Pod,
        ::bytemuck::Zeroable,
    )]
    #[repr(C)]
    pub struct Pod {
        /// A value.
        pub x: f32,
    }
}
