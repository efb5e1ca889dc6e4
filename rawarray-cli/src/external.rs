//! `ra NAME ARGS...` for a NAME that is none of ra's own subcommands runs the program
//! `ra-NAME ARGS...`, as git and cargo do: the commands with heavy dependencies live in their
//! own crates (`ra sql` is rawarray-sql's `ra-sql`, which brings a query engine) and `ra`
//! stays small.

use std::ffi::{OsStr, OsString};
use std::io::{self, Write};
use std::path::PathBuf;
use std::process::{Command, ExitCode};

/// Where the program for `name` is looked for: beside `ra` itself first (an install puts them
/// in one folder, and a build in one `target/` folder), then on `PATH`.
fn candidates(program: &OsStr) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Some(dir) = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(PathBuf::from))
    {
        let mut beside = dir.join(program);
        if cfg!(windows) {
            beside.set_extension("exe");
        }
        out.push(beside);
    }
    out.push(PathBuf::from(program));
    out
}

/// Runs `ra-NAME` with the remaining arguments and exits with its status; a NAME with no such
/// program is a usage error (exit 2), as clap reports an unknown subcommand.
pub fn run(args: &[OsString]) -> ExitCode {
    let Some((name, rest)) = args.split_first() else {
        return ExitCode::from(2);
    };
    let mut program = OsString::from("ra-");
    program.push(name);
    for candidate in candidates(&program) {
        // A bare name is searched on PATH by the spawn; a path beside `ra` must exist.
        if candidate.components().count() > 1 && !candidate.is_file() {
            continue;
        }
        match Command::new(&candidate).args(rest).status() {
            Ok(status) => {
                return match status.code() {
                    Some(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
                    // Killed by a signal: a failure.
                    None => ExitCode::from(1),
                };
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => {
                let _ = writeln!(io::stderr(), "ra: {}: {e}", candidate.display());
                return ExitCode::from(1);
            }
        }
    }
    let name = name.to_string_lossy();
    let hint = match name.as_ref() {
        "sql" => " (it is the crate rawarray-sql's: cargo install --locked --path rawarray-sql)",
        _ => "",
    };
    let _ = writeln!(
        io::stderr(),
        "error: unrecognized subcommand '{name}': no ra-{name} beside ra or on PATH{hint}\n\n\
         For more information, try 'ra --help'."
    );
    ExitCode::from(2)
}
