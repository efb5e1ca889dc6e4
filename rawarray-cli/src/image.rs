//! `.ra` <-> `.png`.
//!
//! Layout: a gray image of width `w` and height `h` is the `.ra` dims `[w, h]` (numpy shape
//! `(h, w)`); an image of `c` channels (2 gray+alpha, 3 RGB, 4 RGBA) is `[c, w, h]` (numpy
//! `(h, w, c)`). Either way the data bytes are the PNG's rows, top to bottom, with the channels
//! of a pixel next to each other: exactly the bytes a PNG decoder hands out.
//!
//! The C reference's `png2ra` writes gray pictures as RGB with dims `[w, h, 3]` over such
//! interleaved bytes (see `tests/fixtures/reference/README.md`). `--rgb` expands gray to RGB
//! the same way, giving the same data bytes under dims `[3, w, h]`; `ra reshape FILE 3 W H`
//! makes such a file readable here.

use std::io::BufReader;
use std::path::Path;

use rawarray_serde::{DynArray, ElType};

use crate::output::write_atomic;

use crate::fail::{At, Failure, Result};
use crate::progress::Progress;
use crate::source::RaSource;
use crate::value::Decoder;

/// The most bytes a PNG may decode to unless `--max-image-bytes` says otherwise: a 4096 x 4096
/// RGBA image. A PNG of a few hundred kilobytes can claim a gigabyte of pixels.
pub const DEFAULT_MAX_IMAGE_BYTES: u64 = 64 << 20;

/// `.ra` -> `.png`. `uint8` is written as it is; every other numeric type is scaled from the
/// data's range (finite values; complex by magnitude) to 0..255.
pub fn ra_to_png(input: &Path, output: &Path) -> Result<()> {
    let mut src = RaSource::open(input)?;
    let header = src.plain_header();
    let (channels, width, height) = match header.dims[..] {
        [w, h] => (1, w, h),
        [c @ 1..=4, w, h] => (c, w, h),
        _ => {
            return Err(Failure::file(
                input,
                format!(
                    "dims {:?} are not an image: expected [w, h] (gray) or [c, w, h] with c = 1..4 \
                     interleaved channels (numpy shape (h, w, c)); `ra reshape` a file whose bytes \
                     are interleaved but whose dims say otherwise",
                    header.dims
                ),
            ))
        }
    };
    let (Ok(w), Ok(h)) = (u32::try_from(width), u32::try_from(height)) else {
        return Err(Failure::file(input, "image too large for PNG"));
    };
    if w == 0 || h == 0 {
        return Err(Failure::file(input, "a PNG cannot be empty"));
    }
    let decoder = Decoder::new(header.eltype, header.elbyte);
    if !decoder.is_numeric() {
        return Err(Failure::file(
            input,
            format!("{} elements are not pixel values", header.type_label()),
        ));
    }
    // The pixels are the output; the input is streamed through twice (range, then scaling)
    // rather than held, so memory is that of the PNG, whatever the element size.
    let pixels = if header.eltype == ElType::Uint && header.elbyte == 1 {
        src.read_all()?
    } else {
        let mut range = Range::EMPTY;
        src.for_each_chunk(None, &Progress::hidden(), |c| {
            range.extend(c, decoder);
            Ok(())
        })?;
        let mut pixels = Vec::with_capacity(header.num_elements() as usize);
        src.for_each_chunk(None, &Progress::hidden(), |c| {
            range.scale_into(c, decoder, &mut pixels);
            Ok(())
        })?;
        pixels
    };
    let color = match channels {
        1 => png::ColorType::Grayscale,
        2 => png::ColorType::GrayscaleAlpha,
        3 => png::ColorType::Rgb,
        _ => png::ColorType::Rgba,
    };
    write_atomic(output, |out| {
        let mut enc = png::Encoder::new(out, w, h);
        enc.set_color(color);
        enc.set_depth(png::BitDepth::Eight);
        let mut writer = enc.write_header().map_err(std::io::Error::other)?;
        writer
            .write_image_data(&pixels)
            .map_err(std::io::Error::other)?;
        writer.finish().map_err(std::io::Error::other)
    })
    .at(output)
}

/// The finite range of element values (complex: magnitude), which is mapped linearly to
/// 0..=255; non-finite values become 0, and so does everything when the range is one value.
#[derive(Clone, Copy, Debug)]
struct Range {
    lo: f64,
    hi: f64,
}

impl Range {
    const EMPTY: Range = Range {
        lo: f64::INFINITY,
        hi: f64::NEG_INFINITY,
    };

    fn extend(&mut self, data: &[u8], decoder: Decoder) {
        for b in data.chunks_exact(decoder.elbyte()) {
            if let Some(v) = decoder.decode(b).magnitude().filter(|v| v.is_finite()) {
                self.lo = self.lo.min(v);
                self.hi = self.hi.max(v);
            }
        }
    }

