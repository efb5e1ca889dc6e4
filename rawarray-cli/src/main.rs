//! `ra`: inspect, print, convert, compress, reshape, slice, recover and checksum RawArray (`.ra`) files.
//!
//! Exit codes: 0 success; 1 a file could not be read or written, or a check failed (one line
//! on stderr per problem, naming the file); 2 a usage error. `ra diff` as `diff`: 0 equal,
//! 1 different, 2 an error.

mod cat;
mod checksum;
mod compress;
mod convert;
mod copies;
mod csv;
mod diff;
mod external;
mod fail;
mod formats;
mod image;
mod info;
mod manual;
mod names;
mod npy;
mod output;
mod progress;
mod ragged;
mod recover;
mod remote;
mod report;
mod reshape;
mod slice;
mod sniff;
mod source;
mod stats;
#[cfg(feature = "arrow")]
mod table;
mod trailer;
mod value;
mod watch;

use std::ffi::OsString;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

use crate::checksum::Algo;
use crate::fail::Failure;

/// Inspect, print, convert, compress, reshape, slice, recover and checksum RawArray (.ra) files.
#[derive(Parser, Debug)]
#[command(name = "ra", version, propagate_version = true)]
#[command(after_help = "\
Examples:
  ra info data.ra                 the header in words
  ra cat --head 10 data.ra        the first values with their indices
  ra convert data.ra data.npy     for numpy (np.load), and back
  ra checksum *.ra > SUMS         then: ra verify SUMS
  ra slice big.ra plane.ra :,:,42 one block of a file, reading only its bytes
  ra diff a.ra b.ra               values compared, whatever the byte order and compression
  ra watch run.ra                 records as a running program flushes them (tail -f)
  ra recover run.ra               after a crash of the program appending records
  ra sql \"SELECT step, avg(energy) FROM 'run.ra' GROUP BY step\"
                                  SQL over record files (the ra-sql command of rawarray-sql;
                                  any ra NAME runs a program ra-NAME beside ra or on PATH)

