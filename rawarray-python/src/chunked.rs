//! The chunked layout (flag bit 2, doc/chunked.md) for Python: `write`'s codec keywords as the
//! library's [`WriteOptions`], a file's chunk settings (`File.chunks`, `File.compression`), and
//! the whole decoded array read into memory numpy allocated. Every rule of the layout (names,
//! ids, levels, the chunk grid, the index) is the library's `codec` module's; decoding and
//! encoding run on its thread pool with the GIL released.

use pyo3::buffer::PyBuffer;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyList, PyString, PyTuple};
use rawarray_serde::codec::table::FILTERS;
use rawarray_serde::codec::{Config, Filter};
use rawarray_serde::section::{Section, Warning};
use rawarray_serde::{Codec, RecordOptions, Shuffle, WriteOptions};

use crate::buffer::output_bytes;
use crate::errors::{ra_err, to_py};
use crate::file::RawFile;

/// The whole-section LZ4 block of flag bit 1, by the name the library's table gives it.
pub(crate) const LZ4_WHOLE: &str = rawarray_serde::codec::table::LZ4_WHOLE;
/// The one-filter shorthand, known by the names the library gives it (`Shuffle::name`).
const SHUFFLES: [Shuffle; 3] = [Shuffle::None, Shuffle::Byte, Shuffle::Bit];

