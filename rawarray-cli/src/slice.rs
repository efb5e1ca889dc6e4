//! `ra slice IN OUT RANGES`: a numpy basic slice of a file (start:stop:step per dim, negatives
//! counting from the end) as a new `.ra` file or a `.ra` stream on standard output, reading
//! only the bytes the slice needs (the library's `ArrayReader`; for a chunked file the codec
//! layer's section decoder, which decodes only the chunks a read touches), written atomically.

use std::io::{BufWriter, IsTerminal, Write};
use std::ops::Range;
use std::path::Path;

use rawarray_serde::codec;
use rawarray_serde::{ArrayReader, Header, WriteOptions};

use crate::compress::{Codec, Packing, PackingArgs};
use crate::fail::{At, Failure, Result};
use crate::output::OutFile;
use crate::source::{is_stdio, RaSource};

/// How a slice is stored: as its input is, unless `--codec` and friends say otherwise.
#[derive(Debug)]
enum Storage {
    /// Plain bytes after the header.
    Plain,
    /// One raw LZ4 block (flag bit 1).
    Lz4Whole,
    /// The chunked layout (flag bit 2).
    Chunked(WriteOptions),
}

impl Storage {
    /// Words for the stderr line: `chunked (zstd level 3, byte shuffle, chunks [64, 48, 1])`.
    fn describe(&self, dims: &[u64], elbyte: u64) -> String {
        match self {
            Storage::Plain => "plain".into(),
            Storage::Lz4Whole => "one LZ4 block".into(),
            Storage::Chunked(o) => {
                let chunks = o.get_chunks().map_or_else(
                    || rawarray_serde::options::default_chunks(dims, elbyte),
                    <[u64]>::to_vec,
                );
                format!(
                    "chunked ({}, chunks {chunks:?})",
                    crate::compress::describe_options(o)
                )
            }
        }
    }
}

/// The input's packing as `ra compress` would be asked for it: its codec, level, filter and
/// chunk shape, the chunks cut to the slice's dims (`kept` says which input dims the slice
/// keeps, `dims` are its sizes). `None` for plain input, `Lz4Whole` for one LZ4 block.
fn packing_of(src: &RaSource, kept: &[bool], dims: &[u64]) -> Result<Option<Packing>> {
    let section = src.section()?;
    Ok(match section.chunk_map() {
        Some(map) => {
            let cfg = map.config();
            // The chunk (and block) shape of the dims the slice keeps, cut to its sizes.
            let cut = |shape: &[u64]| -> Vec<u64> {
                shape
                    .iter()
                    .zip(kept)
                    .filter(|(_, &k)| k)
                    .map(|(&c, _)| c)
                    .zip(dims)
                    .map(|(c, &d)| c.min(d.max(1)))
                    .collect()
            };
            let chunks = cut(&cfg.chunk);
            let blocks = match &cfg.blocks {
                codec::Blocks::Shape(b) => Some(cut(b)),
                codec::Blocks::Bytes(_) => None,
            };
            Some(packing_of_config(cfg, chunks, blocks))
        }
        None if section.storage() == rawarray_serde::section::Storage::Lz4Whole => Some(Packing {
            codec: Codec::Lz4Whole,
            ..Packing::default()
        }),
        None => None,
    })
}

/// How the slice of `src` with `header` (its plain, little-endian header) is stored: what
/// `args` give, the rest taken from the input (see [`packing_of`], [`merged`]).
fn storage(src: &RaSource, args: &PackingArgs, kept: &[bool], header: &Header) -> Result<Storage> {
    let Some(packing) = merged(args, packing_of(src, kept, &header.dims)?)? else {
        return Ok(Storage::Plain);
    };
    packing.check_fits(src.path(), header)?;
    Ok(match packing.chunk_options() {
        Some(o) => Storage::Chunked(o),
        None => Storage::Lz4Whole,
    })
}

