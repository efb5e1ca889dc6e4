//! The chunked layout (flag bit 2, doc/chunked.md) for Python: `write`'s codec keywords as the
//! library's [`WriteOptions`], a file's chunk settings (`File.chunks`, `File.compression`), and
//! the whole decoded array read into memory numpy allocated. Every rule of the layout (names,
//! ids, levels, the chunk grid, the index) is the library's `codec` module's; decoding and
//! encoding run on its thread pool with the GIL released.

use std::io::Write;

use pyo3::buffer::PyBuffer;
use pyo3::prelude::*;
use rawarray_serde::codec::{ChunkMap, Config};
use rawarray_serde::section::{Section, Storage};
use rawarray_serde::{Codec, Header, RecordOptions, Shuffle, Trailer, WriteOptions};

use crate::errors::{ra_err, to_py};
use crate::file::{read_exact_at, RawFile};

/// The whole-section LZ4 block of flag bit 1, by the name the library's table gives it.
pub(crate) const LZ4_WHOLE: &str = rawarray_serde::codec::table::LZ4_WHOLE;
/// The filters, known by the names the library gives them (`Shuffle::name`).
const SHUFFLES: [Shuffle; 3] = [Shuffle::None, Shuffle::Byte, Shuffle::Bit];

/// `write`'s keywords as write options, and the chunked layout's if they select it. As in the
/// library, any of `codec`, `chunks` (file order), `level` and `shuffle` selects the chunked
/// layout, `compress` (or the codec `"lz4-whole"`) the whole-section LZ4 block, and both at
/// once is an error ([`WriteOptions::chunked`] says so).
pub(crate) fn write_options(
    compress: bool,
    codec: Option<&str>,
    chunks: Option<Vec<u64>>,
    level: Option<i32>,
    shuffle: Option<&str>,
    threads: usize,
) -> PyResult<(WriteOptions, Option<WriteOptions>)> {
    let mut opts = WriteOptions::new().compress(compress).threads(threads);
    match codec {
        Some(LZ4_WHOLE) => opts = opts.compress(true),
        Some(name) => opts = opts.codec(codec_named(name)?),
        None => {}
    }
    if let Some(name) = shuffle {
        opts = opts.shuffle(shuffle_named(name)?);
    }
    if let Some(l) = level {
        opts = opts.level(l);
    }
    if let Some(c) = chunks {
        opts = opts.chunks(c);
    }
    // The library's own check, before anything is written: both layouts at once.
    opts.flags().map_err(to_py)?;
    let chunked = (opts.storage() == Storage::Chunked).then(|| opts.clone());
    Ok((opts, chunked))
}

/// The codec of a name (`Codec::name`), or an error listing the names `write` takes.
pub(crate) fn codec_named(name: &str) -> PyResult<Codec> {
    Codec::all().find(|c| c.name() == name).ok_or_else(|| {
        ra_err(format!(
            "codec: expected one of {}, {LZ4_WHOLE}, found {name:?}",
            Codec::all().map(Codec::name).collect::<Vec<_>>().join(", ")
        ))
    })
}

/// `RecordWriter`'s keywords as the library's record options. Any of `codec`, `level`,
/// `shuffle` and `chunk_records` selects compression, as in the library; `threads` alone
/// selects nothing. The whole-section LZ4 block is refused by name: a record file grows by
/// appended chunks, and one LZ4 block over the whole section cannot be appended to.
pub(crate) fn record_options(
    mut opts: RecordOptions,
    codec: Option<&str>,
    level: Option<i32>,
    shuffle: Option<&str>,
    chunk_records: Option<u64>,
    threads: usize,
) -> PyResult<RecordOptions> {
    let mut storage: Option<WriteOptions> = None;
    if let Some(name) = codec {
        let codec = Codec::all().find(|c| c.name() == name).ok_or_else(|| {
            let names = Codec::all().map(Codec::name).collect::<Vec<_>>().join(", ");
            ra_err(if name == LZ4_WHOLE {
                format!(
                    "codec: a RecordWriter cannot write {LZ4_WHOLE:?} (one LZ4 block over the \
                         whole data section cannot be appended to): expected one of {names}"
                )
            } else {
                format!("codec: expected one of {names}, found {name:?}")
            })
        })?;
        storage = Some(storage.unwrap_or_else(WriteOptions::chunked).codec(codec));
    }
    if let Some(name) = shuffle {
        storage = Some(
            storage
                .unwrap_or_else(WriteOptions::chunked)
                .shuffle(shuffle_named(name)?),
        );
    }
    if let Some(l) = level {
        storage = Some(storage.unwrap_or_else(WriteOptions::chunked).level(l));
    }
    if let Some(n) = chunk_records {
        storage = Some(
            storage
                .unwrap_or_else(WriteOptions::chunked)
                .chunks(vec![n]),
        );
    }
    if let Some(s) = storage {
        opts = opts.storage(s.threads(threads));
    }
    Ok(opts.threads(threads))
}

/// The filter of a name (`Shuffle::name`), or an error listing the names.
pub(crate) fn shuffle_named(name: &str) -> PyResult<Shuffle> {
    SHUFFLES
        .into_iter()
        .find(|s| s.name() == name)
        .ok_or_else(|| {
            ra_err(format!(
                "shuffle: expected one of {}, found {name:?}",
                SHUFFLES.map(Shuffle::name).join(", ")
            ))
        })
}

