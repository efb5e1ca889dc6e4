//! The README's copy of the serde mapping table is identical to its one source,
//! `rawarray-serde/doc/serde-mapping.md`, which rustdoc shows on the crate's front page.
//! `RAWARRAY_BLESS=1 cargo test --test readme_sync` rewrites the README's copy.

#[test]
fn the_readme_serde_table_is_the_crates() {
    let source = include_str!("../rawarray-serde/doc/serde-mapping.md");
    let readme_path = concat!(env!("CARGO_MANIFEST_DIR"), "/README.md");
    let readme = std::fs::read_to_string(readme_path).unwrap();
    let open = readme
        .find("<!-- serde-mapping")
        .and_then(|i| readme[i..].find("-->\n").map(|j| i + j + 4))
        .expect("README has a <!-- serde-mapping ... --> marker");
    let close = readme[open..]
        .find("<!-- /serde-mapping -->")
        .map(|j| open + j)
        .expect("README has a <!-- /serde-mapping --> marker");
    if readme[open..close] != *source && std::env::var_os("RAWARRAY_BLESS").is_some() {
        let blessed = format!("{}{source}{}", &readme[..open], &readme[close..]);
        std::fs::write(readme_path, blessed).unwrap();
        return;
    }
    assert_eq!(
        &readme[open..close],
        source,
        "README.md's serde table differs from rawarray-serde/doc/serde-mapping.md; edit the \
         latter and run RAWARRAY_BLESS=1 cargo test --test readme_sync"
    );
}