/// How a slice whose input is packed as `own` (`None`: plain) is packed, given `args`:
/// `None` for plain. Nothing asked keeps the input's packing; `--codec none` is plain; other
/// settings take what they do not say from the input (its level only for its own codec),
/// else from `ra compress`'s defaults.
pub(crate) fn merged(args: &PackingArgs, own: Option<Packing>) -> Result<Option<Packing>> {
    let none = Codec::Chunked(codec::Codec::None);
    Ok(Some(match (args.codec, own) {
        (Some(c), _) if c == none && args.has_chunk_settings() => {
            return Err(Failure::usage(
                "slice",
                "--codec none writes the slice plain: it takes no --chunks, --blocks, --level, \
                 --filter or --shuffle (ra compress --codec none makes a chunked file of stored \
                 blocks)",
            ))
        }
        (Some(c), _) if c == none => return Ok(None),
        (None, own) if !args.has_chunk_settings() => match own {
            None => return Ok(None),
            Some(p) => Packing {
                threads: args.threads,
                ..p
            },
        },
        (Some(Codec::Lz4Whole), _) => Packing {
            codec: Codec::Lz4Whole,
            ..args.or_defaults()
        },
        // Chunk settings for an LZ4 block or plain input: ra compress's defaults for the rest.
        (
            None,
            None
            | Some(Packing {
                codec: Codec::Lz4Whole,
                ..
            }),
        ) => args.or_defaults(),
        (Some(codec), None) => Packing {
            codec,
            ..args.or_defaults()
        },
        (codec, Some(p)) => {
            let codec = codec.unwrap_or(p.codec);
            let own_chunked = p.codec != Codec::Lz4Whole;
            let keeps_streams = codec == p.codec
                && args.filters().is_none()
                && args
                    .layout_version
                    .is_none_or(|v| Some(v) == p.layout_version);
            Packing {
                codec,
                level: args.level.or(if codec == p.codec { p.level } else { None }),
                filters: args
                    .filters()
                    .or(if own_chunked { p.filters } else { None }),
                chunks: args.chunks.clone().or(p.chunks),
                blocks: args.blocks.clone().or(p.blocks),
                layout_version: args.layout_version.or(p.layout_version),
                statistics: if args.no_stats {
                    Some(false)
                } else {
                    p.statistics
                },
                // The input's byte streams (and whether each has its CRC) go with its codec,
                // filters and layout version: any of them changed, or byte streams asked for
                // where the input has none or the reverse, the library's default decides.
                split: args
                    .split_setting()
                    .or(if keeps_streams { p.split } else { None }),
                stream_crcs: args.stream_crcs_setting().or(
                    if keeps_streams && args.split_setting().is_none_or(|on| Some(on) == p.split) {
                        p.stream_crcs
                    } else {
                        None
                    },
                ),
                threads: args.threads,
            }
        }
    }))
}

/// The packing `ra compress` would be asked for to make a chunked section of `config`, its
/// chunks (and n-d blocks, if it has them) those given.
pub(crate) fn packing_of_config(
    config: &codec::Config,
    chunks: Vec<u64>,
    blocks: Option<Vec<u64>>,
) -> Packing {
    Packing {
        codec: Codec::Chunked(config.codec),
        level: config.codec.levels().map(|_| config.level),
        filters: Some(config.filters.clone()),
        chunks: Some(chunks),
        blocks,
        layout_version: Some(config.version),
        statistics: (config.version >= 2).then_some(config.stats.is_some()),
        split: (config.version >= 2).then_some(config.split),
        stream_crcs: (config.version >= 2).then_some(config.stream_crcs),
        threads: 0,
    }
}

/// One comma-separated item of RANGES, as numpy writes it: `start:stop:step` with every part
/// optional (`a:b`, `a:`, `:b`, `::s`, `:`), or a single index `i`; negatives count from the end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Spec {
    /// A single index, which `--squeeze` drops from the dims (numpy drops it always).
    Index(i64),
    /// A slice; `None` parts take numpy's defaults, which depend on the step's sign.
    Slice {
        /// First index (inclusive).
        start: Option<i64>,
        /// Last index (exclusive).
        stop: Option<i64>,
        /// Not 0; 1 if omitted.
        step: Option<i64>,
    },
}