/// Writes a chunked file: `header` (plain), its data encoded by the library's
/// encoder (chunks compressed in parallel), and the trailer block placed after the section.
/// Into `w`: a temporary file, or an object-store upload.
pub(crate) fn write_chunked_to(
    w: &mut dyn Write,
    header: &Header,
    raw: &[u8],
    opts: &WriteOptions,
    trailer: Option<&Trailer>,
) -> rawarray_serde::Result<()> {
    let schema = trailer.and_then(|t| t.schema.as_ref());
    let (header, section) = rawarray_serde::codec::encode_with(header, raw, opts, schema)?;
    let end = header.encoded_len() as u64 + header.size;
    w.write_all(&header.encode())?;
    w.write_all(&section)?;
    if let Some(t) = trailer {
        w.write_all(&t.encode_block(end))?;
    }
    Ok(())
}

/// A chunked file's settings: `(codec, level, shuffle, chunk shape in the file's dim order,
/// raw bytes per block)`.
pub(crate) type ChunkSettings = (String, i32, String, Vec<u64>, u64);

/// A validated config's settings, as `File.chunks` and `File.compression` show them (the
/// blocks' raw bytes: version 1's block bytes, or version 2's block shape times `elbyte`).
pub(crate) fn settings_of(c: &Config, elbyte: u64) -> ChunkSettings {
    let block = match &c.blocks {
        rawarray_serde::codec::Blocks::Bytes(b) => *b,
        rawarray_serde::codec::Blocks::Shape(s) => s.iter().product::<u64>() * elbyte,
    };
    (
        c.codec.name().to_string(),
        c.level,
        c.shuffle().map_or_else(
            || {
                c.filters
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("+")
            },
            |s| s.name().to_string(),
        ),
        c.chunk.clone(),
        block,
    )
}

/// The config of the chunked section at `base` of `read`'s source (two reads: the config's
/// first bytes, which say its length, then the rest of it).
pub(crate) fn read_config(
    header: &Header,
    base: u64,
    read: impl Fn(&mut [u8], u64) -> std::io::Result<()>,
) -> rawarray_serde::Result<Config> {
    let probe = ChunkMap::config_probe(header);
    let mut bytes = vec![0u8; (probe.end - probe.start) as usize];
    read(&mut bytes, base + probe.start)?;
    let len = ChunkMap::config_len(header, &bytes)? as usize;
    if len > bytes.len() {
        let at = bytes.len();
        bytes.resize(len, 0);
        read(&mut bytes[at..], base + at as u64)?;
    }
    Config::decode(header, &bytes)
}

/// The chunk settings of a chunked file, as stored in its config; `None` for any other file.
/// One read of the config, which the library validated when the file was opened.
#[pyfunction]
pub(crate) fn chunk_config(py: Python<'_>, raw: &RawFile) -> PyResult<Option<ChunkSettings>> {
    let header = raw.header();
    if !header.flags.is_chunked() {
        return Ok(None);
    }
    py.detach(|| -> rawarray_serde::Result<_> {
        let config = raw.checked(|| {
            read_config(header, header.encoded_len() as u64, |b, at| {
                read_exact_at(&raw.file, b, at)
            })
        })?;
        Ok(Some(settings_of(&config, header.elbyte)))
    })
    .map_err(to_py)
}

/// Decodes the whole array of a chunked file into `out` (a writable, C-contiguous buffer of
/// exactly its plain bytes that numpy allocated, so the result is an ordinary array that owns
/// its memory): chunks decoded in parallel on the library's pool, the GIL released. Primitive
/// scalars come out little-endian, as `decode` gives them.
#[pyfunction]
pub(crate) fn read_chunked_into(py: Python<'_>, raw: &RawFile, out: PyBuffer<u8>) -> PyResult<()> {
    let header = raw.header();
    if !header.flags.is_chunked() {
        return Err(ra_err("read_chunked_into reads chunked files (flag bit 2)"));
    }
    if out.readonly() || !out.is_c_contiguous() {
        return Err(ra_err(
            "read_chunked_into needs a writable, C-contiguous buffer",
        ));
    }
    if out.len_bytes() as u64 != header.data_len() {
        return Err(ra_err(format!(
            "read_chunked_into: expected a buffer of {} bytes, found {}",
            header.data_len(),
            out.len_bytes()
        )));
    }
    if out.len_bytes() == 0 {
        return Ok(()); // an empty buffer may export a null pointer: nothing to decode
    }
    // SAFETY: `out` holds the exporter's buffer, checked writable and C-contiguous, with
    // len_bytes() bytes at buf_ptr(); nothing else in Rust aliases it. Python code in another
    // thread could touch the array while the GIL is released below, as with numpy's own
    // `readinto`; it would see partly decoded bytes, never memory outside the buffer.
    let bytes: &mut [u8] =
        unsafe { std::slice::from_raw_parts_mut(out.buf_ptr() as *mut u8, out.len_bytes()) };
    py.detach(|| -> rawarray_serde::Result<()> {
        // The descriptor the file was opened by: the bytes of the file opened, whatever the
        // path names now.
        raw.checked(|| Section::open(header, &raw.file)?.read_all_into(bytes))?;
        if header.is_big_endian() {
            // The library's table of scalar widths (complex halves apart); user-defined
            // elements keep their bytes, as `decode` leaves them.
            if let Some(w) = header.eltype.swap_width(header.elbyte) {
                if w > 1 {
                    bytes.chunks_exact_mut(w as usize).for_each(<[u8]>::reverse);
                }
            }
        }
        Ok(())
    })
    .map_err(to_py)
}

/// Adds this module's functions to the extension module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(chunk_config, m)?)?;
    m.add_function(wrap_pyfunction!(read_chunked_into, m)?)?;
    Ok(())
}
