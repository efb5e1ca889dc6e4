//! `ra_open` of a ragged file (flag bit 3, chunked values or plain) says what the file is and
//! which call opens it: told by the library's error, not by reading the file's flags again.

use rawarray::*;
use rawarray_serde::{Codec, Ragged, WriteOptions};

#[test]
fn ra_open_of_a_ragged_file_points_at_ra_ragged_open() {
    let dir = tempfile::tempdir().unwrap();
    let rows = Ragged::from_rows([vec![1.5f32], vec![2.5, 3.5]]);
    for (name, opts) in [
        ("plain.ra", WriteOptions::new()),
        ("zstd.ra", WriteOptions::new().codec(Codec::Zstd)),
    ] {
        let path = dir.path().join(name);
        rows.write_file_with(&path, &opts).unwrap();
        let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
        let mut f = std::ptr::null_mut();
        // SAFETY: the path is a valid C string and `f` a valid place for the handle; a failed
        // open leaves nothing to free.
        let (st, msg) = unsafe {
            let st = ra_open(c.as_ptr(), &mut f);
            let msg = std::ffi::CStr::from_ptr(ra_last_error_message());
            (st, msg.to_str().unwrap().to_owned())
        };
        assert_ne!(st, RA_OK, "{name}");
        assert!(f.is_null(), "{name}");
        assert!(msg.starts_with(&format!("{}: ", path.display())), "{msg}");
        assert!(
            msg.contains("a ragged file") && msg.contains("ra_ragged_open"),
            "{msg}"
        );
    }
}