/// Parses RANGES: one item per dim, in the file's dim order (first fastest, as `ra info` lists
/// the dims), separated by commas. An empty string is a scalar's zero ranges.
pub fn parse(ranges: &str) -> std::result::Result<Vec<Spec>, String> {
    if ranges.trim().is_empty() {
        return Ok(Vec::new());
    }
    ranges
        .split(',')
        .enumerate()
        .map(|(dim, item)| {
            let item = item.trim();
            let bad = || {
                format!(
                    "dim {dim}: '{item}' is not a slice: expected start:stop:step (each part \
                     optional, negatives counting from the end) or an index i"
                )
            };
            let num = |s: &str| -> std::result::Result<Option<i64>, String> {
                let s = s.trim();
                if s.is_empty() {
                    return Ok(None);
                }
                s.parse::<i64>().map(Some).map_err(|_| bad())
            };
            let parts: Vec<&str> = item.split(':').collect();
            match parts[..] {
                [i] => match num(i)? {
                    Some(i) => Ok(Spec::Index(i)),
                    None => Err(format!(
                        "dim {dim}: empty range (use ':' for the whole dim)"
                    )),
                },
                [a, b] => Ok(Spec::Slice {
                    start: num(a)?,
                    stop: num(b)?,
                    step: None,
                }),
                [a, b, s] => {
                    let step = num(s)?;
                    if step == Some(0) {
                        return Err(format!("dim {dim}: '{item}': the step must not be 0"));
                    }
                    Ok(Spec::Slice {
                        start: num(a)?,
                        stop: num(b)?,
                        step,
                    })
                }
                _ => Err(bad()),
            }
        })
        .collect()
}

/// The indices one dim of a slice takes: `start + j * step` for `j` in `0..count`, all within
/// the dim.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Axis {
    start: u64,
    step: i64,
    count: u64,
    /// Given as a single index (dropped by `--squeeze`).
    index: bool,
}

impl Axis {
    fn at(&self, j: u64) -> u64 {
        // In bounds by construction (resolve): the sum is an index of the dim.
        (i128::from(self.start) + i128::from(j) * i128::from(self.step)) as u64
    }

    /// The smallest and one past the largest index of `j` in `js`, which is not empty.
    fn bounds(&self, js: Range<u64>) -> Range<u64> {
        let (a, b) = (self.at(js.start), self.at(js.end - 1));
        a.min(b)..a.max(b) + 1
    }
}

/// Resolves `spec` over a dim of `len`, as numpy does: a slice's start and stop are clamped to
/// the dim (`slice.indices`), so a slice past the end is shorter or empty, never an error; an
/// index outside the dim is an error naming it.
fn resolve(dim: usize, spec: Spec, len: u64) -> std::result::Result<Axis, String> {
    let n = i128::from(len);
    match spec {
        Spec::Index(i) => {
            let at = if i < 0 {
                n + i128::from(i)
            } else {
                i128::from(i)
            };
            if !(0..n).contains(&at) {
                return Err(format!(
                    "subset dim {dim}: index {i} is out of bounds for length {len}"
                ));
            }
            Ok(Axis {
                start: at as u64,
                step: 1,
                count: 1,
                index: true,
            })
        }
        Spec::Slice { start, stop, step } => {
            let step = step.unwrap_or(1);
            let s = i128::from(step);
            // CPython's PySlice_AdjustIndices: a negative bound counts from the end, and either
            // bound is then clamped to [0, len] (step > 0) or [-1, len - 1] (step < 0).
            let clamp = |v: Option<i64>, default: i128| -> i128 {
                let Some(v) = v else { return default };
                let v = i128::from(v);
                let v = if v < 0 { v + n } else { v };
                if s > 0 {
                    v.clamp(0, n)
                } else {
                    v.clamp(-1, n - 1)
                }
            };
            let (first, end) = if s > 0 {
                (clamp(start, 0), clamp(stop, n))
            } else {
                (clamp(start, n - 1), clamp(stop, -1))
            };
            let count = if s > 0 && first < end {
                (end - first - 1) / s + 1
            } else if s < 0 && end < first {
                (first - end - 1) / -s + 1
            } else {
                0
            };
            Ok(Axis {
                // Unused when count is 0 (then first may be -1 or len).
                start: first.clamp(0, n) as u64,
                step,
                count: count as u64,
                index: false,
            })
        }
    }
}

