//! Checks that a parsed struct makes a `.ra` record. Every error is a `syn::Error` spanned on
//! the offending item; all of them are reported together.
//!
//! What the syntax shows is checked here: an empty struct, fields of types that are never
//! fixed-size, bad or clashing schema names. What only the compiler knows (a field type that
//! does not implement `Element`, fields that are all zero-sized) is checked by the generated
//! code, spanned on the field or the struct.

use std::collections::BTreeMap;

use quote::ToTokens;
use syn::{Error, Member, Result, Type};

use crate::ast::{Record, RecordField, Shape};

impl Record<'_> {
    /// Every problem with this record as one (combined) error.
    pub fn validate(&self) -> Result<()> {
        let mut errors: Option<Error> = None;
        let mut push = |e: Error| match &mut errors {
            Some(all) => all.combine(e),
            None => errors = Some(e),
        };
        if let Shape::Empty(span) = self.shape {
            push(Error::new(
                span,
                format!(
                    "`{}` has no fields: a .ra record needs at least one field of at least one byte",
                    self.ident
                ),
            ));
        }
        let mut names: BTreeMap<&str, &RecordField> = BTreeMap::new();
        for field in &self.fields {
            if let Some(e) = not_fixed_size(field, field.ty) {
                push(e);
            }
            if field.name.is_empty() {
                push(Error::new(
                    field.name_span,
                    "a field's schema name cannot be empty",
                ));
            } else if let Some(first) = names.insert(&field.name, field) {
                push(Error::new(
                    field.name_span,
                    format!(
                        "two fields are named `{}` in the schema (fields {} and {}); numpy needs \
                         distinct names: use #[ra(rename = \"...\")]",
                        field.name,
                        member_label(&first.member),
                        member_label(&field.member)
                    ),
                ));
            }
        }
        errors.map_or(Ok(()), Err)
    }
}

fn member_label(member: &Member) -> String {
    match member {
        Member::Named(ident) => format!("`{ident}`"),
        Member::Unnamed(index) => index.index.to_string(),
    }
}

/// An error if `ty` (the type of `field`, or an array item inside it) can never be a fixed-size
/// element, explaining why.
fn not_fixed_size(field: &RecordField, ty: &Type) -> Option<Error> {
    let reason = match ty {
        Type::Paren(t) => return not_fixed_size(field, &t.elem),
        Type::Group(t) => return not_fixed_size(field, &t.elem),
        Type::Array(t) => return not_fixed_size(field, &t.elem),
        Type::Reference(_) => {
            "a reference, whose target is not stored in the record; store the value itself"
        }
        Type::Ptr(_) => "a raw pointer, which means nothing in a file; store the value itself",
        Type::Slice(_) => "a slice, whose length is not fixed; use a fixed array `[T; N]`",
        Type::TraitObject(_) | Type::ImplTrait(_) => {
            "a trait object, whose size is not fixed; use a concrete type"
        }
        Type::BareFn(_) => "a function pointer, which means nothing in a file",
        Type::Never(_) => "`!`, which has no values",
        Type::Tuple(t) if t.elems.is_empty() => "`()`, which has no bytes; remove the field",
        Type::Tuple(_) => {
            "a tuple, which has no field names; \
             use a nested #[derive(RaRecord)] struct or a fixed array `[T; N]`"
        }
        Type::Path(p) if p.qself.is_none() => {
            // Standard types by name; the generic ones only with arguments, so that a record
            // of the user's own that happens to share a name is not rejected.
            let last = p.path.segments.last()?;
            let generic = !last.arguments.is_none();
            match (last.ident.to_string().as_str(), generic) {
                ("Vec" | "VecDeque" | "LinkedList" | "BinaryHeap", true) => {
                    "a growable collection, whose length is not fixed; use a fixed array `[T; N]`"
                }
                ("String" | "str" | "OsString" | "CString" | "PathBuf", false) => {
                    "a string, whose length is not fixed; use a fixed byte array `[u8; N]`"
                }
                ("HashMap" | "BTreeMap" | "HashSet" | "BTreeSet", true) => {
                    "a map or set, whose length is not fixed"
                }
                ("Box" | "Rc" | "Arc" | "Cow", true) => {
                    "a pointer to the heap, which means nothing in a file; store the value itself"
                }
                ("Option", true) => {
                    "an `Option`, and a .ra record has no way to mark a value as missing; \
                     store the value with a sentinel, or a `bool` flag next to it"
                }
                ("usize" | "isize", false) => {
                    "pointer-sized, so its size depends on the machine; \
                     use `u64`/`i64` or `u32`/`i32`"
                }
                _ => return None,
            }
        }
        _ => return None,
    };
    let type_name = ty.to_token_stream().to_string();
    Some(Error::new_spanned(
        ty,
        format!(
            "field {} of a .ra record has type `{}`, which is not a fixed-size element: it is {reason}",
            member_label(&field.member),
            tidy(&type_name),
        ),
    ))
}

/// `Vec < u8 >` as `Vec<u8>`: token streams print with spaces between all tokens.
fn tidy(s: &str) -> String {
    let mut out = s.to_string();
    for (from, to) in [
        (" < ", "<"),
        (" <", "<"),
        ("< ", "<"),
        (" >", ">"),
        (" :: ", "::"),
        (":: ", "::"),
        ("& ", "&"),
        (" ,", ","),
        ("[ ", "["),
        (" ]", "]"),
        (" ;", ";"),
        ("* ", "*"),
        ("( ", "("),
        (" )", ")"),
    ] {
        out = out.replace(from, to);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::tidy;

    #[test]
    fn tidy_prints_types_as_written() {
        assert_eq!(tidy("Vec < u8 >"), "Vec<u8>");
        assert_eq!(tidy("& 'a [u8]"), "&'a [u8]");
        assert_eq!(tidy("[Option < u32 > ; 3]"), "[Option<u32>; 3]");
        assert_eq!(tidy("std :: string :: String"), "std::string::String");
    }
}
