//! Appending records to a `.ra` file as a simulation runs, crash-safely ([`RecordWriter`], whose
//! docs describe the file layout and the order of writes), and repairing a file whose last
//! flush was cut short ([`recover`]). The mapped reader is [`RecordReader`].
//!
//! Split by concept: `options` (how a file is created or reopened: [`RecordOptions`],
//! [`Durability`]), `spec` (what one record is: [`ElementSpec`]), `writer` (the appending
//! writers and their flush), `chunked` (compressed record files), `commit` (the trailer copies
//! and the one-`pwrite` header, shared with the ragged writer) and `recover` (repairing a file
//! after a crash: [`recover()`]).

mod chunked;
mod commit;
mod options;
mod recover;
mod spec;
mod writer;

pub use crate::mapped::{ReadMode, RecordReadOptions, RecordReader};
pub use crate::recovery::{recover, recover_with, RecoverOptions};
pub(crate) use chunked::{default_records, Chunked};
pub(crate) use commit::{reserve_spare, settle};
pub use options::RecordOptions;
pub(crate) use recover::recover_records;
pub(crate) use recover::spare_and_limit;
pub use recover::Recovery;
pub use spec::ElementSpec;
pub(crate) use spec::RecordShape;
pub use writer::{Durability, DynRecordWriter, RecordWriter};
