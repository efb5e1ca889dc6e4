//! Inputs `#[derive(RaRecord)]` rejects, each with an error at the offending token
//! (`tests/ui/*.stderr`; regenerate with `TRYBUILD=overwrite` and read them).

#[test]
fn rejected_inputs() {
    trybuild::TestCases::new().compile_fail("tests/ui/*.rs");
}