/// Kept elements this many bytes apart or closer are read together with what lies between
/// them: the pages between are read from disk anyway, and one read beats one per element.
const GAP: u64 = 4096;
/// The most bytes read at once (a block and the bytes its steps skip), whatever the slice.
const CAP: u64 = 8 << 20;

/// How a slice is read: a block of the leading dims read at once and picked from, the rest of
/// the dims one index at a time.
#[derive(Debug, PartialEq, Eq)]
struct ReadPlan {
    /// Dims `0..whole` are read as their bounding ranges in every read.
    whole: usize,
    /// Dim `whole` (if there is one) is read `chunk` of its indices at a time (their bounding
    /// range when they are close, else one index); the dims after it one index at a time.
    chunk: u64,
}

/// Plans the reads of `axes` (every count at least 1) of elements of `elbyte` bytes: a dim
/// joins the block read at once while its steps skip at most [`GAP`] bytes and the block stays
/// within [`CAP`]; a step that skips more is read one index at a time, so a slice costs about
/// its own bytes, not the array's.
fn plan(axes: &[Axis], elbyte: u64) -> ReadPlan {
    let mut block = elbyte.max(1);
    for (d, a) in axes.iter().enumerate() {
        let near = (a.step.unsigned_abs() - 1).saturating_mul(block) <= GAP;
        let span = a.bounds(0..a.count);
        let span = span.end - span.start;
        if a.count == 1 || (near && block.saturating_mul(span) <= CAP) {
            block = block.saturating_mul(span);
            continue;
        }
        let chunk = if near {
            // Indices j..j + c span (c - 1) * |step| + 1 of the dim.
            ((CAP / block).saturating_sub(1) / a.step.unsigned_abs() + 1).min(a.count)
        } else {
            1
        };
        return ReadPlan { whole: d, chunk };
    }
    ReadPlan {
        whole: axes.len(),
        chunk: 1,
    }
}

/// The reader of the file `src` opened, chunked or not: every read goes through a clone of its
/// one descriptor (the same open file), so a file renamed over the path meanwhile cannot mix its
/// bytes with the header read. Nothing here takes a path to open.
fn input_of(src: &RaSource) -> Result<ArrayReader> {
    let path = src.path();
    let file = src.file().try_clone().at(path)?;
    ArrayReader::from_open_file(file, path).at(path)
}

