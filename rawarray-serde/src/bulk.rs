//! One-copy paths for slices and arrays of plain scalars inside the serde format.
//!
//! serde hands a format a `Vec<f32>` one element at a time: a call, a type check and a few
//! bytes per element. The `.ra` bytes of a `Vec<f32>` are its memory, so the serializer and
//! the deserializer recognise the few concrete types where that is so and copy them whole:
//!
//! - writing, `collect_seq` receives the collection itself: `&[P]`, `&Vec<P>` or
//!   `&VecDeque<P>`; an element, item or field of type `[P; N]` comes whole to
//!   `serialize_element`/`serialize_field` (so a `Vec<[P; N]>` is copied an array at a time);
//! - reading, `Vec<P>` and `[P; N]` ask for a sequence with serde's own visitor for them, which
//!   is told by its type identity (found once by asking serde, see [`visitor_of`]), and the
//!   value is built from the bytes with bytemuck; an item or field of type `[P; N]` is built
//!   where `next_element` asks for it;
//! - writing into a `&mut Vec<u8>`, [`to_writer`](crate::to_writer) appends to the caller's
//!   `Vec` in place instead of staging the bytes in a buffer of its own.
//!
//! Here `P` is a [`Plain`] scalar: an integer, `f32`, `f64`, `f16`, `bf16` or a
//! `Complex` of a float; `N` is 1 to 32 (serde's own array impls stop there). Everything else,
//! and any case a fast path cannot take exactly as the element-by-element path would, goes
//! element by element; the two produce the same bytes and the same errors (tests check both).
//!
//! Rust has no specialization, so a type is recognised by its identity (`typeid::of`, which
//! also works for types that borrow). The four casts below ([`same_ref`], [`deref_same`],
//! [`vec_writer`], [`same_owned`]) and the copy of [`array_value`] are the only `unsafe` of the
//! serde path: each turns a generic value into the concrete type it was just shown to be,
//! which is what `Any::downcast_ref` does (the copy builds it from bytes, a `Pod` type's).
//! The concrete type is always [`LifetimeFree`] (or `Vec<u8>`), so
//! identity of the types with lifetimes erased is identity of the types.

use std::any::TypeId;
use std::collections::VecDeque;

use half::{bf16, f16};
use num_complex::Complex;
use serde::de::{self, Visitor};

use crate::eltype::{for_each_rust_scalar, ScalarType as Scalar};

/// A type with no lifetime parameters: `TypeId` equality with it is type equality.
///
/// # Safety
/// Implement only for types without lifetime parameters (every type in this module).
pub(crate) unsafe trait LifetimeFree: 'static {}

/// `value` as a `U`, when its type is `U`.
#[inline(always)]
pub(crate) fn same_ref<T: ?Sized, U: LifetimeFree>(value: &T) -> Option<&U> {
    if typeid::of::<T>() == TypeId::of::<U>() {
        // SAFETY: `T` is `U`: their type ids are equal and `U` has no lifetimes that the id
        // of `T` could have erased. The reference keeps the lifetime of `value`.
        Some(unsafe { &*(value as *const T).cast::<U>() })
    } else {
        None
    }
}

/// `*items` when `I` is `&U`, borrowed for as long as `items` is.
#[inline(always)]
pub(crate) fn deref_same<'b, I, U: ?Sized + LifetimeFree>(items: &'b I) -> Option<&'b U> {
    if typeid::of::<I>() == TypeId::of::<&'static U>() {
        // SAFETY: `I` is `&'x U` for some `'x`: the ids are equal and `U` has no lifetimes.
        // `&'b I` is well-formed, so `'x: 'b`, and reading it as `&'b U` only shortens `'x`
        // (the covariant coercion the compiler would make if it knew `I`).
        Some(unsafe { *(items as *const I).cast::<&'b U>() })
    } else {
        None
    }
}

