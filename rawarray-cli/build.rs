//! `RAWARRAY_SKIP_PYTHON=1` compiles the numpy interop tests as ignored (`cfg(skip_python)`),
//! so a run without Python reports them as ignored with the reason, never as passed.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(skip_python)");
    println!("cargo::rerun-if-env-changed=RAWARRAY_SKIP_PYTHON");
    if std::env::var_os("RAWARRAY_SKIP_PYTHON").is_some_and(|v| v == "1") {
        println!("cargo::rustc-cfg=skip_python");
    }
}