/// Writes the slice `ranges` of `input` to `output` (`-`: standard output, as a `.ra` stream),
/// stored as the input is unless `packing` says otherwise.
pub fn run(
    input: &Path,
    output: &Path,
    ranges: &str,
    squeeze: bool,
    packing: &PackingArgs,
    stdout: &mut dyn Write,
) -> Result<()> {
    let specs = parse(ranges).map_err(|m| Failure::usage("slice", m))?;
    let to_stdout = is_stdio(output);
    if to_stdout && std::io::stdout().is_terminal() {
        return Err(Failure::usage(
            "slice",
            "standard output is a terminal: a .ra stream is binary; redirect it (> file) or pipe it",
        ));
    }
    // A pipe or device named as a file is refused at once, not waited on (pipes and `-` were
    // copied to a file before this).
    let src = RaSource::open(input)?;
    let reader = input_of(&src)?;
    let dims = reader.header().dims.clone();
    if specs.len() != dims.len() {
        return Err(Failure::file(
            input,
            format!(
                "{} ranges for {} dims {dims:?}: give one per dim, in the order ra info lists them",
                specs.len(),
                dims.len()
            ),
        ));
    }
    let axes = specs
        .iter()
        .zip(&dims)
        .enumerate()
        .map(|(d, (&s, &len))| resolve(d, s, len))
        .collect::<std::result::Result<Vec<Axis>, String>>()
        .map_err(|m| Failure::file(input, m))?;

    // The block's header (little-endian where the element type says how, uncompressed), from
    // the library: an empty block costs no read.
    let (mut header, _) = reader
        .read_subset_bytes(&vec![0..0; dims.len()])
        .at(input)?;
    header.dims = axes.iter().map(|a| a.count).collect();
    // At most the input's data length: a slice takes each element once.
    header.size = header.data_len();
    let kept: Vec<bool> = axes.iter().map(|a| !(squeeze && a.index)).collect();
    if squeeze {
        header.dims = axes.iter().filter(|a| !a.index).map(|a| a.count).collect();
    }
    let storage = storage(&src, packing, &kept, &header)?;
    drop(src);

    // Standard output gets the stream only once it is whole: it is written to the unlinked
    // spool first, as `ra convert` does.
    let target = if to_stdout {
        crate::output::make_spool().at(Path::new("<stdout>"))?
    } else {
        output.to_path_buf()
    };
    let shown_out = if to_stdout {
        Path::new("<stdout>")
    } else {
        output
    };
    let mut out = OutFile::create(&target).at(shown_out)?;
    {
        let mut w = BufWriter::with_capacity(1 << 20, out.file());
        // The trailer (params, record schema) describes the elements, which the block keeps:
        // it is placed again at the block's data end (an LZ4 block's copy at 0: its place is
        // not where the data ends, as `ra compress` marks it). Other trailing bytes are not
        // carried over.
        let trailer = |data_end: u64| {
            reader
                .trailer()
                .map(|t| t.encode_block(data_end))
                .unwrap_or_default()
        };
        match &storage {
            Storage::Plain => {
                w.write_all(&header.encode()).at(shown_out)?;
                if header.size > 0 {
                    write_slice(&reader, &axes, &mut w, input, shown_out)?;
                }
                let end = header.encoded_len() as u64 + header.size;
                w.write_all(&trailer(end)).at(shown_out)?;
            }
            Storage::Chunked(opts) => {
                let data = slice_in_memory(&reader, &axes, &header, input)?;
                let (h, section) = codec::encode(&header, &data, opts).at(input)?;
                drop(data);
                w.write_all(&h.encode()).at(shown_out)?;
                w.write_all(&section).at(shown_out)?;
                let end = h.encoded_len() as u64 + h.size;
                w.write_all(&trailer(end)).at(shown_out)?;
            }
            Storage::Lz4Whole => {
                let data = slice_in_memory(&reader, &axes, &header, input)?;
                // The block keeps the byte order it was read in: big-endian user-defined
                // elements (which the library cannot swap without their schema) stay so, and
                // the flag written says it, as the plain path's header does.
                let opts = WriteOptions::new()
                    .compress(true)
                    .big_endian(header.is_big_endian());
                let schema = reader.trailer().and_then(|t| t.schema.clone());
                rawarray_serde::section::write::write_section(
                    &mut w,
                    &header,
                    &opts,
                    schema.as_ref(),
                    &rawarray_serde::section::write::PlainBytes::new(&data),
                )
                .at(shown_out)?;
                w.write_all(&trailer(0)).at(shown_out)?;
            }
        }
        w.flush().at(shown_out)?;
    }
    out.commit().at(shown_out)?;
    if let Some(mut spool) = crate::output::take_spool().at(shown_out)? {
        std::io::copy(&mut spool, stdout).map_err(Failure::stdout)?;
        stdout.flush().map_err(Failure::stdout)?;
    }
    crate::report::done(format_args!(
        "{} -> {}: dims {:?}, {}",
        crate::names::shown(input),
        shown_out.display(),
        header.dims,
        storage.describe(&header.dims, header.elbyte)
    ));
    Ok(())
}