/// The caller's `Vec` when the writer `W` is `&mut Vec<u8>`.
#[inline(always)]
pub(crate) fn vec_writer<W>(writer: &mut W) -> Option<&mut Vec<u8>> {
    if typeid::of::<W>() == TypeId::of::<&'static mut Vec<u8>>() {
        // SAFETY: `W` is `&'x mut Vec<u8>` for some `'x` (equal ids; `Vec<u8>` has no
        // lifetimes). `&'b mut W` is well-formed, so `'x: 'b`, and the result reborrows the
        // `Vec` for `'b` through the unique reference to `W`, as `&mut **writer` would.
        Some(unsafe { &mut **(writer as *mut W).cast::<&mut Vec<u8>>() })
    } else {
        None
    }
}

/// `value` as a `U`, when `U` is its type.
#[inline(always)]
pub(crate) fn same_owned<T: LifetimeFree, U>(value: T) -> Option<U> {
    if typeid::of::<U>() == TypeId::of::<T>() {
        let value = std::mem::ManuallyDrop::new(value);
        // SAFETY: `U` is `T` (equal ids, `T` without lifetimes); `value` is moved out once and
        // never dropped here.
        Some(unsafe { std::ptr::read((&*value as *const T).cast::<U>()) })
    } else {
        None
    }
}

/// A scalar whose `.ra` bytes (little-endian) are its memory on a little-endian machine.
pub(crate) trait Plain: bytemuck::Pod + LifetimeFree {
    /// Its step in the serializer.
    const KIND: Scalar;
}

/// `match`es a length of 1 to 32 (the lengths serde implements arrays for) to
/// `$f::<T, P, N>(value)`; `None` for other lengths.
macro_rules! with_len {
    ($len:expr, $f:ident::<$t:ty, $p:ty>($v:expr)) => {
        match $len {
            1 => $f::<$t, $p, 1>($v),
            2 => $f::<$t, $p, 2>($v),
            3 => $f::<$t, $p, 3>($v),
            4 => $f::<$t, $p, 4>($v),
            5 => $f::<$t, $p, 5>($v),
            6 => $f::<$t, $p, 6>($v),
            7 => $f::<$t, $p, 7>($v),
            8 => $f::<$t, $p, 8>($v),
            9 => $f::<$t, $p, 9>($v),
            10 => $f::<$t, $p, 10>($v),
            11 => $f::<$t, $p, 11>($v),
            12 => $f::<$t, $p, 12>($v),
            13 => $f::<$t, $p, 13>($v),
            14 => $f::<$t, $p, 14>($v),
            15 => $f::<$t, $p, 15>($v),
            16 => $f::<$t, $p, 16>($v),
            17 => $f::<$t, $p, 17>($v),
            18 => $f::<$t, $p, 18>($v),
            19 => $f::<$t, $p, 19>($v),
            20 => $f::<$t, $p, 20>($v),
            21 => $f::<$t, $p, 21>($v),
            22 => $f::<$t, $p, 22>($v),
            23 => $f::<$t, $p, 23>($v),
            24 => $f::<$t, $p, 24>($v),
            25 => $f::<$t, $p, 25>($v),
            26 => $f::<$t, $p, 26>($v),
            27 => $f::<$t, $p, 27>($v),
            28 => $f::<$t, $p, 28>($v),
            29 => $f::<$t, $p, 29>($v),
            30 => $f::<$t, $p, 30>($v),
            31 => $f::<$t, $p, 31>($v),
            32 => $f::<$t, $p, 32>($v),
            _ => None,
        }
    };
}

macro_rules! plain_impl {
    ($t:ty, $k:ident) => {
        // SAFETY: no lifetime parameters.
        unsafe impl LifetimeFree for $t {}
        impl Plain for $t {
            const KIND: Scalar = Scalar::$k;
        }
    };
}
for_each_rust_scalar!(plain_impl);

// SAFETY: no lifetime parameters beyond those of `P`, which has none.
unsafe impl<P: Plain> LifetimeFree for [P] {}
// SAFETY: as above.
unsafe impl<P: Plain, const N: usize> LifetimeFree for [P; N] {}
// SAFETY: as above.
unsafe impl<P: Plain> LifetimeFree for Vec<P> {}
// SAFETY: as above.
unsafe impl<P: Plain> LifetimeFree for VecDeque<P> {}

/// Whether the fast paths apply on this machine: `.ra` data is little-endian.
const NATIVE_LE: bool = cfg!(target_endian = "little");

