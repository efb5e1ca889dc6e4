//! SQL over RawArray (`.ra`) files through [Apache DataFusion](datafusion): a record file is
//! a table (one row per record, one column per field, as `rawarray-arrow` maps them), and a
//! query names it by its path.
//!
//! [`RaTableProvider`] is a DataFusion [`TableProvider`] over one `.ra` file: it streams the
//! file's rows in Arrow batches from [`rawarray_arrow::RaTable`], reading only the columns a
//! query uses (projection pushdown: the other fields are never gathered out of the records),
//! only the chunks whose statistics allow a row to match the query's `WHERE` (filter pushdown,
//! inexact: comparisons, `BETWEEN`, `IN` and `AND`/`OR`/`NOT` of those on any scalar field;
//! DataFusion filters the rows again), and no more rows than a `LIMIT` asks for.
//! [`query`] runs one SQL statement in which every table named by a string ending in `.ra`
//! (`FROM 'run.ra'`) is that file, and every table named by an object-store URL
//! (`FROM 's3://bucket/run.ra'`; `gs://`, `az://`, `http(s)://`, `file://` too) is that
//! object, read by ranged requests ([`RaTableProvider::open_url`]); [`register_files`] does
//! the same for a [`SessionContext`] of your own. The `ra-sql` command (and `ra sql`, which
//! runs it) prints a query's result.
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

use rawarray_serde::section::Storage;
use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::DataType;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::ScalarValue;
use datafusion::common::TableReference;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::logical_expr::{Expr, Operator, TableProviderFilterPushDown, TableType};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::streaming::{PartitionStream, StreamingTableExec};
use datafusion::physical_plan::{ExecutionPlan, SendableRecordBatchStream};
use datafusion::prelude::SessionContext;
use rawarray_arrow::{RaTable, ScanOptions};
use rawarray_serde::query::{Op, Predicate, RowFilter, Value};

pub use datafusion;

mod url;

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

    /// Opens the `.ra` object an object-store URL names as a table (any of
    /// [`rawarray_serde::store::SCHEMES`]), its store configured from the environment as `ra`
    /// configures it (`AWS_*`, `GOOGLE_*`, `AZURE_*`) and from `options` (fsspec's names or
    /// object_store's: `endpoint_url`, `region_name`, `anon`, ...). The object is opened now, by rawarray-serde's `StoreArrayReader` (its
    /// header, trailer and a chunked object's index: one or two requests), and every later
    /// request is pinned to it (an object replaced meanwhile is an error, never other bytes). A
    /// scan fetches the blocks it reads by ranged requests: the rows of its batches, and of a
    /// chunked object only the chunks that a filter's statistics do not rule out. Errors name
    /// the URL, and never a credential. A ragged object (rows of different lengths) is read
    /// through rawarray-serde's `StoreSource`: its rows by positioned reads served from 1 MiB
    /// blocks of the object, fetched as the scan reaches them.
    ///
    /// ```
    /// use rawarray_serde::{RaRecord, RecordWriter};
    /// #[derive(RaRecord, Clone)]
    /// struct Body { step: u32, energy: f64 }
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("run.ra");
    /// let mut w = RecordWriter::<Body>::create(&path, ()).unwrap();
    /// for step in 0..4 { w.append(&Body { step, energy: 2.0 }).unwrap(); }
    /// w.finish().unwrap();
    ///
    /// let url = format!("file://{}", path.display());
    /// let options = rawarray_serde::store::StorageOptions::new();
    /// let t = rawarray_sql::RaTableProvider::open_url(&url, &options).unwrap();
    /// assert_eq!(t.table().rows(), 4);
    /// let err = rawarray_sql::RaTableProvider::open_url(&format!("{url}.gone.ra"), &options).unwrap_err();
    /// assert!(err.to_string().contains(&format!("{url}.gone.ra")), "{err}");
    /// ```
    pub fn open_url(
        url: &str,
        options: &rawarray_serde::store::StorageOptions,
    ) -> Result<RaTableProvider> {
        Ok(RaTableProvider::new(url::open(url, options)?))
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

    /// The file (or object), opened.
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

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> Result<Vec<TableProviderFilterPushDown>> {
        // Inexact: a chunk is skipped only when its statistics prove no row of it matches,
        // and DataFusion filters the rows read again.
        Ok(filters
            .iter()
            .map(|f| match self.predicate_of(f) {
                Some(_) => TableProviderFilterPushDown::Inexact,
                None => TableProviderFilterPushDown::Unsupported,
            })
            .collect())
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let columns: Vec<usize> = match projection {
            Some(p) => p.clone(),
            None => (0..self.table.schema().fields().len()).collect(),
        };
        let schema = Arc::new(self.table.schema().project(&columns)?);
        let mut scan = ScanOptions::new()
            .columns(columns.clone())
            .batch_rows(self.batch_rows)
            .exact(false);
        let conjuncts: Vec<Predicate> = filters
            .iter()
            .filter_map(|f| self.predicate_of(f))
            .collect();
        if !conjuncts.is_empty() {
            scan = scan.filter(Predicate::And(conjuncts));
            if Storage::of(self.table.header()).has_chunk_index() {
                // A chunk a batch (batches are whole chunks), so that a LIMIT above the filter
                // stops the reading within a chunk of where it could.
                scan = scan.batch_rows(1);
            }
        }
        // A scan under a limit reads in order, from one partition; any other reads the file's
        // chunks in as many parts as the engine runs partitions, in parallel.
        let parts = match limit {
            Some(n) => {
                scan = scan.limit(n as u64);
                1
            }
            None => state.config().target_partitions().max(1),
        };
        let partitions: Vec<Arc<dyn PartitionStream>> = (0..parts)
            .map(|k| {
                Arc::new(RaPartition {
                    table: self.table.clone(),
                    scan: scan.clone().part(k, parts),
                    schema: schema.clone(),
                }) as Arc<dyn PartitionStream>
            })
            .collect();
        // The projection is the partition's own: the exec is handed batches already projected.
        Ok(Arc::new(StreamingTableExec::try_new(
            schema,
            partitions,
            None,
            [],
            false,
            limit,
        )?))
    }
}