/// The slice's elements in memory, for a codec that needs all of its input at once; the
/// allocation is the slice's size (at most the input's data), and fallible.
fn slice_in_memory(
    reader: &ArrayReader,
    axes: &[Axis],
    header: &Header,
    input: &Path,
) -> Result<Vec<u8>> {
    let mut data = Vec::new();
    let len = usize::try_from(header.size).unwrap_or(usize::MAX);
    data.try_reserve_exact(len).map_err(|_| {
        Failure::file(
            input,
            format!(
                "the slice's {} bytes do not fit in memory to be compressed; --codec none \
                 writes it plain, as a stream",
                header.size
            ),
        )
    })?;
    if header.size > 0 {
        write_slice(reader, axes, &mut data, input, Path::new("<memory>"))?;
    }
    Ok(data)
}

/// Writes the elements of the slice `axes` (none empty) in column-major order: each read is
/// one block of the library's `read_subset_bytes` (see [`plan`]), its elements picked in order.
fn write_slice(
    reader: &ArrayReader,
    axes: &[Axis],
    w: &mut dyn Write,
    input: &Path,
    output: &Path,
) -> Result<()> {
    let elbyte = reader.header().elbyte;
    let eb = elbyte as usize;
    let ReadPlan { whole, chunk } = plan(axes, elbyte);
    let n = axes.len();
    // Which indices of each dim the current read covers: all of them for the dims before
    // `whole`, a chunk of dim `whole`, one index of each dim after it.
    let mut cover: Vec<Range<u64>> = axes
        .iter()
        .enumerate()
        .map(|(d, a)| match d.cmp(&whole) {
            std::cmp::Ordering::Less => 0..a.count,
            std::cmp::Ordering::Equal => 0..chunk.min(a.count),
            std::cmp::Ordering::Greater => 0..1,
        })
        .collect();
    loop {
        let ranges: Vec<Range<u64>> = axes
            .iter()
            .zip(&cover)
            .map(|(a, js)| a.bounds(js.clone()))
            .collect();
        let (_, block) = reader.read_subset_bytes(&ranges).at(input)?;
        // Element strides of the block read, in bytes.
        let mut strides = Vec::with_capacity(n);
        let mut s = eb;
        for r in &ranges {
            strides.push(s);
            s *= (r.end - r.start) as usize;
        }
        // The byte offset in the block of the element at index `j` of dim `d`.
        let offset = |d: usize, j: u64| (axes[d].at(j) - ranges[d].start) as usize * strides[d];
        pick(&block, eb, &cover, &offset, w).at(output)?;
        // The next read, in column-major order: dim `whole` a chunk at a time, then the rest.
        let mut d = whole;
        loop {
            if d >= n {
                return Ok(());
            }
            let step = if d == whole { chunk } else { 1 };
            let next = cover[d].end;
            if next < axes[d].count {
                cover[d] = next..(next + step).min(axes[d].count);
                break;
            }
            cover[d] = 0..step.min(axes[d].count);
            d += 1;
        }
    }
}