/// A run of plain scalars found whole, with their bytes in order.
#[derive(Clone, Copy)]
pub(crate) struct Run<'a> {
    pub kind: Scalar,
    pub len: usize,
    pub parts: [&'a [u8]; 2],
}

/// The scalars of a collection `collect_seq` received, when it is a slice, `Vec` or
/// `VecDeque` of one plain scalar type.
#[inline(always)]
pub(crate) fn plain_run<I>(items: &I) -> Option<Run<'_>> {
    if !NATIVE_LE {
        return None;
    }
    macro_rules! try_run {
        ($t:ty, $k:ident) => {
            let parts: Option<(&[$t], &[$t])> = if let Some(s) = deref_same::<I, [$t]>(items) {
                Some((s, &[]))
            } else if let Some(v) = deref_same::<I, Vec<$t>>(items) {
                Some((v.as_slice(), &[]))
            } else if let Some(d) = deref_same::<I, VecDeque<$t>>(items) {
                Some(d.as_slices())
            } else {
                None
            };
            if let Some((a, b)) = parts {
                return Some(Run {
                    kind: Scalar::$k,
                    len: a.len() + b.len(),
                    parts: [bytemuck::cast_slice(a), bytemuck::cast_slice(b)],
                });
            }
        };
    }
    for_each_rust_scalar!(try_run);
    None
}

/// An array of plain scalars found whole: `[P; N]`, with `N` its length.
#[derive(Clone, Copy)]
pub(crate) struct Array<'a> {
    pub kind: Scalar,
    pub len: usize,
    pub bytes: &'a [u8],
}

/// `value` as an array of plain scalars, when it is one.
#[inline(always)]
pub(crate) fn plain_array<T: ?Sized>(value: &T) -> Option<Array<'_>> {
    if !NATIVE_LE {
        return None;
    }
    let size = std::mem::size_of_val(value);
    macro_rules! try_array {
        ($t:ty, $k:ident) => {
            let width = std::mem::size_of::<$t>();
            if size % width == 0 && std::mem::align_of_val(value) == std::mem::align_of::<$t>() {
                if let Some(a) = with_len!(size / width, array_as::<T, $t>(value)) {
                    return Some(a);
                }
            }
        };
    }
    for_each_rust_scalar!(try_array);
    None
}

#[inline(always)]
fn array_as<T: ?Sized, P: Plain, const N: usize>(value: &T) -> Option<Array<'_>> {
    same_ref::<T, [P; N]>(value).map(|a| Array {
        kind: P::KIND,
        len: N,
        bytes: bytemuck::cast_slice::<P, u8>(a.as_slice()),
    })
}

/// Learns the visitor type a `Deserialize` impl hands to its deserializer.
struct Probe;

/// What [`Probe`] learnt.
#[derive(Debug)]
struct Found(Option<TypeId>);

impl std::fmt::Display for Found {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("visitor probe")
    }
}

impl std::error::Error for Found {}

impl de::Error for Found {
    fn custom<M: std::fmt::Display>(_: M) -> Self {
        Found(None)
    }
}

impl<'de> de::Deserializer<'de> for Probe {
    type Error = Found;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Found> {
        Err(Found(Some(typeid::of::<V>())))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map struct enum
        identifier ignored_any
    }
}

/// The type of the visitor serde's `Deserialize` impl of `T` passes to a deserializer.
#[inline(always)]
fn visitor_of<T: de::DeserializeOwned>() -> Option<TypeId> {
    match T::deserialize(Probe) {
        Err(Found(id)) => id,
        Ok(_) => None,
    }
}

/// The plain scalar `P` when `V` is serde's own visitor for `Vec<P>` (which pushes every
/// item in order, so building the `Vec` whole gives the same value).
#[inline(always)]
pub(crate) fn vec_visitor_kind<'de, V: Visitor<'de>>() -> Option<Scalar> {
    if !NATIVE_LE {
        return None;
    }
    macro_rules! check {
        ($t:ty, $k:ident) => {
            if typeid::of::<V::Value>() == TypeId::of::<Vec<$t>>()
                && Some(typeid::of::<V>()) == visitor_of::<Vec<$t>>()
            {
                return Some(Scalar::$k);
            }
        };
    }
    for_each_rust_scalar!(check);
    None
}

