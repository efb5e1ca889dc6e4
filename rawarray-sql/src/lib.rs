//! SQL over RawArray (`.ra`) files through [Apache DataFusion](datafusion): a record file is
//! a table (one row per record, one column per field, as `rawarray-arrow` maps them), and a
//! query names it by its path.
//!
//! [`RaTableProvider`] is a DataFusion [`TableProvider`] over one `.ra` file: it streams the
//! file's rows in Arrow batches from [`rawarray_arrow::RaTable`], reading only the columns a
//! query uses (projection pushdown: the other fields are never gathered out of the records).
//! [`query`] runs one SQL statement in which every table named by a string ending in `.ra`
//! (`FROM 'run.ra'`) is that file; [`register_files`] does the same for a
//! [`SessionContext`] of your own. The `ra-sql` command (and `ra sql`, which runs it) prints a
//! query's result.
//!
//! ```
//! use rawarray_serde::{RaRecord, RecordWriter};
//! use datafusion::arrow::array::{AsArray, RecordBatch};
//! use datafusion::arrow::datatypes::{Float64Type, UInt32Type};
//! #[derive(RaRecord, Clone)]
//! struct Body { step: u32, energy: f64 }
//! let dir = tempfile::tempdir().unwrap();
//! let path = dir.path().join("run.ra");
//! let mut w = RecordWriter::<Body>::create(&path, ()).unwrap();
//! for (step, energy) in [(0, 1.0), (0, 3.0), (1, 5.0)] {
//!     w.append(&Body { step, energy }).unwrap();
//! }
//! w.finish().unwrap();
//!
//! let sql = format!("SELECT step, avg(energy) AS e FROM '{}' GROUP BY step ORDER BY step", path.display());
//! let batches: Vec<RecordBatch> = rawarray_sql::query_blocking(&sql).unwrap();
//! let b = &batches[0];
//! assert_eq!(b.column(0).as_primitive::<UInt32Type>().values(), &[0, 1]);
//! assert_eq!(b.column(1).as_primitive::<Float64Type>().values(), &[2.0, 5.0]);
//! ```
#![deny(missing_docs)]

use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::TableReference;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::logical_expr::{Expr, TableType};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::streaming::{PartitionStream, StreamingTableExec};
use datafusion::physical_plan::{ExecutionPlan, SendableRecordBatchStream};
use datafusion::prelude::SessionContext;
use rawarray_arrow::RaTable;

pub use datafusion;

/// A `.ra` file as a DataFusion table: its schema is [`RaTable::schema`]'s, and a scan streams
/// its rows in batches of [`RaTableProvider::batch_rows`], in file order, with only the columns
/// the plan needs.
///
/// ```
/// use std::sync::Arc;
/// use rawarray_serde::{RaRecord, RecordWriter};
/// #[derive(RaRecord, Clone)]
/// struct Body { step: u32, energy: f64 }
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("run.ra");
/// let mut w = RecordWriter::<Body>::create(&path, ()).unwrap();
/// for step in 0..4 { w.append(&Body { step, energy: 2.0 }).unwrap(); }
/// w.finish().unwrap();
///
/// let ctx = datafusion::prelude::SessionContext::new();
/// ctx.register_table("run", Arc::new(rawarray_sql::RaTableProvider::open(&path).unwrap())).unwrap();
/// let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
/// let batches = rt.block_on(async { ctx.sql("SELECT sum(energy) FROM run").await?.collect().await }).unwrap();
/// let sum = batches[0].column(0).as_any().downcast_ref::<datafusion::arrow::array::Float64Array>().unwrap();
/// assert_eq!(sum.value(0), 8.0);
/// ```
#[derive(Clone)]
pub struct RaTableProvider {
    table: RaTable,
    batch_rows: usize,
}

impl std::fmt::Debug for RaTableProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RaTableProvider")
            .field("path", &self.table.path())
            .field("rows", &self.table.rows())
            .field("batch_rows", &self.batch_rows)
            .finish()
    }
}

impl RaTableProvider {
    /// Opens a `.ra` file as a table ([`RaTable::open`]): its header and trailer are read and
    /// checked now, its data when a query runs.
    pub fn open(path: impl AsRef<Path>) -> Result<RaTableProvider> {
        let table = RaTable::open(path).map_err(|e| DataFusionError::External(Box::new(e)))?;
        Ok(RaTableProvider::new(table))
    }

    /// A table over an opened [`RaTable`], read in batches of
    /// [`rawarray_arrow::DEFAULT_BATCH_ROWS`] rows.
    pub fn new(table: RaTable) -> RaTableProvider {
        RaTableProvider {
            table,
            batch_rows: rawarray_arrow::DEFAULT_BATCH_ROWS,
        }
    }

    /// The rows a scan reads at a time (at least 1): the memory a scan holds is about one
    /// batch of the columns it reads.
    #[must_use]
    pub fn with_batch_rows(mut self, rows: usize) -> RaTableProvider {
        self.batch_rows = rows.max(1);
        self
    }

    /// The rows a scan reads at a time.
    pub fn batch_rows(&self) -> usize {
        self.batch_rows
    }