    fn scale_into(&self, data: &[u8], decoder: Decoder, out: &mut Vec<u8>) {
        let span = self.hi - self.lo;
        out.extend(data.chunks_exact(decoder.elbyte()).map(
            |b| match decoder.decode(b).magnitude() {
                Some(v) if v.is_finite() && span > 0.0 => {
                    ((v - self.lo) / span * 255.0).round() as u8
                }
                _ => 0,
            },
        ));
    }
}

#[cfg(test)]
fn scale_to_u8(data: &[u8], decoder: Decoder) -> Vec<u8> {
    let mut range = Range::EMPTY;
    range.extend(data, decoder);
    let mut out = Vec::new();
    range.scale_into(data, decoder, &mut out);
    out
}

/// `.png` -> `.ra`: 8-bit pixels as `uint8`, 16-bit as `uint16`; palettes and bit depths
/// below 8 are expanded. With `rgb`, gray is repeated into R, G, B (gray+alpha into RGBA), as
/// the C reference's `png2ra` does. An image whose `.ra` data would exceed `max_bytes` is
/// refused before its pixels are decoded.
pub fn png_to_ra(input: &Path, output: &Path, rgb: bool, max_bytes: u64) -> Result<()> {
    let file = crate::source::open_regular(input)?;
    let mut decoder = png::Decoder::new(BufReader::new(file));
    decoder.set_transformations(png::Transformations::EXPAND);
    let mut reader = decoder.read_info().at(input)?;
    let size = reader
        .output_buffer_size()
        .ok_or_else(|| Failure::file(input, "image too large for memory"))?;
    let (_, depth) = reader.output_color_type();
    let samples = reader.output_color_type().0.samples() as u64;
    // --rgb turns 1 or 2 samples per pixel into 3 or 4.
    let out_bytes = match samples {
        1 | 2 if rgb => size as u64 / samples * (samples + 2),
        _ => size as u64,
    };
    if out_bytes > max_bytes {
        let info = reader.info();
        return Err(Failure::file(
            input,
            format!(
                "a {} x {} image of {samples} {depth:?}-bit samples per pixel decodes to \
                 {out_bytes} bytes, more than --max-image-bytes {max_bytes}",
                info.width, info.height
            ),
        ));
    }
    let mut buf = vec![0u8; size];
    let frame = reader.next_frame(&mut buf).at(input)?;
    buf.truncate(frame.buffer_size());
    let (width, height) = (u64::from(frame.width), u64::from(frame.height));
    let mut channels = frame.color_type.samples();
    let sample = match frame.bit_depth {
        png::BitDepth::Eight => 1,
        png::BitDepth::Sixteen => 2,
        d => {
            return Err(Failure::file(
                input,
                format!("{d:?}-bit samples were not expanded"),
            ))
        }
    };
    if sample == 2 {
        // PNG stores 16-bit samples big-endian; .ra data is little-endian.
        buf.chunks_exact_mut(2).for_each(<[u8]>::reverse);
    }
    if rgb && channels <= 2 {
        buf = gray_to_rgb(&buf, channels, sample);
        channels += 2;
    }
    let dims = if channels == 1 {
        vec![width, height]
    } else {
        vec![channels as u64, width, height]
    };
    let array = DynArray::new(ElType::Uint, sample as u64, dims, buf).at(input)?;
    write_atomic(output, |w| array.write_to(w)).at(output)
}

/// Repeats the gray sample of each pixel three times, keeping alpha after it.
fn gray_to_rgb(buf: &[u8], channels: usize, sample: usize) -> Vec<u8> {
    let pixel = channels * sample;
    let mut out = Vec::with_capacity(buf.len() / channels * (channels + 2));
    for px in buf.chunks_exact(pixel) {
        let (gray, alpha) = px.split_at(sample);
        for _ in 0..3 {
            out.extend_from_slice(gray);
        }
        out.extend_from_slice(alpha);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scaling_spans_the_finite_range() {
        let d = Decoder::new(ElType::Float, 8);
        let data: Vec<u8> = [-1.0f64, 0.0, 1.0, f64::NAN, f64::INFINITY]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        assert_eq!(scale_to_u8(&data, d), vec![0, 128, 255, 0, 0]);
        let d = Decoder::new(ElType::Uint, 2);
        let flat: Vec<u8> = [7u16, 7].iter().flat_map(|v| v.to_le_bytes()).collect();
        assert_eq!(scale_to_u8(&flat, d), vec![0, 0]);
    }

    #[test]
    fn gray_expands_to_rgb_and_keeps_alpha() {
        assert_eq!(gray_to_rgb(&[1, 2], 1, 1), vec![1, 1, 1, 2, 2, 2]);
        assert_eq!(gray_to_rgb(&[1, 9], 2, 1), vec![1, 1, 1, 9]);
        assert_eq!(gray_to_rgb(&[1, 2], 1, 2), vec![1, 2, 1, 2, 1, 2]);
    }
}
