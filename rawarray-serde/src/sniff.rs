//! What a file that is not `.ra` is, from its first bytes: the one table of other formats'
//! signatures, so that a bad-magic error says "it looks like an HDF5 file" in the library, the
//! `ra` tool and the Python package alike.
//!
//! ```
//! use rawarray_serde::sniff::{sniff, FileKind};
//! assert_eq!(sniff(b"\x89HDF\r\n\x1a\n\0\0\0\0"), Some(FileKind::Hdf5));
//! assert_eq!(sniff(b"rawarray\0\0\0\0"), None); // a .ra file (maybe a damaged one)
//! assert_eq!(FileKind::Png.description(), "a PNG image");
//! ```

/// A kind of file that is not `.ra`, recognised by its first bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FileKind {
    /// No bytes at all.
    Empty,
    /// A PNG image (`\x89PNG\r\n\x1a\n`).
    Png,
    /// A numpy `.npy` file (`\x93NUMPY`).
    Npy,
    /// A zip archive (`PK\x03\x04`), such as numpy's `.npz`.
    Zip,
    /// An HDF5 file (`\x89HDF\r\n\x1a\n`).
    Hdf5,
    /// gzip-compressed data (`\x1f\x8b`).
    Gzip,
    /// Text: valid UTF-8 without control characters other than newlines and tabs.
    Text,
}

impl FileKind {
    /// What the file is, in words ("an HDF5 file"), to follow "it looks like".
    pub fn description(self) -> &'static str {
        match self {
            FileKind::Empty => "an empty file",
            FileKind::Png => "a PNG image",
            FileKind::Npy => "a numpy .npy file",
            FileKind::Zip => "a zip archive (a numpy .npz?)",
            FileKind::Hdf5 => "an HDF5 file",
            FileKind::Gzip => "gzip-compressed data",
            FileKind::Text => "text",
        }
    }
}

/// The `.ra` signature, the ASCII bytes `rawarray`: the header's magic
/// ([`MAGIC`](crate::header::MAGIC) is these bytes read as a little-endian `u64`), kept here
/// with the other formats' signatures.
pub(crate) const RA_SIGNATURE: [u8; 8] = *b"rawarray";

/// Whether `head` starts with the whole `.ra` magic: a `.ra` file (maybe a damaged one), the
/// signature a caller choosing a reader by the first bytes looks for beside [`sniff`]'s.
///
/// ```
/// use rawarray_serde::sniff::is_ra;
/// assert!(is_ra(b"rawarray\0\0\0\0"));
/// assert!(!is_ra(b"rawa")); // too short to tell
/// assert!(!is_ra(b"\x93NUMPY\x01\0"));
/// ```
pub fn is_ra(head: &[u8]) -> bool {
    head.starts_with(&RA_SIGNATURE)
}

/// What the file starting with `head` is, if it is recognisably not a `.ra` file. A head that
/// starts with the `.ra` magic (or is a prefix of it) gives `None`: that is a `.ra` file, maybe
/// a damaged one, which the error that made the caller ask describes.
pub fn sniff(head: &[u8]) -> Option<FileKind> {
    let is_ra = if head.len() >= RA_SIGNATURE.len() {
        is_ra(head)
    } else {
        !head.is_empty() && RA_SIGNATURE.starts_with(head)
    };
    if is_ra {
        return None;
    }
    const SIGNATURES: [(&[u8], FileKind); 5] = [
        (b"\x89PNG\r\n\x1a\n", FileKind::Png),
        (b"\x93NUMPY", FileKind::Npy),
        (b"PK\x03\x04", FileKind::Zip),
        (b"\x89HDF\r\n\x1a\n", FileKind::Hdf5),
        (b"\x1f\x8b", FileKind::Gzip),
    ];
    if head.is_empty() {
        return Some(FileKind::Empty);
    }
    if let Some(&(_, kind)) = SIGNATURES.iter().find(|(sig, _)| head.starts_with(sig)) {
        return Some(kind);
    }
    // A head cut inside a multi-byte character is still text.
    let valid = match std::str::from_utf8(head) {
        Ok(s) => s,
        Err(e) if e.error_len().is_none() => {
            std::str::from_utf8(&head[..e.valid_up_to()]).unwrap_or_default()
        }
        Err(_) => return None,
    };
    let text = valid
        .chars()
        .all(|c| !c.is_control() || matches!(c, '\n' | '\r' | '\t'));
    text.then_some(FileKind::Text)
}

#[cfg(test)]
mod tests {
    use super::{sniff, FileKind};

    #[test]
    fn common_files_are_named() {
        assert_eq!(sniff(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR"), Some(FileKind::Png));
        assert_eq!(
            sniff(b"\x93NUMPY\x01\x00v\x00{'descr'"),
            Some(FileKind::Npy)
        );
        assert_eq!(sniff(b"PK\x03\x04\x14\0"), Some(FileKind::Zip));
        assert_eq!(sniff(b"\x1f\x8b\x08\0"), Some(FileKind::Gzip));
        assert_eq!(sniff(b""), Some(FileKind::Empty));
        assert_eq!(sniff(b"1,2,3\n4,5,6\n"), Some(FileKind::Text));
        assert_eq!(
            sniff("caf\u{e9}".as_bytes()[..4].as_ref()),
            Some(FileKind::Text)
        );
        assert_eq!(sniff(&[0, 1, 2, 255, 254]), None);
        assert_eq!(sniff(b"rawarray\0\0"), None);
        assert_eq!(sniff(b"rawa"), None);
    }
}