Exit status: 0 success, 1 a file could not be read or written (or a check failed), 2 usage error;
ra diff: 0 equal, 1 different, 2 a file could not be read (or a usage error).")]
struct Cli {
    /// No line on success and no notes (errors and warnings still print).
    #[arg(short, long, global = true)]
    quiet: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Show each file's header: element type, numpy dtype, dims, byte order, compression,
    /// header size, and the trailer (its params and record schema).
    #[command(after_help = "\
Examples:
  ra info test.ra
  ra info --json *.ra | jq .dims
  ssh host cat run.ra | ra info -  standard input

--json prints one object per line with the keys file, flags, eltype, elbyte, size, ndims,
dims (the file's order: first fastest), numpy_shape (dims reversed: numpy's shape),
big_endian, compressed, codec (zstd, lz4, none, pco, huffman, lz4-whole or null), chunks (the file's order;
null unless chunked), numpy_chunks (chunks reversed), shuffle, level, split (whether blocks
are byte streams; null unless chunked), stream_crcs (whether each byte stream has its own
CRC-32; null unless chunked), ratio, dtype (null where
numpy has none), type, header_bytes, trailer_bytes, trailer (the trailer block: version,
params, schema, numpy_descr, and any keys a later version added; or null), trailer_error (why
a damaged block cannot be read; or null), schema_error (why the record schema does not
describe the elements, which are then shown as bytes; or null), uncommitted_bytes,
missing_bytes, uncommitted_blocks and journal_error. Later versions may add keys, never rename
or remove one.")]
    Info {
        /// .ra files; - reads standard input.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// One JSON object per file, one per line.
        #[arg(long)]
        json: bool,
        /// The per-chunk statistics of a chunked file for the whole file (min, max, NaN count
        /// of every scalar field), read from its index alone (JSON: a "stats" object).
        #[arg(long)]
        stats: bool,
        /// With --stats: each written chunk's statistics too.
        #[arg(long, requires = "stats")]
        per_chunk: bool,
    },
    /// Print the values with their indices, in file (column-major) order: the first index
    /// varies fastest.
    #[command(after_help = "\
Examples:
  ra cat test.ra                  [0, 0]<TAB>0.0-infi ...
  ra cat --head 3 --json test.ra  {\"index\":[0,0],\"value\":{\"re\":0.0,\"im\":\"-inf\"}} ...
  gunzip -c a.ra.gz | ra cat -    standard input

Complex values print as a+bi, f16 and bfloat16 as their shortest decimals, NaN and infinities
as NaN, inf, -inf, user-defined elements by field name when the trailer holds their record
schema (as hex otherwise). A ragged file prints a row per line, [k]<TAB>values; a row of text
prints as its text with a backslash as \\\\, newline, carriage return and tab as \\n, \\r, \\t
and any other control character as \\u{..} (its code point in hex), so that every row is one
line. In JSON, NaN and infinities are the strings \"NaN\", \"inf\", \"-inf\", and text is a JSON
string.")]
    Cat {
        /// A .ra file; - reads standard input.
        file: PathBuf,
        /// Print only the first N values.
        #[arg(long, value_name = "N")]
        head: Option<u64>,
        /// One JSON object per value, one per line.
        #[arg(long)]
        json: bool,
    },
    /// Convert between .ra and .npy, .png, .csv, .parquet or .arrow/.feather, by file extension.
    #[command(after_help = "\
Examples:
  ra convert a.ra a.npy           np.load('a.npy') is the array numpy reads from a.ra
  ra convert b.npy b.ra           C or Fortran order, any byte order, .npy 1.0/2.0/3.0
  ra convert img.ra img.png       dims [w, h] gray or [c, w, h] (c = 1..4); non-uint8 scaled
  ra convert --rgb img.png img.ra gray repeated as R, G, B, as the C reference's png2ra
  ra convert m.ra m.csv           1-D: one value per line; 2-D [d0, d1]: d1 lines of d0
  ra convert m.csv m.ra           int64, float64 or complex128 (a+bj), whichever fits
  ra convert run.ra run.parquet   records as a table: a column per field (--zstd, --batch-rows)
  ra convert run.parquet run.ra   fixed-width columns back into records (.arrow, .feather too)
  ra convert run.parquet run.ra --codec zstd   the records chunked, with per-chunk statistics
  curl -s URL/a.ra | ra convert - --to npy - > a.npy   standard input and output

- is standard input (as IN) or standard output (as OUT); --from and --to give their formats
(or those of files named without the extension). Standard input is checked by its first
bytes, then copied to an unlinked temporary file; standard output gets the bytes only once the
conversion has succeeded.

Dims rule: a .ra with dims [d0, d1] is numpy shape (d1, d0). Records with a schema in the
trailer are a structured dtype, and a structured .npy becomes records with that schema.
A PNG of width w and height h becomes dims [w, h] (gray) or [c, w, h], its bytes the PNG's
interleaved rows. A PNG that decodes to more than --max-image-bytes (default 64 MiB; after
--rgb's expansion) is refused before it is decoded.
Parquet and Arrow IPC (.arrow, .feather): one row per record, one column per field (the
mapping of types is in doc/arrow.md); the trailer's parameters, schema and dims go into the
file's key-value metadata, and come back from it. Read and written by name, in batches.
The output is written to a temporary file and renamed: a failed conversion leaves nothing.")]
    Convert {
        /// Input file (.ra, .npy, .png or .csv), or - for standard input (with --from).
        input: PathBuf,
        /// Output file (.ra, .npy, .png or .csv), or - for standard output (with --to).
        output: PathBuf,
        /// The input's format, where its name does not tell it (standard input).
        #[arg(long, value_enum, value_name = "FORMAT")]
        from: Option<convert::Format>,
        /// The output's format, where its name does not tell it (standard output).
        #[arg(long, value_enum, value_name = "FORMAT")]
        to: Option<convert::Format>,
        /// .png -> .ra: expand gray to RGB (gray+alpha to RGBA).
        #[arg(long)]
        rgb: bool,
        /// .png -> .ra: the most bytes the image may decode to (its .ra data); a small PNG can
        /// claim gigabytes of pixels.
        #[arg(long, value_name = "BYTES", default_value_t = image::DEFAULT_MAX_IMAGE_BYTES)]
        max_image_bytes: u64,
        /// .ra <-> .parquet/.arrow: rows per batch, and per Parquet row group; memory is
        /// bounded by one batch.
        #[cfg(feature = "arrow")]
        #[arg(long, value_name = "ROWS", default_value_t = rawarray_arrow::DEFAULT_BATCH_ROWS)]
        batch_rows: usize,
        /// .ra -> .parquet: compress with zstd (level 3) instead of snappy.
        #[cfg(feature = "arrow")]
        #[arg(long)]
        zstd: bool,
        /// .parquet/.arrow -> .ra: store the records chunked, as `ra compress` takes these
        /// options (with per-chunk statistics, which queries use to skip chunks); plain if none
        /// is given.
        #[command(flatten)]
        packing: compress::PackingArgs,
    },
    /// Compress the data section: chunked (zstd 3 and byte shuffle by default), or as one raw
    /// LZ4 block (flag bit 1) for the C reference and Julia.
    #[command(after_help = "\
Examples:
  ra compress big.ra              in place, chunked, zstd level 3, byte shuffle
  ra compress big.ra -o big_z.ra --codec lz4 --shuffle bit
  ra compress field.ra --chunks 64,64,64 --level 9 --threads 4
  ra compress field.ra --filter shuffle,bytedelta          lossless, a better ratio for smooth floats
  ra compress field.ra --codec pco                          numbers compressed as numbers
  ra compress field.ra --filter shuffle,bytedelta:4,bytedelta:4 --codec huffman
                                  lossless, 1.1x Blosc2's ratio (little-endian float32:
                                  bytedelta:4 is plane 2, the high mantissa bits, alone)
  ra compress field.ra --filter bitround:10,shuffle         LOSSY: 10 mantissa bits kept
  ra compress field.ra --blocks 16,16,16                    n-d blocks: any plane decodes little
  ra compress big.ra --layout-version 1                     RACHUNK1, for rawarray 0.1's readers
  ra compress big.ra --codec lz4-whole     one LZ4 block, as the C reference reads it

The chunked layout splits the array into n-d chunks (--chunks, one size per dim in the order
ra info lists dims; default about 1 MiB of raw bytes, whole leading dims first), each filtered
and compressed alone behind an index, so a reader decodes only the chunks it touches. A chunked
file is re-encoded with the settings given. Byte order and the trailer are kept. One LZ4 block
(--codec lz4-whole) holds at most 2,113,929,216 bytes: a larger data section is refused from its
header, before any of it is read. Statistics per chunk (min, max, NaN count) are written unless
--no-stats; ra info --stats shows them.")]
    #[command(mut_arg("codec", |a| a.default_value("zstd")))]
    Compress {
        /// A .ra file (- reads standard input, with -o).
        file: PathBuf,
        /// Write here instead of replacing FILE.
        #[arg(short, long, value_name = "OUT")]
        output: Option<PathBuf>,
        #[command(flatten)]
        packing: compress::PackingArgs,
    },
    /// Decompress a compressed data section (chunked or one LZ4 block) to plain bytes.
    #[command(after_help = "\
Examples:
  ra decompress mnist_8_z.ra -o mnist_8.ra
  ra decompress big.ra            in place, through a temporary file")]
    Decompress {
        /// A .ra file (- reads standard input, with -o).
        file: PathBuf,
        /// Write here instead of replacing FILE.
        #[arg(short, long, value_name = "OUT")]
        output: Option<PathBuf>,
    },
    /// Give the elements new dims (first fastest); their count must not change.
    #[command(after_help = "\
Examples:
  ra reshape a.ra 12              [3, 4] -> [12]
  ra reshape mnist_8.ra 3 28 28   the C reference's png2ra layout as [c, w, h]
  ra reshape s.ra                 no dims: a scalar (one element)

The data is copied unchanged behind the new header, then the trailer, atomically.")]
    Reshape {
        /// A .ra file (- reads standard input, with -o).
        file: PathBuf,
        /// The new dims, first varying fastest.
        #[arg(value_name = "DIM")]
        dims: Vec<u64>,
        /// Write here instead of replacing FILE.
        #[arg(short, long, value_name = "OUT")]
        output: Option<PathBuf>,
    },
    /// Write a slice of a file (numpy's start:stop:step in each dim) as a new .ra file or to
    /// standard output, reading only the bytes it needs.
    #[command(after_help = "\
Examples:
  ra slice big.ra plane.ra :,:,42        the plane at index 42 of the last dim: dims [nx, ny, 1]
  ra slice big.ra slab.ra 7,:,:          one index of the first dim: dims [1, ny, nz]
  ra slice big.ra cube.ra 0:64,64:128,:  a block
  ra slice big.ra last.ra :,:,-1         the last plane (negatives count from the end)
  ra slice big.ra half.ra ::2,::-1,:     every other element of dim 0, dim 1 reversed
  ra slice --squeeze big.ra p.ra :,:,42  dims [nx, ny]: single indices drop their dim
  ra slice big.ra - :,:,42 | ra info -   a .ra stream on standard output

RANGES has one item per dim, comma-separated, in the file's dim order: the order ra info
lists the dims, first varying fastest (numpy's shape is that order reversed, so
`ra slice a.ra b.ra 2:5,:,7` is numpy's a[7:8, :, 2:5]). Each item is numpy's: start:stop:step
with every part optional (a:b is a to b-1, a: to the end, :b from 0, : the whole dim, ::s every
s-th, ::-1 reversed) or a single index i (as i:i+1). Negative start, stop and index count from
the end; a negative step walks backward (its defaults are the last index and before the
first). As in numpy, start and stop are clipped to the dim (a slice past the end is shorter or
empty) and an index outside the dim is an error.

The slice is stored as its input is: a chunked input's slice is chunked with the same codec,
level, filter and chunk shape (each chunk size at most its dim), an LZ4 block's slice one LZ4
block, a plain input's slice plain; --codec, --level, --shuffle and --chunks (as ra compress
takes them) say otherwise, and --codec none writes it plain. One line on stderr says how it was
stored. Data is written little-endian; the trailer (params, record schema) is kept. Elements a
step skips are not read when they lie more than a page apart. A chunked file decodes only the
chunks the slice touches; an LZ4-compressed file (one block) is decompressed whole. A
compressed slice is made in memory (as ra compress makes it). The output is written to a
temporary file and renamed (OUT -: copied to standard output once whole): a failure leaves
nothing.")]
    // `--codec none` means plain here (ra compress's none is chunked blocks stored as they are).
    #[command(mut_arg("codec", |a| {
        a.hide_possible_values(true).help(
            "How the slice is stored: zstd, lz4, pco, huffman or lz4-whole as ra compress \
             stores them, none plain [default: as its input is]",
        )
    }))]
    Slice {
        /// The .ra file to cut from; - reads standard input.
        input: PathBuf,
        /// The .ra file to write; - writes a .ra stream to standard output.
        output: PathBuf,
        /// One range per dim, comma-separated (see below).
        #[arg(allow_hyphen_values = true)]
        ranges: String,
        /// Drop the dims given as a single index.
        #[arg(long)]
        squeeze: bool,
        #[command(flatten)]
        packing: compress::PackingArgs,
    },
    /// Compare two .ra files: header, dims, trailer params and values (not bytes: byte order
    /// and compression do not count).
    #[command(after_help = "\
