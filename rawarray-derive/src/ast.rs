//! The derive input parsed into our own types: the struct, its fields, and the `#[ra(...)]`
//! attributes. Only shape errors (not a struct, a malformed attribute) are found here; whether
//! the struct makes a valid record is `valid.rs`'s question.

use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::{Data, DeriveInput, Error, Fields, Generics, Ident, LitStr, Member, Path, Result, Type};

/// A struct to derive `Element` for.
pub struct Record<'a> {
    /// The struct's name.
    pub ident: &'a Ident,
    /// Its generics, as written.
    pub generics: &'a Generics,
    /// Its fields in declaration order (empty for a unit struct).
    pub fields: Vec<RecordField<'a>>,
    /// What the struct looks like, for errors about it.
    pub shape: Shape,
    /// `#[repr(packed)]`: fields are read by copy, never by reference.
    pub packed: bool,
    /// `#[ra(crate = "path")]`.
    pub crate_path: Option<Path>,
}

/// The kind of struct, with the span an error about an empty record points at.
pub enum Shape {
    /// `struct S { .. }` or `struct S(..)`.
    WithFields,
    /// `struct S;`, `struct S {}` or `struct S()`.
    Empty(Span),
}

/// One field of a record.
pub struct RecordField<'a> {
    /// `self.<member>`: its name or index.
    pub member: Member,
    /// Its name in the schema: the Rust name, the index of a tuple field, or `#[ra(rename)]`.
    pub name: String,
    /// The span of the name the schema uses, for duplicate-name errors.
    pub name_span: Span,
    /// Its type.
    pub ty: &'a Type,
}

impl<'a> Record<'a> {
    /// Parses a derive input; enums and unions are an error pointing at their keyword and name.
    pub fn from_syn(input: &'a DeriveInput) -> Result<Record<'a>> {
        let data = match &input.data {
            Data::Struct(data) => data,
            Data::Enum(data) => {
                let keyword = data.enum_token;
                let ident = &input.ident;
                return Err(Error::new_spanned(
                    quote::quote!(#keyword #ident),
                    "RaRecord cannot be derived for an enum: a .ra record is a struct of \
                     fixed-size fields",
                ));
            }
            Data::Union(data) => {
                let keyword = data.union_token;
                let ident = &input.ident;
                return Err(Error::new_spanned(
                    quote::quote!(#keyword #ident),
                    "RaRecord cannot be derived for a union: a .ra record is a struct of \
                     fixed-size fields",
                ));
            }
        };
        let shape = match &data.fields {
            Fields::Unit => Shape::Empty(input.ident.span()),
            Fields::Named(f) if f.named.is_empty() => Shape::Empty(f.brace_token.span.join()),
            Fields::Unnamed(f) if f.unnamed.is_empty() => Shape::Empty(f.paren_token.span.join()),
            _ => Shape::WithFields,
        };
        let fields = data
            .fields
            .iter()
            .enumerate()
            .map(|(i, field)| {
                let member = match &field.ident {
                    Some(ident) => Member::Named(ident.clone()),
                    None => Member::Unnamed(syn::Index {
                        index: i as u32,
                        span: field.ty.span(),
                    }),
                };
                let (name, name_span) = match &member {
                    Member::Named(ident) => (unraw(ident), ident.span()),
                    Member::Unnamed(index) => (index.index.to_string(), field.ty.span()),
                };
                let mut record_field = RecordField {
                    member,
                    name,
                    name_span,
                    ty: &field.ty,
                };
                parse_field_attrs(&field.attrs, &mut record_field)?;
                Ok(record_field)
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Record {
            ident: &input.ident,
            generics: &input.generics,
            fields,
            shape,
            packed: is_packed(&input.attrs)?,
            crate_path: parse_container_attrs(&input.attrs)?,
        })
    }
}

/// The field name without an `r#` prefix: `r#type` is the field `type` to numpy.
fn unraw(ident: &Ident) -> String {
    let s = ident.to_string();
    s.strip_prefix("r#")
        .map_or_else(|| s.clone(), str::to_string)
}

/// `#[ra(crate = "path")]` on the struct.
fn parse_container_attrs(attrs: &[syn::Attribute]) -> Result<Option<Path>> {
    let mut crate_path = None;
    for attr in attrs.iter().filter(|a| a.path().is_ident("ra")) {
        attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("crate") {
                if crate_path.is_some() {
                    return Err(meta.error("duplicate `crate` in #[ra(...)]"));
                }
                let lit: LitStr = meta.value()?.parse()?;
                crate_path =
                    Some(lit.parse::<Path>().map_err(|e| {
                        Error::new(lit.span(), format!("`crate` must be a path: {e}"))
                    })?);
                Ok(())
            } else if meta.path.is_ident("rename") {
                Err(meta.error("`rename` goes on a field, not on the struct"))
            } else {
                Err(meta
                    .error("unknown #[ra(...)] attribute on a struct; expected `crate = \"path\"`"))
            }
        })?;
    }
    Ok(crate_path)
}

/// `#[ra(crate = "path")]` if it parses, for the stub impl emitted next to other errors.
pub fn explicit_crate_path(attrs: &[syn::Attribute]) -> Option<Path> {
    parse_container_attrs(attrs).ok().flatten()
}

/// `#[ra(rename = "name")]` on a field.
fn parse_field_attrs(attrs: &[syn::Attribute], field: &mut RecordField<'_>) -> Result<()> {
    let mut renamed = false;
    for attr in attrs.iter().filter(|a| a.path().is_ident("ra")) {
        attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("rename") {
                if renamed {
                    return Err(meta.error("duplicate `rename` in #[ra(...)]"));
                }
                let lit: LitStr = meta.value()?.parse()?;
                field.name = lit.value();
                field.name_span = lit.span();
                renamed = true;
                Ok(())
            } else if meta.path.is_ident("crate") {
                Err(meta.error("`crate` goes on the struct, not on a field"))
            } else {
                Err(meta
                    .error("unknown #[ra(...)] attribute on a field; expected `rename = \"name\"`"))
            }
        })?;
    }
    Ok(())
}

/// Whether the struct is `#[repr(packed)]` or `#[repr(packed(N))]`.
fn is_packed(attrs: &[syn::Attribute]) -> Result<bool> {
    let mut packed = false;
    for attr in attrs.iter().filter(|a| a.path().is_ident("repr")) {
        attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("packed") {
                packed = true;
            }
            // Skip any arguments: `packed(2)`, `align(8)`.
            if meta.input.peek(syn::token::Paren) {
                let _content;
                syn::parenthesized!(_content in meta.input);
            }
            Ok(())
        })?;
    }
    Ok(packed)
}