impl RaTableProvider {
    /// The predicate a pushed-down filter implies, that the file's rows can be tested with: a
    /// chunk it rules out holds no row the filter keeps. `None` where nothing is implied (an
    /// expression on no column of the file, or one this provider does not take apart).
    ///
    /// ```
    /// use datafusion::prelude::{col, lit};
    /// use rawarray_serde::{RaRecord, RecordWriter};
    /// #[derive(RaRecord, Clone)]
    /// struct Body { step: u32, energy: f64 }
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("run.ra");
    /// RecordWriter::<Body>::create(&path, ()).unwrap().finish().unwrap();
    /// let t = rawarray_sql::RaTableProvider::open(&path).unwrap();
    /// let p = t.predicate_of(&col("step").between(lit(10u32), lit(20u32)).and(col("energy").gt(lit(0.5)))).unwrap();
    /// assert_eq!(p.to_string(), "step between 10 and 20 and energy > 0.5");
    /// assert!(t.predicate_of(&(col("step") + lit(1u32)).eq(lit(5u32))).is_none());
    /// ```
    pub fn predicate_of(&self, expr: &Expr) -> Option<Predicate> {
        let p = implied(expr, &self.table.schema(), false)?;
        // A column the rows cannot be tested by (a complex part, a 128-bit integer) implies
        // nothing here.
        RowFilter::new(&p, self.table.layout()).ok()?;
        Some(p)
    }
}

