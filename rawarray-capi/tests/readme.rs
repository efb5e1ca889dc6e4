//! The README's C and Fortran examples are the example files the tests compile and run
//! (`RAWARRAY_BLESS=1 cargo test -p rawarray-capi --test readme` copies the files in).

use std::path::Path;

fn readme_block_is(name: &str, source: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md");
    let readme = std::fs::read_to_string(&path).unwrap();
    let open = readme
        .find(&format!("<!-- {name} -->\n"))
        .and_then(|i| {
            readme[i..]
                .find("```")
                .and_then(|j| readme[i + j..].find('\n').map(|k| i + j + k + 1))
        })
        .unwrap_or_else(|| panic!("README has a <!-- {name} --> block"));
    let close = readme[open..]
        .find(&format!("```\n<!-- /{name} -->"))
        .map(|j| open + j)
        .unwrap_or_else(|| panic!("README closes the {name} block"));
    if readme[open..close] != *source && std::env::var_os("RAWARRAY_BLESS").is_some() {
        std::fs::write(
            &path,
            format!("{}{source}{}", &readme[..open], &readme[close..]),
        )
        .unwrap();
        return;
    }
    assert_eq!(
        &readme[open..close],
        source,
        "README.md's {name} differs from examples/{name}: run RAWARRAY_BLESS=1 cargo test -p rawarray-capi --test readme"
    );
}

#[test]
fn the_readme_c_example_is_examples_example_c() {
    readme_block_is("example.c", include_str!("../examples/example.c"));
}

#[test]
fn the_readme_fortran_example_is_examples_example_f90() {
    readme_block_is("example.f90", include_str!("../examples/example.f90"));
}