/// `V::Value`, a `Vec` of the plain scalar `kind`, built from its little-endian bytes.
#[inline]
pub(crate) fn vec_value<'de, V: Visitor<'de>>(kind: Scalar, bytes: &[u8]) -> Option<V::Value> {
    macro_rules! build {
        ($t:ty, $k:ident) => {
            if kind == Scalar::$k {
                return same_owned::<Vec<$t>, V::Value>(bytemuck::pod_collect_to_vec(bytes));
            }
        };
    }
    for_each_rust_scalar!(build);
    None
}

/// The plain scalar `P` when `V` is serde's own visitor for `[P; len]`.
#[inline(always)]
pub(crate) fn array_visitor_kind<'de, V: Visitor<'de>>(len: usize) -> Option<Scalar> {
    if !NATIVE_LE {
        return None;
    }
    macro_rules! check {
        ($t:ty, $k:ident) => {
            if std::mem::size_of::<V::Value>() == len.wrapping_mul(std::mem::size_of::<$t>())
                && with_len!(len, array_visitor::<V, $t>(())).is_some()
            {
                return Some(Scalar::$k);
            }
        };
    }
    for_each_rust_scalar!(check);
    None
}

#[inline(always)]
fn array_visitor<'de, V: Visitor<'de>, P: Plain + de::DeserializeOwned, const N: usize>(
    _: (),
) -> Option<()>
where
    [P; N]: de::DeserializeOwned,
{
    (typeid::of::<V::Value>() == TypeId::of::<[P; N]>()
        && Some(typeid::of::<V>()) == visitor_of::<[P; N]>())
    .then_some(())
}

/// The plain scalar `P` and length `N` when the seed `S` is `PhantomData<[P; N]>`: what
/// `SeqAccess::next_element` passes for an array item or field, whose value serde's own impl
/// for `[P; N]` builds item by item in order. `value_size` is the size of `S::Value`.
#[inline(always)]
pub(crate) fn array_seed_kind<S>(value_size: usize) -> Option<(Scalar, usize)> {
    if !NATIVE_LE {
        return None;
    }
    macro_rules! check {
        ($t:ty, $k:ident) => {
            let width = std::mem::size_of::<$t>();
            if value_size % width == 0
                && with_len!(value_size / width, seed_is::<S, $t>(())).is_some()
            {
                return Some((Scalar::$k, value_size / width));
            }
        };
    }
    for_each_rust_scalar!(check);
    None
}

#[inline(always)]
fn seed_is<S, P: Plain, const N: usize>(_: ()) -> Option<()> {
    (typeid::of::<S>() == TypeId::of::<std::marker::PhantomData<[P; N]>>()).then_some(())
}

/// `U`, an array of `len` plain scalars `kind`, built from its little-endian bytes.
///
/// The type test and the copy are apart: the test only answers yes or no for the 17 x 32
/// candidate arrays, and the one copy is the same whatever the arm. Reading a `[P; N]` in
/// every arm and moving it out as `U` (as this did before) left LLVM hundreds of differently
/// sized copies of the value until the type ids folded, and the pieces it cut the value into
/// then changed with unrelated code: the per-record code of a `Vec` of records with an array
/// field ran at two speeds 1.3x apart from one build to another of the same source
/// (`benches/serde.rs`, `Vec<Foo>` in 1 MiB values). The copy is in 8-byte words: a `memcpy`
/// of the whole value is kept in memory and copied twice more on the stack (about 10% slower).
#[inline(always)]
pub(crate) fn array_value<U>(kind: Scalar, len: usize, bytes: &[u8]) -> Option<U> {
    if bytes.len() != size_of::<U>() || !is_array_of::<U>(kind, len) {
        return None;
    }
    let mut value = std::mem::MaybeUninit::<U>::uninit();
    let (src, dst, n) = (bytes.as_ptr(), value.as_mut_ptr().cast::<u8>(), bytes.len());
    // SAFETY: every copy is of bytes inside `bytes` and inside `value` (both `n` long).
    unsafe {
        let mut at = 0;
        while n - at >= 8 {
            copy_at::<u64>(src, dst, at);
            at += 8;
        }
        if n - at >= 4 {
            copy_at::<u32>(src, dst, at);
            at += 4;
        }
        if n - at >= 2 {
            copy_at::<u16>(src, dst, at);
            at += 2;
        }
        if n > at {
            copy_at::<u8>(src, dst, at);
        }
    }
    // SAFETY: `U` is `[P; len]` of the plain scalar `P` of `kind` (`is_array_of`: the ids are
    // equal and `[P; len]` has no lifetimes), a `bytemuck::Pod` type, so any bytes are a
    // value of it; all `size_of::<U>()` of them were written above.
    Some(unsafe { value.assume_init() })
}