Examples:
  ra diff a.ra b.ra                 exit 0 equal, 1 different, 2 a file could not be read
  ra diff --rtol 1e-6 a.ra b.ra     floats equal within |a - b| <= atol + rtol * |b|
  ra diff --equal-nan a.ra a_z.ra   NaN equals NaN

Differences print as `[i, j]<TAB>A<TAB>B` (column-major indices, as ra cat), the first
--show of them, then the count of differing elements and, for floats and complex, the largest
absolute and relative differences (relative to B) among them. A difference of element type or
dims is reported without comparing values. Integers compare exactly; records byte by byte
(swapped by their schema when a file is big-endian), naming the first field that differs.
Record schemas compare by fields (names, types, offsets): a record name that differs (a file
written from numpy has none) is a note on stderr, a failure with --strict-schema.
Tolerances and --equal-nan apply to floats and complex (as numpy's isclose: an infinity equals
only itself); integers ignore them; for f128, complex256 and records (compared by their bytes)
they are a usage error. Equal files print nothing. Both files are streamed, never loaded whole.")]
    Diff {
        /// The first .ra file (- reads standard input).
        a: PathBuf,
        /// The second .ra file (- reads standard input).
        b: PathBuf,
        /// Relative tolerance for floats and complex (relative to B's value).
        #[arg(long, default_value_t = 0.0, value_name = "R")]
        rtol: f64,
        /// Absolute tolerance for floats and complex.
        #[arg(long, default_value_t = 0.0, value_name = "A")]
        atol: f64,
        /// NaN equals NaN.
        #[arg(long)]
        equal_nan: bool,
        /// Print at most N differing elements (all are counted).
        #[arg(long, default_value_t = 10, value_name = "N")]
        show: u64,
        /// Record schemas must match in full, the record's name too (by default a name that
        /// differs is a note on stderr, and values compare when the fields match).
        #[arg(long)]
        strict_schema: bool,
    },
    /// Follow a record file as a writer appends to it, printing each newly flushed record
    /// (like tail -f); Ctrl-C stops it.
    #[command(after_help = "\
