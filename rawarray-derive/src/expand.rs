//! Generates the `Element` impl and the inherent constants of a validated record.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{DeriveInput, Generics, Path};

use crate::ast::Record;

/// The expansion of `#[derive(RaRecord)]`: the impls, or the errors plus a stub impl so that
/// uses of the type do not add errors of their own.
pub fn derive(input: &DeriveInput) -> TokenStream {
    let record = Record::from_syn(input).and_then(|record| {
        record.validate()?;
        Ok(record)
    });
    match record {
        Ok(record) => expand(&record),
        Err(errors) => {
            let errors = errors.to_compile_error();
            let stub = stub(input);
            quote!(#errors #stub)
        }
    }
}

/// The path generated code names `rawarray_serde` by: `#[ra(crate = "...")]`, else the name the
/// calling package gives the `rawarray-serde` dependency in its `Cargo.toml` (so a renamed
/// dependency works without an attribute), else `::rawarray_serde`.
fn crate_path(explicit: Option<&Path>) -> TokenStream {
    if let Some(path) = explicit {
        return quote!(#path);
    }
    match proc_macro_crate::crate_name("rawarray-serde") {
        Ok(proc_macro_crate::FoundCrate::Name(name)) => {
            let name = format_ident!("{}", name);
            quote!(::#name)
        }
        // Inside rawarray-serde, `extern crate self as rawarray_serde` makes this path work, and
        // it is also right for its doctests and examples, which see it as an outside crate.
        Ok(proc_macro_crate::FoundCrate::Itself) | Err(_) => quote!(::rawarray_serde),
    }
}

/// Locals of generated functions start with `__`: field types are spliced into the same
/// bodies, and an array length there must not resolve to one of our locals.
fn expand(record: &Record) -> TokenStream {
    let krate = crate_path(record.crate_path.as_ref());
    let core = quote!(#krate::__private::core);
    let ident = record.ident;
    let name = ident.to_string();
    let name = name.strip_prefix("r#").unwrap_or(&name);
    let generic = !record.generics.params.is_empty();
    let generics = with_element_bounds(record, &krate);
    let (impl_generics, ty_generics, where_clause) = generics.split_for_impl();

    let n = record.fields.len();
    let members: Vec<_> = record.fields.iter().map(|f| &f.member).collect();
    let indices: Vec<_> = (0..n).collect();
    // Every use of a field's type is spanned on it, so a type that does not implement `Element`
    // is reported at the field.
    let as_element: Vec<_> = record
        .fields
        .iter()
        .map(|f| {
            let ty = f.ty;
            quote_spanned!(ty.span()=> <#ty as #krate::Element>)
        })
        .collect();
    let sizes: Vec<_> = record
        .fields
        .iter()
        .zip(&as_element)
        .map(|(f, e)| quote_spanned!(f.ty.span()=> #e::PACKED_SIZE))
        .collect();
    let ranges: Vec<_> = indices
        .iter()
        .zip(&sizes)
        .map(|(i, size)| quote!(Self::OFFSETS[#i]..Self::OFFSETS[#i] + #size))
        .collect();
    // A packed struct's fields may be unaligned: read them by copy, never by reference.
    let reads: Vec<_> = members
        .iter()
        .map(|m| {
            if record.packed {
                quote!(&{ self.#m })
            } else {
                quote!(&self.#m)
            }
        })
        .collect();
    let schema_names: Vec<_> = record.fields.iter().map(|f| f.name.as_str()).collect();

    let elbyte_doc = format!(
        "Bytes of one packed `{name}`: the sum of its fields' packed sizes \
         (`Element::ELBYTE`, usable in `const` context)."
    );
    let offsets_doc = format!(
        "Byte offset of each field of `{name}` in its packed record, in declaration order."
    );

    let pod_hooks = if generic {
        // The autoref probe needs a concrete `Self`; generic records pack field by field.
        TokenStream::new()
    } else {
        pod_hooks(record, &krate, &as_element)
    };
    let zero_size_check = if generic {
        TokenStream::new()
    } else {
        let message = format!(
            "`{name}` is zero-sized: a .ra record needs at least one byte, and all its fields \
             have none"
        );
        // `::core` rather than the crate path, so that every token, and the error, is on the name.
        quote_spanned! {ident.span()=>
            const _: () = ::core::assert!(<#ident>::ELBYTE > 0, #message);
        }
    };

    quote! {
        #[automatically_derived]
        impl #impl_generics #ident #ty_generics #where_clause {
            #[doc = #elbyte_doc]
            pub const ELBYTE: usize = #krate::__private::total([#(#sizes),*]);
            #[doc = #offsets_doc]
            pub const OFFSETS: [usize; #n] = #krate::__private::offsets([#(#sizes),*]);
        }

        #zero_size_check

        #[automatically_derived]
        impl #impl_generics #krate::Element for #ident #ty_generics #where_clause {
            const ELTYPE: #krate::ElType = #krate::ElType::User;
            const ELBYTE: usize = Self::ELBYTE;

            #[inline]
            fn write_le(&self, __out: &mut [u8]) {
                let __out = &mut __out[..Self::ELBYTE];
                #( #as_element::write_le(#reads, &mut __out[#ranges]); )*
            }

            #[inline]
            fn read_le(__bytes: &[u8]) -> #krate::Result<Self> {
                if __bytes.len() != Self::ELBYTE {
                    return #core::result::Result::Err(
                        #krate::__private::wrong_len(#name, Self::ELBYTE, __bytes.len()),
                    );
                }
                #core::result::Result::Ok(Self {
                    #( #members: #as_element::read_le(&__bytes[#ranges])?, )*
                })
            }

            #[inline]
            fn swap_bytes(__bytes: &mut [u8]) {
                let __bytes = &mut __bytes[..Self::ELBYTE];
                #( #as_element::swap_bytes(&mut __bytes[#ranges]); )*
            }

            fn layout() -> #krate::Layout {
                #krate::__private::record(#name, [
                    #( #krate::__private::field(#schema_names, Self::OFFSETS[#indices], #as_element::layout()), )*
                ])
            }

            #pod_hooks
        }
    }
}

/// The generics with a `FieldType: Element` bound per field, for generic records: the impl
/// applies exactly when every field is an element. Concrete records get no bounds, so that a
/// field type that is not an element is an error at the field rather than at a where-clause.
fn with_element_bounds(record: &Record, krate: &TokenStream) -> Generics {
    let mut generics = record.generics.clone();
    if !generics.params.is_empty() {
        let where_clause = generics.make_where_clause();
        for field in &record.fields {
            let ty = field.ty;
            where_clause
                .predicates
                .push(syn::parse_quote_spanned!(ty.span()=> #ty: #krate::Element));
        }
    }
    generics
}

/// The one-copy hooks of a concrete record. The memory of a value is its packed little-endian
/// bytes when the type has no padding, every field sits at its packed offset and is itself
/// one-copy, and the machine is little-endian: all of that folds to a constant. Whether the type
/// is `Pod` (read and write) or `NoUninit` (write only) is decided by the autoref probe
/// documented in `rawarray_serde::__private`.
fn pod_hooks(record: &Record, krate: &TokenStream, as_element: &[TokenStream]) -> TokenStream {
    let core = quote!(#krate::__private::core);
    let offsets = record.fields.iter().enumerate().map(|(i, f)| {
        let member = &f.member;
        quote!(#core::mem::offset_of!(Self, #member) == Self::OFFSETS[#i])
    });
    let memory_is_packed = quote! {
        #core::cfg!(target_endian = "little")
            && #core::mem::size_of::<Self>() == Self::ELBYTE
            #( && #offsets )*
    };
    let write_is_one_copy = as_element
        .iter()
        .map(|e| quote!(#e::as_pod_bytes(&[]).is_some()));
    let write_guard = quote!(#memory_is_packed #( && #write_is_one_copy )*);
    let read_is_one_copy = as_element
        .iter()
        .map(|e| quote!(#e::as_pod_bytes_mut(&mut []).is_some()));
    let read_guard = quote!(#memory_is_packed #( && #read_is_one_copy )*);
    let ops = quote! {{
        #[allow(unused_imports)]
        use #krate::__private::{ViaNoUninit as _, ViaNothing as _, ViaPod as _};
        (&&&#krate::__private::Probe::<Self>::NEW).pod_ops()
    }};
    quote! {
        #[inline]
        fn as_pod_bytes(__values: &[Self]) -> #core::option::Option<&[u8]> {
            if !(#write_guard) {
                return #core::option::Option::None;
            }
            #ops.as_bytes.map(|__f| __f(__values))
        }

        #[inline]
        fn as_pod_bytes_mut(__values: &mut [Self]) -> #core::option::Option<&mut [u8]> {
            if !(#read_guard) {
                return #core::option::Option::None;
            }
            #ops.as_bytes_mut.map(|__f| __f(__values))
        }

        #[inline]
        fn zeroed_pod_vec(
            __len: usize,
        ) -> #core::option::Option<#krate::Result<#krate::__private::Vec<Self>>> {
            if !(#read_guard) {
                return #core::option::Option::None;
            }
            #ops.zeroed_vec.map(|__f| __f(__len))
        }

        #[inline]
        fn cast_pod_slice(__bytes: &[u8]) -> #core::option::Option<&[Self]> {
            if !(#read_guard) {
                return #core::option::Option::None;
            }
            #ops.cast_slice.and_then(|__f| __f(__bytes))
        }
    }
}

/// A minimal impl emitted next to the errors, so that uses of the type elsewhere do not pile
/// more errors on the real one.
fn stub(input: &DeriveInput) -> TokenStream {
    let explicit = crate::ast::explicit_crate_path(&input.attrs);
    let krate = crate_path(explicit.as_ref());
    let core = quote!(#krate::__private::core);
    let ident = &input.ident;
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    quote! {
        #[automatically_derived]
        impl #impl_generics #ident #ty_generics #where_clause {
            #[doc(hidden)]
            pub const ELBYTE: usize = 0;
        }

        #[automatically_derived]
        impl #impl_generics #krate::Element for #ident #ty_generics #where_clause {
            const ELTYPE: #krate::ElType = #krate::ElType::User;
            const ELBYTE: usize = 0;
            fn write_le(&self, _: &mut [u8]) {
                #core::unreachable!()
            }
            fn read_le(_: &[u8]) -> #krate::Result<Self> {
                #core::unreachable!()
            }
            fn swap_bytes(_: &mut [u8]) {
                #core::unreachable!()
            }
            fn layout() -> #krate::Layout {
                #core::unreachable!()
            }
        }
    }
}