/// The predicate `expr` implies (`exact`: is equivalent to, for `NOT`'s operand), over the
/// columns of `schema`.
fn implied(expr: &Expr, schema: &SchemaRef, exact: bool) -> Option<Predicate> {
    match expr {
        Expr::BinaryExpr(b) if b.op == Operator::And => {
            let (l, r) = (
                implied(&b.left, schema, exact),
                implied(&b.right, schema, exact),
            );
            match (l, r) {
                (Some(l), Some(r)) => Some(l.and(r)),
                (Some(one), None) | (None, Some(one)) if !exact => Some(one),
                _ => None,
            }
        }
        Expr::BinaryExpr(b) if b.op == Operator::Or => {
            Some(implied(&b.left, schema, exact)?.or(implied(&b.right, schema, exact)?))
        }
        Expr::BinaryExpr(b) => {
            let op = match b.op {
                Operator::Eq => Op::Eq,
                Operator::NotEq => Op::Ne,
                Operator::Lt => Op::Lt,
                Operator::LtEq => Op::Le,
                Operator::Gt => Op::Gt,
                Operator::GtEq => Op::Ge,
                _ => return None,
            };
            // `literal op column` is `column op' literal`.
            let (column, value, op) = match (column_of(&b.left, schema), literal(&b.right)) {
                (Some(c), Some(v)) => (c, v, op),
                _ => {
                    let flipped = match op {
                        Op::Lt => Op::Gt,
                        Op::Le => Op::Ge,
                        Op::Gt => Op::Lt,
                        Op::Ge => Op::Le,
                        same => same,
                    };
                    (column_of(&b.right, schema)?, literal(&b.left)?, flipped)
                }
            };
            compare(column, op, value)
        }
        Expr::Not(inner) => Some(!implied(inner, schema, true)?),
        Expr::Between(b) => {
            let column = column_of(&b.expr, schema)?;
            let (low, high) = (literal(&b.low)?, literal(&b.high)?);
            if column.1 == DataType::Boolean {
                return None;
            }
            let p = Predicate::between(column.0, low.number()?, high.number()?);
            Some(if b.negated { !p } else { p })
        }
        Expr::InList(l) => {
            let column = column_of(&l.expr, schema)?;
            let values = l
                .list
                .iter()
                .map(|e| compare(column.clone(), Op::Eq, literal(e)?))
                .collect::<Option<Vec<_>>>()?;
            let p = Predicate::Or(values);
            Some(if l.negated { !p } else { p })
        }
        // A bool column alone, or asked whether it is true or false.
        Expr::Column(_) | Expr::IsTrue(_) | Expr::IsFalse(_) => {
            let (inner, truth) = match expr {
                Expr::IsTrue(e) => (&**e, true),
                Expr::IsFalse(e) => (&**e, false),
                e => (e, true),
            };
            let column = column_of(inner, schema)?;
            compare(column, Op::Eq, Lit::Bool(truth))
        }
        _ => None,
    }
}

/// A literal of a comparison.
#[derive(Clone, Copy, Debug)]
enum Lit {
    Number(Value),
    Bool(bool),
}

impl Lit {
    fn number(self) -> Option<Value> {
        match self {
            Lit::Number(v) => Some(v),
            Lit::Bool(_) => None,
        }
    }
}

/// `column op value`: numbers as they are; a bool column by whether its byte is 0, as Arrow
/// reads it (any byte but 0 is true).
fn compare((name, ty): (String, DataType), op: Op, value: Lit) -> Option<Predicate> {
    match (ty == DataType::Boolean, value) {
        (false, Lit::Number(v)) => Some(Predicate::compare(name, op, v)),
        (true, Lit::Bool(b)) => {
            let is_true = match op {
                Op::Eq => b,
                Op::Ne => !b,
                _ => return None,
            };
            Some(if is_true {
                Predicate::ne(name, 0u8)
            } else {
                Predicate::eq(name, 0u8)
            })
        }
        _ => None,
    }
}

/// The value of a non-null numeric or boolean literal.
fn literal(expr: &Expr) -> Option<Lit> {
    let Expr::Literal(v, _) = expr else {
        return None;
    };
    let n = |v: Value| Some(Lit::Number(v));
    match v {
        ScalarValue::Boolean(Some(b)) => Some(Lit::Bool(*b)),
        ScalarValue::Int8(Some(v)) => n((*v).into()),
        ScalarValue::Int16(Some(v)) => n((*v).into()),
        ScalarValue::Int32(Some(v)) => n((*v).into()),
        ScalarValue::Int64(Some(v)) => n((*v).into()),
        ScalarValue::UInt8(Some(v)) => n((*v).into()),
        ScalarValue::UInt16(Some(v)) => n((*v).into()),
        ScalarValue::UInt32(Some(v)) => n((*v).into()),
        ScalarValue::UInt64(Some(v)) => n((*v).into()),
        ScalarValue::Float16(Some(v)) => n(Value::Float(v.to_f64())),
        ScalarValue::Float32(Some(v)) => n((*v).into()),
        ScalarValue::Float64(Some(v)) => n((*v).into()),
        ScalarValue::Decimal128(Some(v), _, 0) => n(Value::Int(*v)),
        _ => None,
    }
}