Examples:
  ra watch run.ra                 the last 10 records, then each one as it is flushed
  ra watch -n 0 run.ra            only new records
  ra watch --summary run.ra       run.ra: +64 records (1264 in all), one line per flush

Records print as ra cat prints them: [index]<TAB>{field: value, ...} by the trailer's schema.
The header is read every 0.1 s, and only records it counts (committed by a flush) are read
and printed; stdout is flushed after each batch. A file that is replaced (another file
renamed over it), cut below what was printed, or rewritten with other dims stops it with an
error (exit 1).")]
    Watch {
        /// A .ra record file (or any uncompressed .ra file whose last dim grows).
        file: PathBuf,
        /// Start with the last N records already in the file.
        #[arg(short = 'n', long = "lines", value_name = "N", default_value_t = 10)]
        last: u64,
        /// One line per flush (the count of new records) instead of the records.
        #[arg(long)]
        summary: bool,
    },
    /// Repair a record or ragged file after a crash: extend the header over the complete
    /// records (rows) written after it, drop torn ones, keep the trailer.
    #[command(after_help = "\
Examples:
  ra recover run.ra               run.ra: 1200 records -> 1264 records; trailer kept; 65800 bytes removed

Works in place on an uncompressed file whose last dim counts records (as the library's
RecordWriter writes them). Complete records are told from torn ones by the trailer block the
writer places after each flush. A file without a trailer is left alone (its trailing bytes
are named) unless --force, which extends its header over the whole records after its data.
A ragged file (RaggedWriter) gets back the rows of a flush whose header write was lost, found
through the offsets and the trailer block that flush wrote.
A file a writer is still appending to is refused: its tail is not torn, only not flushed yet.")]
    Recover {
        /// A .ra record file.
        file: PathBuf,
        /// Extend a file without a record trailer over the whole records after its data.
        #[arg(long)]
        force: bool,
    },
    /// Print the md5 (or sha256) of each file as md5sum (sha256sum) does, and with --data of
    /// each .ra file's data section.
    #[command(after_help = "\