/// Copies the `T` at byte `at` of `src` to byte `at` of `dst`, unaligned.
///
/// # Safety
/// Bytes `at..at + size_of::<T>()` are readable at `src` and writable at `dst`.
#[inline(always)]
unsafe fn copy_at<T: Copy>(src: *const u8, dst: *mut u8, at: usize) {
    // SAFETY: the caller's.
    unsafe {
        let v = src.add(at).cast::<T>().read_unaligned();
        dst.add(at).cast::<T>().write_unaligned(v);
    }
}

/// Whether `U` is `[P; len]`, `P` the plain scalar of `kind`.
#[inline(always)]
fn is_array_of<U>(kind: Scalar, len: usize) -> bool {
    macro_rules! test {
        ($t:ty, $k:ident) => {
            if kind == Scalar::$k {
                return with_len!(len, array_is::<U, $t>(())).is_some();
            }
        };
    }
    for_each_rust_scalar!(test);
    false
}

#[inline(always)]
fn array_is<U, P: Plain, const N: usize>(_: ()) -> Option<()> {
    (typeid::of::<U>() == TypeId::of::<[P; N]>()).then_some(())
}

/// `V::Value`, a `Vec` of `n` plain scalars `kind`, read straight into its memory: `fill` is
/// handed its bytes in order, piece by piece. `first` elements are allocated before any byte
/// has arrived (all `n` where the input is known to hold them); after that the `Vec` doubles,
/// each step justified by the bytes that filled the last. `None` (nothing read) if `V::Value`
/// is not that `Vec`.
pub(crate) fn vec_filled<'de, V: Visitor<'de>, E: From<crate::Error>>(
    kind: Scalar,
    n: usize,
    first: usize,
    fill: &mut dyn FnMut(&mut [u8]) -> Result<(), E>,
) -> Option<Result<V::Value, E>> {
    macro_rules! build {
        ($t:ty, $k:ident) => {
            if kind == Scalar::$k {
                if typeid::of::<V::Value>() != TypeId::of::<Vec<$t>>() {
                    return None;
                }
                return Some(
                    filled_vec::<$t, E>(n, first, fill)
                        .map(|v| same_owned::<Vec<$t>, V::Value>(v).expect("checked above")),
                );
            }
        };
    }
    for_each_rust_scalar!(build);
    None
}

/// Bytes zeroed and filled at a time while a `Vec` grows: zeroing a piece that then stays in
/// the cache for `fill` costs little, where zeroing the whole new half first would be one
/// more pass over memory.
const FILL_STEP: usize = 256 << 10;

fn filled_vec<P: Plain, E: From<crate::Error>>(
    n: usize,
    first: usize,
    fill: &mut dyn FnMut(&mut [u8]) -> Result<(), E>,
) -> Result<Vec<P>, E> {
    // Zeroed by the allocator: fresh pages from the system come zeroed, at no cost. `first` is
    // what the input justifies, so an allocation that fails is an error, not an abort.
    let mut v: Vec<P> = crate::data::try_zeroed_vec(first.clamp(n.min(1), n))?;
    fill(bytemuck::cast_slice_mut(&mut v))?;
    let step = (FILL_STEP / std::mem::size_of::<P>()).max(1);
    while v.len() < n {
        let end = v.len() + (n - v.len()).min(v.len());
        // Grown in place where the allocator can (large blocks are remapped, not copied).
        let more = end - v.len();
        crate::data::try_reserve(&mut v, more)?;
        while v.len() < end {
            let from = v.len();
            v.resize((from + step).min(end), P::zeroed());
            fill(bytemuck::cast_slice_mut(&mut v[from..]))?;
        }
    }
    Ok(v)
}
