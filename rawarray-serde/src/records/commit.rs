//! The steps of a commit every appending writer shares: the spare trailer copy kept ahead of
//! the data, a file settled as `header | data | trailer`, and headers short enough to be
//! rewritten with one untearable `pwrite`.

use std::fs::File;

use crate::error::{Error, Result};
use crate::fileio::{read_exact_at, write_all_at};
use crate::header::Header;
use crate::trailer::{block_len, encode_block_into};

/// Longest header updated in place: one 512-byte sector, inside the first page.
const MAX_HEADER_LEN: usize = 512;

/// Least free space left before the spare trailer copy when it moves.
const MIN_SLACK: u64 = 64 << 10;

/// Keeps the bytes up to `end`, and a trailer block after them, clear of the spare copy at
/// `spare_at`: if they would reach it, a new spare copy of `json` is written (and synced, if
/// `sync`) further out, leaving free space of 1/8 of the data after a header of `header_len`
/// bytes, at least 64 KiB. Shared by every appending writer (records, ragged rows).
pub(crate) fn reserve_spare(
    file: &File,
    json: &[u8],
    header_len: u64,
    spare_at: &mut u64,
    end: u64,
    sync: bool,
) -> Result<()> {
    let block = block_len(json.len()) as u64;
    if end + block <= *spare_at {
        return Ok(());
    }
    let data_len = end - header_len;
    let spare = (end + block + (data_len / 8).max(MIN_SLACK)).next_multiple_of(4096);
    let mut bytes = Vec::with_capacity(block as usize);
    encode_block_into(json, 0, &mut bytes);
    write_all_at(file, &bytes, spare)?;
    if sync {
        file.sync_data()?;
    }
    *spare_at = spare;
    Ok(())
}

/// Leaves a file as `header | data | block` with the block (for the data end) last, keeping a
/// valid trailer copy at every instant: a spare copy is written beyond the block first if
/// there is no valid one, then the block at the data end, then the rest is cut off.
/// `spare` is the start of a valid block at the end of the file, if there is one.
pub(crate) fn settle(
    file: &File,
    end: u64,
    json: &[u8],
    file_len: u64,
    spare: Option<u64>,
    sync: bool,
) -> Result<()> {
    let mut forward = Vec::with_capacity(block_len(json.len()));
    encode_block_into(json, end, &mut forward);
    let settled = end + forward.len() as u64;
    if file_len == settled {
        let mut current = vec![0u8; forward.len()];
        read_exact_at(file, &mut current, end)?;
        if current == forward {
            return Ok(());
        }
    }
    let sync = || -> Result<()> {
        if sync {
            file.sync_data()?;
        }
        Ok(())
    };
    if spare.is_none_or(|s| s < settled) {
        let mut block = Vec::with_capacity(forward.len());
        encode_block_into(json, 0, &mut block);
        write_all_at(file, &block, file_len.max(settled))?;
        sync()?;
    }
    write_all_at(file, &forward, end)?;
    sync()?;
    file.set_len(settled)?;
    sync()
}

/// Refuses headers too long to be rewritten with one untearable write.
pub(crate) fn check_header_len(header: &Header) -> Result<()> {
    if header.encoded_len() > MAX_HEADER_LEN {
        return Err(Error::unsupported(format!(
            "a header of {} dims ({} bytes) cannot be updated in one untearable write \
             (at most {MAX_HEADER_LEN} bytes, {} dims)",
            header.dims.len(),
            header.encoded_len(),
            (MAX_HEADER_LEN - crate::header::FIXED_HEADER_LEN) / 8
        )));
    }
    Ok(())
}