Examples:
  ra checksum *.ra > SUMS         then: md5sum -c SUMS, or ra verify SUMS
  ra checksum --algo sha256 a.ra  as sha256sum a.ra
  ra checksum --tag a.ra          MD5 (a.ra) = ..., as md5sum --tag
  ra checksum --data *.ra > SUMS  also MD5-DATA (a.ra) = ..., which only ra verify reads

Lines are HEX  NAME, as md5sum and sha256sum write them and md5sum -c / sha256sum -c check
them; a name holding a backslash or newline is escaped as they escape it (the line starts
with a backslash). The data section is the stored bytes after the header (an LZ4 block's
compressed ones), trailing bytes excluded: it stays the same when a trailer changes. A
chunked section's is its decoded data, so it agrees with the plain file of the same array
(its stored bytes depend on the codec and on the order chunks were written in). md5sum -c
skips the -DATA lines with a warning. A file is read once (a chunked one twice).")]
    Checksum {
        /// Files (any file; .ra files with --data); - reads standard input.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// The algorithm of every line.
        #[arg(long, value_enum, value_name = "ALGO", default_value = "md5")]
        algo: Algo,
        /// BSD lines, as md5sum --tag: MD5 (NAME) = HEX.
        #[arg(long)]
        tag: bool,
        /// Also the digest of each data section: MD5-DATA (NAME) = HEX (read by ra verify).
        #[arg(long)]
        data: bool,
    },
    /// Check files against a sums file: md5sum/sha256sum lines or BSD tag lines.
    #[command(after_help = "\