    /// The file, opened.
    pub fn table(&self) -> &RaTable {
        &self.table
    }
}

#[async_trait]
impl TableProvider for RaTableProvider {
    fn schema(&self) -> SchemaRef {
        self.table.schema()
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    async fn scan(
        &self,
        _state: &dyn Session,
        projection: Option<&Vec<usize>>,
        // No filter is pushed down (the default `supports_filters_pushdown` says so): the
        // records carry no index or statistics that would let a scan skip rows.
        _filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let columns: Vec<usize> = match projection {
            Some(p) => p.clone(),
            None => (0..self.table.schema().fields().len()).collect(),
        };
        let schema = Arc::new(self.table.schema().project(&columns)?);
        let partition = RaPartition {
            table: self.table.clone(),
            columns,
            schema: schema.clone(),
            batch_rows: self.batch_rows,
        };
        // The projection is the partition's own: the exec is handed batches already projected.
        Ok(Arc::new(StreamingTableExec::try_new(
            schema,
            vec![Arc::new(partition)],
            None,
            [],
            false,
            limit,
        )?))
    }
}

/// One scan of a file: its batches, with the scan's columns only.
struct RaPartition {
    table: RaTable,
    columns: Vec<usize>,
    schema: SchemaRef,
    batch_rows: usize,
}

impl std::fmt::Debug for RaPartition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RaPartition")
            .field("path", &self.table.path())
            .field("columns", &self.columns)
            .finish()
    }
}

impl PartitionStream for RaPartition {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    fn execute(&self, _ctx: Arc<TaskContext>) -> SendableRecordBatchStream {
        // A batch is read from a map or decoded from the file when the stream is polled: the
        // engine pulls one batch at a time, so memory stays bounded by the batch.
        let batches: Box<dyn Iterator<Item = Result<RecordBatch>> + Send> =
            match self.table.batches_of(&self.columns, self.batch_rows) {
                Ok(reader) => Box::new(reader.map(|b| b.map_err(DataFusionError::from))),
                Err(e) => Box::new(std::iter::once(Err(DataFusionError::External(Box::new(e))))),
            };
        Box::pin(RecordBatchStreamAdapter::new(
            self.schema.clone(),
            futures::stream::iter(batches),
        ))
    }
}

/// Whether a table name in a query is a `.ra` file's path: a name ending in `.ra` (quoted,
/// as in `FROM 'run.ra'` or `FROM "data/run.ra"`, since a path is not an SQL identifier).
fn is_ra_path(name: &str) -> bool {
    name.len() > 3 && name[name.len() - 3..].eq_ignore_ascii_case(".ra")
}

/// Registers in `ctx` every table of `sql` whose name is a `.ra` file's path, as a
/// [`RaTableProvider`] under that name, so that `ctx.sql(sql)` finds them. A file that
/// cannot be opened is an error naming it; a statement that does not parse is DataFusion's
/// SQL error. Names already registered are left as they are.
///
/// ```
/// use rawarray_serde::{RaRecord, RecordWriter};
/// #[derive(RaRecord, Clone)]
/// struct Body { step: u32 }
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("run.ra");
/// let mut w = RecordWriter::<Body>::create(&path, ()).unwrap();
/// w.append(&Body { step: 3 }).unwrap();
/// w.finish().unwrap();
///
/// let ctx = datafusion::prelude::SessionContext::new();
/// let sql = format!("SELECT count(*) FROM '{}'", path.display());
/// rawarray_sql::register_files(&ctx, &sql).unwrap();
/// assert!(ctx.table_exist(path.display().to_string().as_str()).unwrap());
/// assert!(rawarray_sql::register_files(&ctx, "SELECT * FROM 'missing.ra'").is_err());
/// assert!(rawarray_sql::register_files(&ctx, "SELEKT 1").is_err());
/// ```
pub fn register_files(ctx: &SessionContext, sql: &str) -> Result<()> {
    let state = ctx.state();
    let dialect = state.config_options().sql_parser.dialect;
    let statement = state.sql_to_statement(sql, &dialect)?;
    for reference in state.resolve_table_references(&statement)? {
        let TableReference::Bare { table } = &reference else {
            continue;
        };
        if !is_ra_path(table) || ctx.table_exist(reference.clone())? {
            continue;
        }
        // rawarray-arrow's error names the file and what is wrong with it.
        let table =
            RaTable::open(table.as_ref()).map_err(|e| DataFusionError::Plan(e.to_string()))?;
        ctx.register_table(reference.clone(), Arc::new(RaTableProvider::new(table)))?;
    }
    Ok(())
}

/// Runs one SQL statement in a new [`SessionContext`] in which every table named by a `.ra`
/// path is that file ([`register_files`]), and collects its result.
pub async fn query(sql: &str) -> Result<Vec<RecordBatch>> {
    let ctx = SessionContext::new();
    register_files(&ctx, sql)?;
    ctx.sql(sql).await?.collect().await
}

/// [`query`] on a Tokio runtime of its own, for callers that are not async.
pub fn query_blocking(sql: &str) -> Result<Vec<RecordBatch>> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .build()
        .map_err(DataFusionError::IoError)?;
    runtime.block_on(query(sql))
}