/// Writes the elements of `block` at the indices `cover` (per dim), in column-major order; a
/// run of dim 0 with step 1 is one write.
fn pick(
    block: &[u8],
    eb: usize,
    cover: &[Range<u64>],
    offset: &dyn Fn(usize, u64) -> usize,
    w: &mut dyn Write,
) -> std::io::Result<()> {
    let n = cover.len();
    if n == 0 {
        return w.write_all(&block[..eb]);
    }
    let mut j: Vec<u64> = cover.iter().map(|r| r.start).collect();
    let first = offset(0, cover[0].start);
    let last = offset(0, cover[0].end - 1);
    let contiguous =
        last >= first && last - first == (cover[0].end - cover[0].start - 1) as usize * eb;
    loop {
        let base: usize = (1..n).map(|d| offset(d, j[d])).sum();
        if contiguous {
            w.write_all(&block[base + first..base + last + eb])?;
        } else {
            for j0 in cover[0].clone() {
                let at = base + offset(0, j0);
                w.write_all(&block[at..at + eb])?;
            }
        }
        let mut d = 1;
        loop {
            if d >= n {
                return Ok(());
            }
            j[d] += 1;
            if j[d] < cover[d].end {
                break;
            }
            j[d] = cover[d].start;
            d += 1;
        }
    }
}