Examples:
  ra verify tests/fixtures/reference/CHECKSUMS.md5
  ra checksum *.ra > SUMS && ra verify SUMS
  ra verify field.ra

Lines: `HEX  NAME` (md5sum, sha256sum, ra checksum), `MD5 (NAME) = HEX`, `SHA256 (..)` (the
--tag forms) and `MD5-DATA (..)`, `SHA256-DATA (..)` (ra checksum --data); escaped names (a
line starting with a backslash) as coreutils writes them. Names are relative to the folder of SUMS. Prints NAME: OK or
NAME: FAILED per line; exits 1 if any failed.

A .ra file (told from a sums file by its magic) is checked by what it says of itself: its
header, that it holds all its data, its trailer block, its block journal (a block an
ArrayWriter began and never committed: `block [a..b, ...) was never committed`) and, chunked,
every chunk: its index entry, its crc32 and each of its blocks decoded (`chunk N: ...`).")]
    Verify {
        /// The sums file, or a .ra file; - reads sums from standard input (names then relative
        /// to the current folder).
        sums: PathBuf,
    },
    /// Print a completion script for a shell, generated from these definitions.
    #[command(after_help = "\
Examples:
  ra completions bash > ~/.local/share/bash-completion/completions/ra
  ra completions zsh > ~/.zfunc/_ra          (with fpath+=~/.zfunc before compinit)
  ra completions fish > ~/.config/fish/completions/ra.fish
  ra completions powershell >> $PROFILE")]
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff), or write one page per subcommand into a folder.
    #[command(after_help = "\
Examples:
  ra man | man -l -                 read it now
  ra man --dir ~/.local/share/man/man1   ra.1 and ra-info.1, ra-cat.1, ...: man ra-diff

The pages are generated from the same definitions as --help.")]
    Man {
        /// Write ra.1 and ra-SUBCOMMAND.1 into this folder (made if missing, as mkdir -p)
        /// instead of printing ra.1.
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
    /// Any other NAME runs the program ra-NAME (beside ra, or on PATH) with the arguments.
    #[command(external_subcommand)]
    External(Vec<OsString>),
}