/// What `filters=` of a writer is, for messages that tell it apart from a reader's (the
/// filter names are the library's table's).
fn writer_filters() -> String {
    format!(
        "filters= of a writer is the codec pipeline: a list of filters applied in order before \
         the codec, each a name or a (name, param) tuple, such as [(\"bitround\", 10), \
         \"shuffle\", \"bytedelta\"] (the filters: {})",
        FILTERS
            .iter()
            .map(|f| match f.param {
                Some(p) if f.param_optional => format!("{:?} or ({:?}, {p})", f.name, f.name),
                Some(p) => format!("({:?}, {p})", f.name),
                None => format!("{:?}", f.name),
            })
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// A writer's `filters=` (a list of names and `(name, param)` tuples) as the library's
/// filters, in order; a reader's row predicates (`(column, op, value)` tuples) are refused
/// with a message saying which `filters=` is which.
pub(crate) fn filters_from_py(filters: &Bound<'_, PyAny>) -> PyResult<Vec<Filter>> {
    let shown = |o: &Bound<'_, PyAny>| o.repr().map_or_else(|_| "?".into(), |r| r.to_string());
    let predicate_form = |found: &Bound<'_, PyAny>| {
        ra_err(format!(
            "{}; found {}, a row predicate (column, op, value): that is the filters= of a \
             reader (rawarray.read, File.to_arrow), which selects rows",
            writer_filters(),
            shown(found)
        ))
    };
    if filters.is_instance_of::<PyString>() {
        return Err(ra_err(format!(
            "{}; found the str {}, not a list: give [{}]",
            writer_filters(),
            shown(filters),
            shown(filters)
        )));
    }
    let Ok(items) = filters.try_iter() else {
        return Err(ra_err(format!(
            "{}; found a {}",
            writer_filters(),
            filters.get_type().name()?
        )));
    };
    let mut out = Vec::new();
    for (i, item) in items.enumerate() {
        let item = item?;
        let spec = if let Ok(name) = item.extract::<String>() {
            name
        } else if let Ok(t) = item.cast::<PyTuple>() {
            match t.len() {
                2 => {
                    let name: String = t.get_item(0)?.extract().map_err(|_| {
                        ra_err(format!(
                            "filters[{i}]: {}: the name must be a str",
                            shown(&item)
                        ))
                    })?;
                    let param = t.get_item(1)?;
                    let param: u32 = if param.is_instance_of::<PyBool>() {
                        None
                    } else {
                        param.extract().ok()
                    }
                    .ok_or_else(|| {
                        ra_err(format!(
                            "filters[{i}]: {}: the parameter must be a whole number from 0 to 4294967295",
                            shown(&item)
                        ))
                    })?;
                    format!("{name}:{param}")
                }
                3 => return Err(predicate_form(&item)),
                _ => {
                    return Err(ra_err(format!(
                        "{}; found {} at filters[{i}], a tuple of {} items",
                        writer_filters(),
                        shown(&item),
                        t.len()
                    )))
                }
            }
        } else if item.is_instance_of::<PyList>() {
            // A reader's OR-ed lists of predicates.
            return Err(predicate_form(&item));
        } else {
            return Err(ra_err(format!(
                "{}; found {} at filters[{i}]",
                writer_filters(),
                shown(&item)
            )));
        };
        out.push(Filter::parse(&spec).map_err(|e| {
            // A filter that needs its parameter, named alone: Python's way to give it (the
            // library's message shows `ra`'s NAME:PARAM).
            let needs = FILTERS
                .iter()
                .find(|f| f.name == spec)
                .and_then(|f| f.param);
            ra_err(match needs {
                Some(p) => format!(
                    "filters[{i}]: filter {spec} needs its {p}: give it as a tuple, ({spec:?}, {})",
                    p.to_uppercase()
                ),
                None => format!("filters[{i}]: {e}"),
            })
        })?);
    }
    Ok(out)
}

/// The chunked layout's keywords, as every writer of the package takes them (dims in the
/// file's order). Any of them but `threads` selects the chunked layout, as in the library.
#[derive(Default)]
pub(crate) struct Packing {
    /// `codec=`: a name of the library's table, or `"lz4-whole"`.
    pub(crate) codec: Option<String>,
    /// `level=`.
    pub(crate) level: Option<i32>,
    /// `shuffle=`: the one-filter shorthand (`"byte"`, `"bit"`, `"none"`).
    pub(crate) shuffle: Option<String>,
    /// `filters=`, parsed ([`filters_from_py`]).
    pub(crate) filters: Option<Vec<Filter>>,
    /// `chunks=`, file order.
    pub(crate) chunks: Option<Vec<u64>>,
    /// `blocks=`, file order.
    pub(crate) blocks: Option<Vec<u64>>,
    /// `layout_version=`: 1 (`RACHUNK1`) or 2.
    pub(crate) layout_version: Option<u32>,
    /// `statistics=`.
    pub(crate) statistics: Option<bool>,
    /// `split=`: byte streams on or off.
    pub(crate) split: Option<bool>,
    /// `stream_crcs=`: a CRC-32 per byte stream on or off.
    pub(crate) stream_crcs: Option<bool>,
    /// `threads=` (0: all cores).
    pub(crate) threads: usize,
}

impl Packing {
    /// The keywords with `filters` parsed from Python's value.
    #[allow(clippy::too_many_arguments)] // Python's keywords, one each
    pub(crate) fn new(
        codec: Option<&str>,
        level: Option<i32>,
        shuffle: Option<&str>,
        filters: Option<&Bound<'_, PyAny>>,
        chunks: Option<Vec<u64>>,
        blocks: Option<Vec<u64>>,
        layout_version: Option<u32>,
        statistics: Option<bool>,
        split: Option<bool>,
        stream_crcs: Option<bool>,
        threads: usize,
    ) -> PyResult<Packing> {
        let filters = match filters {
            Some(f) if !f.is_none() => Some(filters_from_py(f)?),
            _ => None,
        };
        if let (Some(s), Some(_)) = (shuffle, &filters) {
            return Err(ra_err(format!(
                "shuffle={s:?} and filters= at once: shuffle= is the one-filter shorthand of \
                 filters= (\"byte\" is [\"shuffle\"], \"bit\" is [\"bitshuffle\"], \"none\" \
                 is []); give one of them"
            )));
        }
        Ok(Packing {
            codec: codec.map(str::to_string),
            level,
            shuffle: shuffle.map(str::to_string),
            filters,
            chunks,
            blocks,
            layout_version,
            statistics,
            split,
            stream_crcs,
            threads,
        })
    }

    /// The chunked layout's options if any keyword selects it (a chunked codec, a level,
    /// filters, chunks, blocks, a layout version, statistics, byte streams or their CRCs); the
    /// codec `"lz4-whole"` is
    /// left to the caller.
    fn chunked(&self) -> PyResult<Option<WriteOptions>> {
        let mut opts: Option<WriteOptions> = None;
        let mut set = |f: &dyn Fn(WriteOptions) -> WriteOptions| {
            opts = Some(f(opts.take().unwrap_or_else(WriteOptions::chunked)));
        };
        match self.codec.as_deref() {
            Some(LZ4_WHOLE) | None => {}
            Some(name) => {
                // The chunked codecs only: `write` checked "lz4-whole" and named it first.
                let codec = Codec::all().find(|c| c.name() == name).ok_or_else(|| {
                    ra_err(format!(
                        "codec: expected one of {}, found {name:?}",
                        Codec::all().map(Codec::name).collect::<Vec<_>>().join(", ")
                    ))
                })?;
                set(&|o| o.codec(codec));
            }
        }
        if let Some(name) = &self.shuffle {
            let s = shuffle_named(name)?;
            set(&|o| o.shuffle(s));
        }
        if let Some(f) = &self.filters {
            set(&|o| o.filters(f.clone()));
        }
        if let Some(l) = self.level {
            set(&|o| o.level(l));
        }
        if let Some(c) = &self.chunks {
            set(&|o| o.chunks(c.clone()));
        }
        if let Some(b) = &self.blocks {
            set(&|o| o.blocks(b.clone()));
        }
        if let Some(v) = self.layout_version {
            set(&|o| o.layout_version(v));
        }
        if let Some(s) = self.statistics {
            set(&|o| o.statistics(s));
        }
        if let Some(s) = self.split {
            set(&|o| o.split(s));
        }
        if let Some(s) = self.stream_crcs {
            set(&|o| o.stream_crcs(s));
        }
        Ok(opts.map(|o| o.threads(self.threads)))
    }
}

/// `write`'s keywords as write options, and the chunked layout's if they select it. As in the
/// library, any chunked keyword ([`Packing`]) selects the chunked layout, `compress` (or the
/// codec `"lz4-whole"`) the whole-section LZ4 block, and both at once is an error
/// ([`WriteOptions::flags`] says so).
pub(crate) fn write_options(
    compress: bool,
    p: &Packing,
) -> PyResult<(WriteOptions, Option<WriteOptions>)> {
    let whole = compress || p.codec.as_deref() == Some(LZ4_WHOLE);
    if let Some(name) = p.codec.as_deref().filter(|&n| n != LZ4_WHOLE) {
        codec_named(name)?; // the message of `write`, which takes "lz4-whole" too
    }
    let chunked = p.chunked()?;
    let opts = match &chunked {
        Some(c) => c.clone().compress(whole),
        None => WriteOptions::new().compress(whole).threads(p.threads),
    };
    // The library's own check, before anything is written: both layouts at once.
    opts.flags().map_err(to_py)?;
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

/// `RecordWriter`'s keywords as the library's record options (`p.chunks`: the records per
/// chunk, one entry). Any chunked keyword selects compression, as in the library; `threads`
/// alone selects nothing. The whole-section LZ4 block is refused by name: a record file grows
/// by appended chunks, and one LZ4 block over the whole section cannot be appended to.
pub(crate) fn record_options(opts: RecordOptions, p: &Packing) -> PyResult<RecordOptions> {
    if p.codec.as_deref() == Some(LZ4_WHOLE) {
        let names = Codec::all().map(Codec::name).collect::<Vec<_>>().join(", ");
        return Err(ra_err(format!(
            "codec: a RecordWriter cannot write {LZ4_WHOLE:?} (one LZ4 block over the whole \
             data section cannot be appended to): expected one of {names}"
        )));
    }
    let opts = match p.chunked()? {
        Some(s) => opts.storage(s),
        None => opts,
    };
    Ok(opts.threads(p.threads))
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

/// A chunked file's settings, as `File.chunks` and `File.compression` show them (a dict in
/// Python, keyed by the field names). Dims are in the file's order; the Python layer turns
/// them to numpy's.
#[derive(IntoPyObject)]
pub(crate) struct ChunkSettings {
    /// The codec's name.
    codec: String,
    /// Its level.
    level: i32,
    /// The one-filter shorthand of the pipeline (`"byte"`, `"bit"`, `"none"`), `None` when it
    /// is not one.
    shuffle: Option<String>,
    /// The pipeline in the order a writer applies it: each filter's name and its parameter
    /// (`None` for filters that take none).
    filters: Vec<(String, Option<u32>)>,
    /// The chunk shape.
    chunk: Vec<u64>,
    /// Version 2's n-d block shape; `None` for version 1's byte runs.
    blocks: Option<Vec<u64>>,
    /// Raw bytes per block: version 1's block bytes, or version 2's block shape times elbyte.
    block_bytes: u64,
    /// The layout version: 1 (`RACHUNK1`) or 2 (`RACHUNK2`).
    layout_version: u32,
    /// Whether index entries carry statistics.
    statistics: bool,
    /// Whether each block is compressed as byte streams, a frame per byte plane.
    split: bool,
    /// Whether each byte stream carries its own CRC-32 (doc/chunked.md 5.3), which lets a read
    /// of some fields read and check only their streams.
    stream_crcs: bool,
    /// The mantissa bits a lossy filter of the pipeline keeps, if it has one.
    rounded_to: Option<u32>,
}

/// A validated config's settings ([`ChunkSettings`]).
pub(crate) fn settings_of(c: &Config, elbyte: u64) -> ChunkSettings {
    let (blocks, block_bytes) = match &c.blocks {
        rawarray_serde::codec::Blocks::Bytes(b) => (None, *b),
        rawarray_serde::codec::Blocks::Shape(s) => {
            (Some(s.clone()), s.iter().product::<u64>() * elbyte)
        }
    };
    ChunkSettings {
        codec: c.codec.name().to_string(),
        level: c.level,
        shuffle: c.shuffle().map(|s| s.name().to_string()),
        filters: c
            .filters
            .iter()
            .map(|f| {
                // A name alone for bytedelta with parameter 0 (every plane), however given.
                let info = f.info();
                let shown = info.param.is_some() && !(info.param_optional && f.param() == 0);
                (f.name().to_string(), shown.then(|| f.param()))
            })
            .collect(),
        chunk: c.chunk.clone(),
        blocks,
        block_bytes,
        layout_version: c.version,
        statistics: c.stats.is_some(),
        split: c.split,
        stream_crcs: c.stream_crcs,
        rounded_to: c.filters.iter().filter_map(|f| f.kept_bits()).min(),
    }
}

/// What a reader noticed about a section that is not an error but that a user must hear of
/// (the library's [`Section::warnings`]: a `RACHUNK1` index entry pointing past the committed
/// size, which reads as zeros; statistics failing their CRC), each naming the chunk by its
/// number and its grid coordinates in the file's dim order (the Python layer shows them in
/// numpy's) and saying what to do.
pub(crate) fn section_warnings(
    section: &Section<impl rawarray_serde::io::ReadAt>,
    path: &std::path::Path,
) -> Vec<String> {
    let Some(map) = section.chunk_map() else {
        return Vec::new();
    };
    section
        .warnings()
        .iter()
        .map(|w| {
            let (chunk, next) = match w {
                Warning::Uncommitted { chunk } => (
                    *chunk,
                    format!(
                        "if no writer is appending to it, the index is damaged and those zeros \
                         are not the data: `ra verify {}` checks it; restore the file from a copy",
                        path.display()
                    ),
                ),
                Warning::StatisticsDamaged { chunk } => (
                    *chunk,
                    format!("`ra verify {}` checks the file", path.display()),
                ),
            };
            let text = w.to_string();
            let rest = text
                .strip_prefix(&format!("chunk {chunk}"))
                .unwrap_or(&text);
            format!(
                "{}: chunk {chunk} (grid coordinates {:?}){rest}; {next}",
                path.display(),
                map.grid().coords(chunk)
            )
        })
        .collect()
}

/// Decodes the whole array of a file (the Python layer's: a chunked one) into `out` (a writable, C-contiguous buffer of
/// exactly its plain bytes that numpy allocated, so the result is an ordinary array that owns
/// its memory): chunks decoded in parallel on the library's pool, the GIL released. Primitive
/// scalars come out little-endian, as `decode` gives them.
#[pyfunction]
pub(crate) fn read_chunked_into(
    py: Python<'_>,
    raw: &RawFile,
    mut out: PyBuffer<u8>,
) -> PyResult<()> {
    // Any storage reads through the section the library opened (a plain one with one
    // positioned read); the Python layer calls this for chunked files.
    let header = raw.header();
    let bytes = output_bytes(&mut out, "read_chunked_into")?;
    if bytes.len() as u64 != header.data_len() {
        return Err(ra_err(format!(
            "read_chunked_into: expected a buffer of {} bytes, found {}",
            header.data_len(),
            bytes.len()
        )));
    }
    if bytes.is_empty() {
        return Ok(()); // nothing to decode
    }
    py.detach(|| -> rawarray_serde::Result<()> {
        // The section read at open, through the descriptor the file was opened by: the bytes
        // of the file opened, whatever the path names now.
        raw.checked(|| raw.section().read_all_into(bytes))?;
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
    m.add_function(wrap_pyfunction!(read_chunked_into, m)?)?;
    Ok(())
}
