//! `ra-sql`: one SQL statement over `.ra` files, its result printed as a table. `ra sql` runs
//! it.

use std::io::Write;
use std::process::ExitCode;

use datafusion::arrow::util::pretty::pretty_format_batches;

fn usage() -> String {
    format!(
        "\
usage: ra sql QUERY

Runs one SQL statement (DataFusion's dialect) in which a table named by a quoted path ending in
.ra is that file: one row per record, one column per field. A table named by a quoted URL
({}) is that object, read by ranged requests (only the blocks a query reads), its store
configured from the environment as for every ra command (AWS_*, GOOGLE_*, AZURE_*).

Examples:
  ra sql \"SELECT step, avg(energy) FROM 'run.ra' GROUP BY step ORDER BY step\"
  ra sql \"SELECT count(*) FROM 'a.ra' JOIN 'b.ra' USING (id)\"
  ra sql \"SELECT max(energy) FROM 's3://bucket/runs/run.ra' WHERE step > 100\"

Exit status: 0 success, 1 the query failed (a file could not be read, bad SQL), 2 usage error.",
        rawarray_serde::store::SCHEMES
    )
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let query = match args.as_slice() {
        [flag] if flag == "-h" || flag == "--help" => {
            println!("{}", usage());
            return ExitCode::SUCCESS;
        }
        [query] => query,
        _ => {
            eprintln!("{}", usage());
            return ExitCode::from(2);
        }
    };
    let result = rawarray_sql::query_blocking(query)
        .and_then(|batches| Ok(pretty_format_batches(&batches)?));
    match result {
        Ok(table) => {
            let mut out = std::io::stdout().lock();
            // A closed pipe (`ra sql ... | head`) is not a failure of the query.
            let _ = writeln!(out, "{table}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("ra sql: {}", e.strip_backtrace());
            ExitCode::from(1)
        }
    }
}