fn run(cli: Cli) -> Result<(), Failure> {
    report::set_quiet(cli.quiet);
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    match cli.command {
        Command::Info {
            files,
            json,
            stats,
            per_chunk,
        } => {
            remote::set_need(remote::Need::Meta);
            let stats = stats.then_some(info::Stats { per_chunk });
            info::run(&files, json, stats, &mut out)
        }
        Command::Cat { file, head, json } => {
            let file = source::input(&file)?;
            source::by_holds(
                &file,
                &mut out,
                |out| cat::run(&file, head, json, out),
                |out| ragged::cat(&file, head, json, out),
            )
        }
        Command::Convert {
            input,
            output,
            from,
            to,
            rgb,
            max_image_bytes,
            #[cfg(feature = "arrow")]
            batch_rows,
            #[cfg(feature = "arrow")]
            zstd,
            packing,
        } => {
            let up = remote::output(&output, false)?;
            convert::run(
                &convert::Request {
                    input: &input,
                    output: up.as_ref().map_or(output.as_path(), remote::Output::local),
                    from,
                    to,
                    rgb,
                    max_image_bytes,
                    #[cfg(feature = "arrow")]
                    batch_rows,
                    #[cfg(feature = "arrow")]
                    zstd,
                    packing: &packing,
                },
                &mut out,
            )?;
            up.map_or(Ok(()), remote::Output::upload)
        }
        Command::Compress {
            file,
            output,
            packing,
        } => {
            let up = remote::rewrite(&file, output.as_deref())?;
            let output = up.as_ref().map(remote::Output::local).or(output.as_deref());
            let file = rewritable("compress", &file, output)?;
            let packing = packing.or_defaults();
            source::by_holds(
                &file,
                &mut out,
                |_| compress::run(&file, output, Some(&packing)),
                |_| ragged::compress(&file, output, Some(&packing)),
            )?;
            up.map_or(Ok(()), remote::Output::upload)
        }
        Command::Decompress { file, output } => {
            let up = remote::rewrite(&file, output.as_deref())?;
            let output = up.as_ref().map(remote::Output::local).or(output.as_deref());
            let file = rewritable("decompress", &file, output)?;
            source::by_holds(
                &file,
                &mut out,
                |_| compress::run(&file, output, None),
                |_| ragged::compress(&file, output, None),
            )?;
            up.map_or(Ok(()), remote::Output::upload)
        }
        Command::Reshape { file, dims, output } => {
            let up = remote::rewrite(&file, output.as_deref())?;
            let output = up.as_ref().map(remote::Output::local).or(output.as_deref());
            let file = rewritable("reshape", &file, output)?;
            reshape::run(&file, &dims, output)?;
            up.map_or(Ok(()), remote::Output::upload)
        }
        Command::Slice {
            input,
            output,
            ranges,
            squeeze,
            packing,
        } => {
            let spec = ranges.clone();
            remote::set_need(remote::Need::Box(std::sync::Arc::new(
                move |dims: &[u64]| slice::bounding_box(&spec, dims).map_err(|m| ("slice", m)),
            )));
            let input = source::input(&input)?;
            let up = remote::output(&output, false)?;
            let output = up.as_ref().map_or(output.as_path(), remote::Output::local);
            source::by_holds(
                &input,
                &mut out,
                |out| slice::run(&input, output, &ranges, squeeze, &packing, out),
                |out| ragged::slice(&input, output, &ranges, &packing, out),
            )?;
            up.map_or(Ok(()), remote::Output::upload)
        }
        Command::Diff {
            a,
            b,
            rtol,
            atol,
            equal_nan,
            show,
            strict_schema,
        } => {
            if source::is_stdio(&a) && source::is_stdio(&b) {
                return Err(Failure::usage(
                    "diff",
                    "standard input (-) can be only one of the two files",
                ));
            }
            if !(rtol >= 0.0 && atol >= 0.0) {
                return Err(Failure::usage(
                    "diff",
                    "--rtol and --atol must be numbers >= 0",
                ));
            }
            let tol = diff::Tolerance {
                rtol,
                atol,
                equal_nan,
                show,
                strict_schema,
            };
            match diff::run(&source::input(&a)?, &source::input(&b)?, tol, &mut out)? {
                true => {
                    out.flush().map_err(Failure::stdout)?;
                    Err(Failure::Differ)
                }
                false => Ok(()),
            }
        }
        Command::Watch {
            file,
            last,
            summary,
        } => {
            remote::refuse("watch", &file)?;
            if source::is_stream(&file) {
                return Err(source::needs_a_file(
                    "watch",
                    "ra watch follows a file as it grows",
                    &file,
                ));
            }
            watch::run(&file, last, summary, &mut out)
        }
        Command::Recover { file, .. } if source::is_stream(&file) => Err(source::needs_a_file(
            "recover",
            "ra recover repairs a file in place",
            &file,
        )),
        Command::Recover { file, force } => {
            remote::refuse("recover", &file)?;
            recover::run(&file, force, &mut out)
        }
        Command::Checksum {
            files,
            algo,
            tag,
            data,
        } => checksum::run(&files, checksum::Style { algo, tag, data }, &mut out),
        Command::Verify { sums } => {
            let sums = if remote::is_url(&sums) {
                source::input(&sums)?
            } else {
                sums
            };
            checksum::verify(&sums, &mut out)
        }
        Command::Completions { shell } => {
            clap_complete::generate(shell, &mut Cli::command(), "ra", &mut out);
            Ok(())
        }
        Command::Man { dir } => manual::run(Cli::command(), dir.as_deref(), &mut out),
        Command::External(args) => unreachable!("main runs ra-{:?} itself", args.first()),
    }?;
    out.flush().map_err(Failure::stdout)
}