/// The file's column an expression reads, by its name (a nested record's field by its path
/// `a.b`) and Arrow type: the column itself, a struct field of it (`get_field`), or either
/// cast to a type that holds every value of its own (so that comparing the cast compares the
/// value).
fn column_of(expr: &Expr, schema: &SchemaRef) -> Option<(String, DataType)> {
    match expr {
        Expr::Column(c) => {
            let field = schema.field_with_name(&c.name).ok()?;
            Some((c.name.clone(), field.data_type().clone()))
        }
        Expr::Cast(datafusion::logical_expr::Cast { expr, field })
        | Expr::TryCast(datafusion::logical_expr::TryCast { expr, field }) => {
            let (name, from) = column_of(expr, schema)?;
            lossless(&from, field.data_type()).then_some((name, field.data_type().clone()))
        }
        Expr::ScalarFunction(f) if f.func.name() == "get_field" => {
            let (mut name, mut ty) = column_of(f.args.first()?, schema)?;
            for key in &f.args[1..] {
                let Expr::Literal(ScalarValue::Utf8(Some(k)), _) = key else {
                    return None;
                };
                let DataType::Struct(fields) = ty else {
                    return None;
                };
                let child = fields.iter().find(|c| c.name() == k)?;
                name = format!("{name}.{k}");
                ty = child.data_type().clone();
            }
            Some((name, ty))
        }
        _ => None,
    }
}

/// Whether every value of `from` is a value of `to` (a cast that changes no value).
fn lossless(from: &DataType, to: &DataType) -> bool {
    use DataType::*;
    // (signed, value bits) of an integer type; mantissa bits (with the implicit one) of a float.
    let int = |t: &DataType| match t {
        Int8 => Some((true, 8)),
        Int16 => Some((true, 16)),
        Int32 => Some((true, 32)),
        Int64 => Some((true, 64)),
        UInt8 => Some((false, 8)),
        UInt16 => Some((false, 16)),
        UInt32 => Some((false, 32)),
        UInt64 => Some((false, 64)),
        _ => None,
    };
    let mantissa = |t: &DataType| match t {
        Float16 => Some(11),
        Float32 => Some(24),
        Float64 => Some(53),
        _ => None,
    };
    if from == to {
        return true;
    }
    match (int(from), int(to), mantissa(from), mantissa(to)) {
        (Some((fs, fb)), Some((ts, tb)), _, _) => match (fs, ts) {
            (true, true) | (false, false) => tb >= fb,
            (false, true) => tb > fb,
            (true, false) => false,
        },
        (Some((fs, fb)), None, _, Some(m)) => fb - u32::from(fs) <= m,
        (None, None, Some(a), Some(b)) => b >= a,
        (Some((fs, fb)), None, None, None) => match to {
            // Decimal(p, 0) holds p digits.
            Decimal128(p, 0) => {
                let digits = match (fs, fb) {
                    (_, 8) => 3,
                    (_, 16) => 5,
                    (_, 32) => 10,
                    (true, _) => 19,
                    (false, _) => 20,
                };
                u32::from(*p) >= digits
            }
            _ => false,
        },
        _ => false,
    }
}

/// One scan of a file: its batches, with the scan's columns only, from the chunks its filter
/// may match.
struct RaPartition {
    table: RaTable,
    scan: ScanOptions,
    schema: SchemaRef,
}

impl std::fmt::Debug for RaPartition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RaPartition")
            .field("path", &self.table.path())
            .field("scan", &self.scan)
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
            match self.table.scan(&self.scan) {
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

/// Registers in `ctx` every table of `sql` whose name is a `.ra` file's path or an
/// object-store URL ([`RaTableProvider::open_url`], its store configured from the
/// environment), as a [`RaTableProvider`] under that name, so that `ctx.sql(sql)` finds
/// them. A file or object that cannot be opened is an error naming it; a statement that does
/// not parse is DataFusion's SQL error. Names already registered are left as they are.
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
        let is_url = url::is_url(table);
        if !(is_url || is_ra_path(table)) || ctx.table_exist(reference.clone())? {
            continue;
        }
        // rawarray-arrow's error names the file and what is wrong with it; the store's, the URL.
        let table = if is_url {
            url::open(table, &rawarray_serde::store::StorageOptions::new())?
        } else {
            RaTable::open(table.as_ref()).map_err(|e| DataFusionError::Plan(e.to_string()))?
        };
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
