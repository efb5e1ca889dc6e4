//! The README's copies of the crate's tables are identical to their one source:
//! - the serde mapping, `rawarray-serde/doc/serde-mapping.md` (rustdoc shows it on the crate's
//!   front page);
//! - the element types, `rawarray-serde/doc/element-types.md`, itself rendered here from the
//!   library's element-type table (`ScalarType::ALL`), so the docs cannot drift from the code.
//!
//! `RAWARRAY_BLESS=1 cargo test --test readme_sync` rewrites the copies.

use rawarray_serde::eltype::ScalarType;

fn bless() -> bool {
    std::env::var_os("RAWARRAY_BLESS").is_some()
}

/// Checks (or, blessing, rewrites) the text between `<!-- name ... -->` and `<!-- /name -->`
/// in the README against `source`.
fn readme_section_is(name: &str, source: &str, from: &str) {
    // The tests run on threads; one may be rewriting the README (blessing) while another reads.
    static README: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one_at_a_time = README
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let readme_path = concat!(env!("CARGO_MANIFEST_DIR"), "/README.md");
    let readme = std::fs::read_to_string(readme_path).unwrap();
    let open = readme
        .find(&format!("<!-- {name}"))
        .and_then(|i| readme[i..].find("-->\n").map(|j| i + j + 4))
        .unwrap_or_else(|| panic!("README has a <!-- {name} ... --> marker"));
    let close = readme[open..]
        .find(&format!("<!-- /{name} -->"))
        .map(|j| open + j)
        .unwrap_or_else(|| panic!("README has a <!-- /{name} --> marker"));
    if readme[open..close] != *source && bless() {
        let blessed = format!("{}{source}{}", &readme[..open], &readme[close..]);
        std::fs::write(readme_path, blessed).unwrap();
        return;
    }
    assert_eq!(
        &readme[open..close],
        source,
        "README.md's {name} table differs from {from}; edit the latter and run \
         RAWARRAY_BLESS=1 cargo test --test readme_sync"
    );
}

#[test]
fn the_readme_serde_table_is_the_crates() {
    let source = include_str!("../rawarray-serde/doc/serde-mapping.md");
    readme_section_is(
        "serde-mapping",
        source,
        "rawarray-serde/doc/serde-mapping.md",
    );
}

/// The element-type table in words: one row per `ScalarType`.
fn render_element_types() -> String {
    let mut out =
        String::from("| Rust | eltype | elbyte | numpy dtype | name |\n|---|---|---|---|---|\n");
    for t in ScalarType::ALL {
        let rust = t
            .rust_type()
            .map_or("none (raw bytes)".to_string(), |r| format!("`{r}`"));
        // A `|` inside a table cell ends the cell, even in code: escaped.
        let numpy = t.numpy().map_or("none".to_string(), |d| {
            format!("`{}`", d.replace('|', "\\|"))
        });
        out += &format!(
            "| {rust} | {} ({}) | {} | {numpy} | {} |\n",
            t.eltype().code(),
            t.eltype(),
            t.elbyte(),
            t.label()
        );
    }
    out
}

#[test]
fn the_element_type_tables_are_the_librarys() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/rawarray-serde/doc/element-types.md"
    );
    let rendered = render_element_types();
    let doc = std::fs::read_to_string(path).unwrap_or_default();
    if doc != rendered && bless() {
        std::fs::write(path, &rendered).unwrap();
    } else {
        assert_eq!(
            doc, rendered,
            "rawarray-serde/doc/element-types.md differs from the library's element-type table; \
             run RAWARRAY_BLESS=1 cargo test --test readme_sync"
        );
    }
    readme_section_is(
        "element-types",
        &rendered,
        "the library's element-type table",
    );
}