/// The input of a rewriting command: `-` (standard input) or a pipe only with `-o`, since in
/// place there is no file to replace; and never `-o -` (only `ra convert` and `ra slice` write
/// standard output).
fn rewritable(
    command: &'static str,
    file: &Path,
    output: Option<&Path>,
) -> Result<PathBuf, Failure> {
    if let Some(o) = output {
        not_stdout(command, o)?;
    } else if source::is_stream(file) {
        return Err(source::needs_a_file(
            command,
            &format!("ra {command} without -o rewrites FILE in place"),
            file,
        ));
    }
    source::input(file)
}

/// Refuses `-` as an output: only `ra convert` and `ra slice` write standard output.
fn not_stdout(command: &'static str, output: &Path) -> Result<(), Failure> {
    if source::is_stdio(output) {
        return Err(Failure::usage(
            command,
            "only ra convert and ra slice write standard output: ra convert IN - --to ra",
        ));
    }
    Ok(())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Command::External(args) = &cli.command {
        return external::run(args);
    }
    // `ra diff` exits as `diff` does: 1 means "different", so a file it cannot read is 2.
    let is_diff = matches!(cli.command, Command::Diff { .. });
    let error_code = if is_diff { 2 } else { 1 };
    let result = run(cli);
    copies::remove_stdin_copy();
    match result {
        // ra diff writes only when the files differ: a reader that stopped early
        // (`ra diff a b | head`) saw differences, and the status must say so.
        Err(Failure::BrokenPipe) if is_diff => ExitCode::from(1),
        Ok(()) | Err(Failure::BrokenPipe) => ExitCode::SUCCESS,
        Err(Failure::Differ) => ExitCode::from(1),
        Err(Failure::Usage { command, message }) => {
            // As clap reports its own usage errors, with the subcommand's usage line: exit 2.
            let mut cli = Cli::command();
            cli.build();
            let sub = cli.find_subcommand_mut(command).expect("a subcommand");
            sub.error(clap::error::ErrorKind::ValueValidation, message)
                .exit()
        }
        Err(e) => {
            let line = e.to_string();
            if !line.is_empty() {
                let _ = writeln!(io::stderr(), "ra: {line}");
            }
            ExitCode::from(error_code)
        }
    }
}
