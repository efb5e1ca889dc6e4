//! What a file that is not `.ra` looks like, from its first bytes, so that `ra info` can say
//! "a PNG image" instead of a magic number.

use std::io::Read;
use std::path::Path;

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
    if head.starts_with(b"rawarray") {
        return None;
    }
    let name = path.display();
    let stem = path.with_extension("ra");
    let convert = |what: &str| {
        format!(
            "it looks like {what}; `ra convert {name} {}` makes a .ra file of it",
            stem.display()
        )
    };
    if head.is_empty() {
        return Some("the file is empty".into());
    }
    if head.starts_with(b"\x89PNG\r\n\x1a\n") {
        return Some(convert("a PNG image"));
    }
    if head.starts_with(b"\x93NUMPY") {
        return Some(convert("a numpy .npy file"));
    }
    if head.starts_with(b"PK\x03\x04") {
        return Some("it looks like a zip archive (a numpy .npz?): unpack it first".into());
    }
    if head.starts_with(b"\x89HDF\r\n\x1a\n") {
        return Some("it looks like an HDF5 file".into());
    }
    if head.starts_with(b"\x1f\x8b") {
        return Some("it looks like gzip-compressed data: decompress it first".into());
    }
    let text = std::str::from_utf8(head).is_ok_and(|s| {
        s.chars()
            .all(|c| !c.is_control() || matches!(c, '\n' | '\r' | '\t'))
    });
    if text {
        return Some("it looks like text, not a .ra file".into());
    }
    None
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
        assert_eq!(describe(b"", p).unwrap(), "the file is empty");
        assert!(describe(b"1,2,3\n4,5,6\n", p).unwrap().contains("text"));
        assert_eq!(describe(&[0, 1, 2, 255, 254], p), None);
        assert_eq!(describe(b"rawarray\0\0", p), None);
    }
}
