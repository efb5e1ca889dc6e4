//! What a file that is not `.ra` looks like, so that `ra info` can say "a PNG image" instead
//! of a magic number. The formats are recognised by the library ([`rawarray_serde::sniff`],
//! which its bad-magic errors use too); this module adds what `ra` can do about each.

use std::io::Read;
use std::path::Path;

use rawarray_serde::sniff::{sniff, FileKind};

/// A short description of what the file seems to be, and what to do with it, if recognisable
/// and not a `.ra` file (one that starts with the magic is a damaged `.ra` file, described by
/// the error that made the caller ask).
pub fn looks_like(path: &Path) -> Option<String> {
    // Only regular files: opening a FIFO would wait for a writer.
    if !std::fs::metadata(path).ok()?.is_file() {
        return None;
    }
    let mut head = [0u8; 512];
    let n = std::fs::File::open(path)
        .and_then(|f| f.take(head.len() as u64).read(&mut head))
        .ok()?;
    describe(&head[..n], path)
}

fn describe(head: &[u8], path: &Path) -> Option<String> {
    let kind = sniff(head)?;
    let what = kind.description();
    let advice = match kind {
        FileKind::Empty => return Some("the file is empty".into()),
        FileKind::Text => return Some("it looks like text, not a .ra file".into()),
        FileKind::Png | FileKind::Npy => format!(
            "; `ra convert {} {}` makes a .ra file of it",
            path.display(),
            path.with_extension("ra").display()
        ),
        FileKind::Zip => ": unpack it first".into(),
        FileKind::Gzip => ": decompress it first".into(),
        _ => String::new(),
    };
    Some(format!("it looks like {what}{advice}"))
}

#[cfg(test)]
mod tests {
    use super::describe;
    use std::path::Path;

    #[test]
    fn common_files_are_named() {
        let p = Path::new("x.png");
        let png = describe(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR", p).unwrap();
        assert!(
            png.contains("a PNG image") && png.contains("ra convert x.png x.ra"),
            "{png}"
        );
        let npy = describe(b"\x93NUMPY\x01\x00v\x00{'descr'", Path::new("a.npy")).unwrap();
        assert!(npy.contains("numpy .npy"), "{npy}");
        let h5 = describe(b"\x89HDF\r\n\x1a\n\0\0", Path::new("a.h5")).unwrap();
        assert_eq!(h5, "it looks like an HDF5 file");
        assert_eq!(describe(b"", p).unwrap(), "the file is empty");
        assert!(describe(b"1,2,3\n4,5,6\n", p).unwrap().contains("text"));
        assert_eq!(describe(&[0, 1, 2, 255, 254], p), None);
        assert_eq!(describe(b"rawarray\0\0", p), None);
    }
}
