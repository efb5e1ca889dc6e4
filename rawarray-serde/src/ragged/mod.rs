//! Ragged arrays: a list of rows of different lengths, each a 1-d run of fixed-size values,
//! found through an offsets array of `u64`s (flag bit 3; doc/format.md, section 10).
//!
//! ```text
//! header: flags = 8, dims = [value dims..., values m, rows n], size = 8 x slots + m x value bytes
//! data:   offsets (slots u64s: offsets[0..=n] used, the rest free) | values (m values)
//! ```
//!
//! Row `k` is `values[offsets[k]..offsets[k + 1]]`: O(1), touching no other row. The offsets
//! region may hold more slots than `n + 1` ([`RaggedWriter`] reserves them so that rows can be
//! appended without moving the values); readers never look past `offsets[n]`.
//!
//! With flag bit 2 as well (flags = 12, section 10.2) the values are compressed: the data
//! section is `slots (u64) | offsets | the values as a chunked section` of the codec layer
//! ([`crate::codec`]), so a row still finds its values in O(1) and decodes only their chunks
//! ([`Ragged::write_file_with`]).

mod header;
mod reader;
mod recover;
mod values;
mod writer;

pub(crate) use header::later_values_size;
pub use header::{check_offsets, RaggedHeader, RAGGED};
pub use reader::{DynRagged, RaggedReader};
pub(crate) use recover::recover_locked;
pub use values::Ragged;
pub(crate) use values::{text_marked, write_head, write_tail, Parts};
pub use writer::{RaggedOptions, RaggedWriter};

#[cfg(test)]
mod tests {
    use super::header::grown_slots;
    use crate::{ElType, Layout, RaggedHeader};

    #[test]
    fn a_ragged_file_written_from_parts_is_checked_first() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.ra");
        let u8s = Layout::scalar(ElType::Uint, 1);
        let h = RaggedHeader::new(ElType::Uint, 1, vec![], 3, 2, 3).unwrap();
        let write = |h: &RaggedHeader, offsets: &[u64], values: &[u8], text: bool| {
            h.write_file(
                &path,
                offsets,
                values,
                u8s.clone(),
                text,
                &Default::default(),
            )
            .map_err(|e| e.to_string())
        };
        assert!(write(&h, &[0, 1], b"abc", false)
            .unwrap_err()
            .contains("rows + 1 = 3 offsets"));
        assert!(write(&h, &[0, 1, 3], b"ab", false)
            .unwrap_err()
            .contains("expected 3 bytes"));
        assert!(write(&h, &[0, 2, 1], b"abc", false).is_err());
        assert!(write(&h, &[0, 1, 3], b"a\xff\xfe", true)
            .unwrap_err()
            .contains("row 1 is not UTF-8"));
        let spare = RaggedHeader::new(ElType::Uint, 1, vec![], 3, 2, 9).unwrap();
        assert!(write(&spare, &[0, 1, 3], b"abc", false)
            .unwrap_err()
            .contains("9 slots"));
        assert!(!path.exists());
        write(&h, &[0, 1, 3], b"abc", true).unwrap();
        let r = crate::Ragged::<u8>::read_file(&path).unwrap();
        assert_eq!(r.to_strings().unwrap(), ["a", "bc"]);
    }

    #[test]
    fn the_offsets_region_grows_by_the_size_of_a_row() {
        // 128 bytes a row: g = 1 + 136 / 16 = 9.5.
        assert_eq!(grown_slots(512, 513, 512, 512 * 128), 4864);
        // Empty and tiny rows double, as before.
        assert_eq!(grown_slots(512, 513, 512, 0), 1024);
        assert_eq!(grown_slots(512, 513, 512, 512 * 4), 1024);
        // Large rows grow 16-fold at most.
        assert_eq!(grown_slots(512, 513, 512, 512 * 4096), 8192);
        // A flush of many rows at once gets the slots it needs at least.
        assert_eq!(grown_slots(512, 100_000, 99_999, 0), 199_998);
        // Huge counts saturate rather than overflow.
        assert!(grown_slots(u64::MAX / 4, u64::MAX / 4, u64::MAX / 4, u64::MAX) >= u64::MAX / 4);
    }
}
