//! The bytes of an object fetched so far, as a [`ReadAt`] source that a
//! [`Section`](crate::section::Section) reads through: the pieces one read fetched ([`Call`])
//! over a byte-bounded cache shared by every read of the opened object ([`Fetched`]).

use std::collections::BTreeMap;
use std::io;
use std::ops::Range;
use std::sync::Mutex;

use bytes::Bytes;

use crate::io::ReadAt;

/// Bytes of fetched pieces the shared cache keeps (least recently used dropped first); the
/// header, config and index segments fetched at open are kept besides, whatever their size.
pub(crate) const SHARED_BYTES: usize = 64 << 20;

/// How many pieces a look-up walks back from an offset: pieces overlap only where a read
/// fetched a chunk whole after another fetched its table.
const WALK: usize = 16;

#[derive(Default)]
struct Cache {
    /// By start offset: the bytes and the tick of their last use.
    pieces: BTreeMap<u64, (Bytes, u64)>,
    bytes: usize,
    tick: u64,
}

/// The fetched pieces of one object shared by its reads: those fetched at open (kept), and
/// the most recently fetched or used others up to [`SHARED_BYTES`].
pub(crate) struct Fetched {
    len: u64,
    kept: Vec<(u64, Bytes)>,
    cache: Mutex<Cache>,
}

fn find(pieces: &[(u64, Bytes)], r: &Range<u64>) -> Option<Bytes> {
    pieces.iter().find_map(|(s, b)| {
        let end = s + b.len() as u64;
        (*s <= r.start && r.end <= end)
            .then(|| b.slice((r.start - s) as usize..(r.end - s) as usize))
    })
}

impl Fetched {
    /// An object of `len` bytes whose pieces `kept` were fetched at open.
    pub(crate) fn new(len: u64, kept: Vec<(u64, Bytes)>) -> Fetched {
        Fetched {
            len,
            kept,
            cache: Mutex::default(),
        }
    }

    /// The bytes `r`, if a piece holds them all.
    pub(crate) fn get(&self, r: &Range<u64>) -> Option<Bytes> {
        if let Some(b) = find(&self.kept, r) {
            return Some(b);
        }
        let mut c = self.cache.lock().expect("piece cache lock");
        c.tick += 1;
        let tick = c.tick;
        for (s, (b, t)) in c.pieces.range_mut(..=r.start).rev().take(WALK) {
            let end = s + b.len() as u64;
            if r.end <= end {
                *t = tick;
                return Some(b.slice((r.start - s) as usize..(r.end - s) as usize));
            }
        }
        None
    }

    /// Keeps a fetched piece, dropping the least recently used beyond [`SHARED_BYTES`]; a
    /// piece of more than a quarter of that is not kept (a whole-array read's spans).
    pub(crate) fn put(&self, start: u64, bytes: Bytes) {
        if bytes.len() > SHARED_BYTES / 4 || bytes.is_empty() {
            return;
        }
        let mut c = self.cache.lock().expect("piece cache lock");
        while c.bytes + bytes.len() > SHARED_BYTES {
            let Some((&old, _)) = c.pieces.iter().min_by_key(|(_, (_, t))| *t) else {
                break;
            };
            let (b, _) = c.pieces.remove(&old).expect("found above");
            c.bytes -= b.len();
        }
        c.tick += 1;
        let tick = c.tick;
        c.bytes += bytes.len();
        if let Some((b, _)) = c.pieces.insert(start, (bytes, tick)) {
            c.bytes -= b.len();
        }
    }
}

impl ReadAt for Fetched {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let r = offset..offset.saturating_add(buf.len() as u64);
        let b = self.get(&r).ok_or(io::ErrorKind::UnexpectedEof)?;
        buf.copy_from_slice(&b);
        Ok(())
    }
    fn source_len(&self) -> io::Result<u64> {
        Ok(self.len)
    }
    fn has(&self, range: Range<u64>) -> bool {
        range.is_empty() || self.get(&range).is_some()
    }
}

/// The pieces one read fetched, over the shared ones; a read of bytes neither holds fails and
/// is remembered, so that the reader can fetch them and read again.
pub(crate) struct Call<'a> {
    shared: &'a Fetched,
    mine: Vec<(u64, Bytes)>,
    missed: Mutex<Vec<Range<u64>>>,
}

impl<'a> Call<'a> {
    pub(crate) fn new(shared: &'a Fetched) -> Call<'a> {
        Call {
            shared,
            mine: Vec::new(),
            missed: Mutex::default(),
        }
    }

    /// Adds a piece this read fetched (and offers it to the shared cache).
    pub(crate) fn add(&mut self, start: u64, bytes: Bytes) {
        self.shared.put(start, bytes.clone());
        self.mine.push((start, bytes));
    }

    /// The pieces this read fetched.
    pub(crate) fn into_pieces(self) -> Vec<(u64, Bytes)> {
        self.mine
    }

    /// The reads that found nothing since the last call, forgotten.
    pub(crate) fn take_missed(&self) -> Vec<Range<u64>> {
        std::mem::take(&mut *self.missed.lock().expect("missed lock"))
    }

    fn get(&self, r: &Range<u64>) -> Option<Bytes> {
        find(&self.mine, r).or_else(|| self.shared.get(r))
    }
}

impl ReadAt for Call<'_> {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let r = offset..offset.saturating_add(buf.len() as u64);
        match self.get(&r) {
            Some(b) => {
                buf.copy_from_slice(&b);
                Ok(())
            }
            None => {
                self.missed.lock().expect("missed lock").push(r);
                Err(io::ErrorKind::UnexpectedEof.into())
            }
        }
    }
    fn source_len(&self) -> io::Result<u64> {
        Ok(self.shared.len)
    }
    fn has(&self, range: Range<u64>) -> bool {
        range.is_empty() || self.get(&range).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_are_found_inside_overlaps_and_dropped_by_age() {
        let f = Fetched::new(1 << 30, vec![(0, Bytes::from_static(b"header"))]);
        f.put(100, Bytes::from(vec![1u8; 50])); // 100..150
        f.put(120, Bytes::from(vec![2u8; 5])); // 120..125, inside the first
        assert_eq!(&f.get(&(130..140)).unwrap()[..], &[1u8; 10]);
        assert_eq!(&f.get(&(121..123)).unwrap()[..], &[2u8; 2]);
        assert!(f.get(&(140..151)).is_none());
        assert_eq!(&f.get(&(1..3)).unwrap()[..], b"ea");
        // Filling the cache drops the least recently used piece first, never the kept ones.
        let big = SHARED_BYTES / 4;
        for i in 0..4u64 {
            f.put((i + 1) << 26, Bytes::from(vec![0u8; big]));
        }
        assert!(f.get(&(100..101)).is_none(), "the oldest pieces went first");
        assert!(f.has((4 << 26)..(4 << 26) + 10));
        assert!(f.has(0..6));
        let mut call = Call::new(&f);
        let mut b = [0u8; 4];
        assert!(call.read_exact_at(&mut b, 9000).is_err());
        assert_eq!(call.take_missed(), vec![9000..9004]);
        call.add(9000, Bytes::from_static(b"abcd"));
        call.read_exact_at(&mut b, 9000).unwrap();
        assert_eq!(&b, b"abcd");
        assert!(call.take_missed().is_empty());
    }
}
