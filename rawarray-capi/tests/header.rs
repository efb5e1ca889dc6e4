//! The checked-in C header, `include/rawarray.h`, is what cbindgen generates from `src/` with
//! `cbindgen.toml`: a change to the API that is not in the header fails here.
//! `RAWARRAY_BLESS=1 cargo test -p rawarray-capi --test header` rewrites it.

use std::path::Path;

#[test]
fn the_checked_in_header_is_what_cbindgen_generates() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut generated = Vec::new();
    cbindgen::generate(dir)
        .expect("cbindgen parses src/")
        .write(&mut generated);
    let generated = String::from_utf8(generated).unwrap();
    let path = dir.join("include/rawarray.h");
    if std::env::var_os("RAWARRAY_BLESS").is_some() {
        std::fs::write(&path, &generated).unwrap();
        return;
    }
    let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
    if checked_in != generated {
        let line = checked_in
            .lines()
            .zip(generated.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| checked_in.lines().count().min(generated.lines().count()));
        panic!(
            "{} is not what cbindgen generates from src/ (first difference at line {}: {:?} vs generated {:?}); \
             run RAWARRAY_BLESS=1 cargo test -p rawarray-capi --test header",
            path.display(),
            line + 1,
            checked_in.lines().nth(line).unwrap_or("<end>"),
            generated.lines().nth(line).unwrap_or("<end>")
        );
    }
}