/// A box in the file's dims holding every element `ra slice` of `spec` reads: each dim's
/// smallest to largest index (the whole dim where a step runs backwards); a dim given wrong is
/// left whole, for `ra slice` itself to name.
pub fn bounding_box(spec: &str, dims: &[u64]) -> std::result::Result<Vec<Range<u64>>, String> {
    let specs = parse(spec)?;
    if specs.len() != dims.len() {
        return Ok(dims.iter().map(|&d| 0..d).collect());
    }
    let at = |i: i64, n: u64| -> u64 {
        let n = i128::from(n);
        let v = if i < 0 {
            n + i128::from(i)
        } else {
            i128::from(i)
        };
        v.clamp(0, n) as u64
    };
    Ok(specs
        .iter()
        .zip(dims)
        .map(|(s, &n)| match *s {
            Spec::Index(i) => {
                let a = at(i, n);
                a..(a + 1).min(n)
            }
            Spec::Slice { start, stop, step } if step.unwrap_or(1) > 0 => {
                let a = start.map_or(0, |i| at(i, n));
                let b = stop.map_or(n, |i| at(i, n));
                a..b.max(a)
            }
            Spec::Slice { .. } => 0..n,
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A chunked file (with a trailer) renamed over the path after its header was read: the
    /// input reads the section and the trailer of the file opened, not the new one's.
    #[test]
    fn the_input_reads_the_file_opened_not_what_the_path_names_later() {
        use rawarray_serde::{codec, WriteOptions};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.ra");
        let chunked = |data: Vec<u8>, params: &str| {
            let plain = dir.path().join("plain.ra");
            crate::source::tests::write_with_trailer(&plain, data.clone(), params);
            let h = rawarray_serde::Header::new(
                rawarray_serde::ElType::Uint,
                1,
                vec![data.len() as u64],
            )
            .unwrap();
            let (ch, section) =
                codec::encode(&h, &data, &WriteOptions::chunked().chunks(vec![4])).unwrap();
            let mut bytes = ch.encode();
            bytes.extend_from_slice(&section);
            let trailer = rawarray_serde::Trailer::read_file(&plain).unwrap().unwrap();
            bytes.extend_from_slice(&trailer.encode_block(bytes.len() as u64));
            let tmp = dir.path().join("tmp.ra");
            std::fs::write(&tmp, bytes).unwrap();
            std::fs::rename(&tmp, &path).unwrap();
        };
        chunked((0..10).collect(), "old");
        let src = crate::source::RaSource::open(&path).unwrap();
        chunked(vec![200; 64], "new");
        let input = input_of(&src).unwrap();
        drop(src);
        assert_eq!(input.trailer().unwrap().params, "old");
        let (_, bytes) = input
            .read_subset_bytes(std::slice::from_ref(&(0..10)))
            .unwrap();
        assert_eq!(bytes, (0..10).collect::<Vec<u8>>());
    }

    fn axes(specs: &str, dims: &[u64]) -> Vec<Axis> {
        parse(specs)
            .unwrap()
            .into_iter()
            .zip(dims)
            .enumerate()
            .map(|(d, (s, &len))| resolve(d, s, len).unwrap())
            .collect()
    }

    /// Every index a dim takes, for comparing with numpy's `range(len)[slice]` written out by
    /// hand.
    fn indices(a: &Axis) -> Vec<u64> {
        (0..a.count).map(|j| a.at(j)).collect()
    }

    #[test]
    fn the_range_syntax() {
        let s = parse(":,2:5, 7 ,3:,:4").unwrap();
        assert_eq!(s[2], Spec::Index(7));
        assert!(parse("").unwrap().is_empty());
        assert!(parse("1,x").unwrap_err().contains("dim 1"));
        assert!(parse("1,,2").unwrap_err().contains("dim 1"));
        assert!(parse("1:2:3:4").unwrap_err().contains("dim 0"));
        assert!(parse(":,::0").unwrap_err().contains("dim 1"));
        assert_eq!(
            parse("-1,::-2").unwrap(),
            [
                Spec::Index(-1),
                Spec::Slice {
                    start: None,
                    stop: None,
                    step: Some(-2)
                }
            ]
        );
    }

    /// numpy's `list(range(10)[s])` for each slice `s`, written out.
    #[test]
    fn slices_resolve_as_numpys() {
        let cases: [(&str, &[u64]); 14] = [
            (":", &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]),
            ("2:5", &[2, 3, 4]),
            ("::3", &[0, 3, 6, 9]),
            ("1::4", &[1, 5, 9]),
            ("::-1", &[9, 8, 7, 6, 5, 4, 3, 2, 1, 0]),
            ("::-3", &[9, 6, 3, 0]),
            ("-3:", &[7, 8, 9]),
            (":-7", &[0, 1, 2]),
            ("-2:-8:-2", &[8, 6, 4]),
            ("7:2:-2", &[7, 5, 3]),
            ("3:1", &[]),
            ("5:100", &[5, 6, 7, 8, 9]),
            ("-100:2", &[0, 1]),
            ("100::-4", &[9, 5, 1]),
        ];
        for (s, want) in cases {
            assert_eq!(indices(&axes(s, &[10])[0]), want, "{s}");
        }
        assert_eq!(indices(&axes("-1", &[10])[0]), [9]);
        assert!(axes("-1", &[10])[0].index);
        let err = resolve(2, Spec::Index(-11), 10).unwrap_err();
        assert_eq!(
            err,
            "subset dim 2: index -11 is out of bounds for length 10"
        );
        assert!(resolve(0, Spec::Index(10), 10).is_err());
        // An empty dim: every slice of it is empty, and no index is in it.
        assert_eq!(axes("::-1", &[0])[0].count, 0);
        assert!(resolve(0, Spec::Index(0), 0).is_err());
    }

    /// A step that skips more than a page is read one index at a time: a slice reads about its
    /// own bytes. Closer steps are read as one block.
    #[test]
    fn far_steps_are_read_index_by_index() {
        // f32 [1024, 8, 16]: a plane of dims 0 and 1 is 32 KiB.
        let dims = [1024, 8, 16];
        assert_eq!(
            plan(&axes(":,:,::2", &dims), 4),
            ReadPlan { whole: 2, chunk: 1 }
        );
        // Every other element of dim 0 (4 bytes skipped): one block.
        assert_eq!(
            plan(&axes("::2,:,::-1", &dims), 4),
            ReadPlan { whole: 3, chunk: 1 }
        );
        // A dim too long to read at once is read in chunks of at most CAP bytes.
        let long = [16 << 20];
        assert_eq!(
            plan(&axes("::2", &long), 4),
            ReadPlan {
                whole: 0,
                chunk: (CAP / 4 - 1) / 2 + 1
            }
        );
        // A single index joins the block whatever its dim's length.
        assert_eq!(
            plan(&axes(":,:,7", &dims), 4),
            ReadPlan { whole: 3, chunk: 1 }
        );
    }
}
