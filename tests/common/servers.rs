//! Object stores on loopback for the tests built with `--features s3_test`: moto's S3 server
//! (from PyPI) and Azure's emulator Azurite (from the npm registry), each started on a free
//! port by the test that needs it and killed (by its pid) when dropped.
//!
//! moto is `$RA_MOTO_SERVER`, or else the pinned moto ([`MOTO`]) installed from PyPI into a
//! virtual environment under target/ the first time, as the numpy tests provision theirs.
//! Azurite is the release `rawarray-python/tests/test_store_emulators.py` pins (read from that
//! file: one home for the pin), installed by npm into the tests' Python environment, where
//! that test installs it too. Either fails with one line saying what is missing.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The moto release the tests install.
pub const MOTO: &str = "moto[server]==5.2.5";

/// A server child process, killed (by its pid) when dropped.
pub struct Server {
    child: Child,
    /// Its loopback port.
    pub port: u16,
    /// What it is, for messages; empty once its failure to start was reported.
    what: &'static str,
    /// Where its standard error goes.
    log: PathBuf,
}

impl Drop for Server {
    fn drop(&mut self) {
        // A server that ended before its test did is the likely cause of that test's failure
        // ("connection refused"): say so, with the end of what it wrote (the test's output
        // shows it when the test fails).
        let ended = if self.what.is_empty() {
            None // its start failed, and that was reported
        } else {
            self.child.try_wait().ok().flatten()
        };
        if let Some(status) = ended {
            eprintln!(
                "{} on port {} had exited ({status}); the end of its log {}:\n{}",
                self.what,
                self.port,
                self.log.display(),
                log_tail(&self.log)
            );
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The last lines of a server's log.
fn log_tail(log: &Path) -> String {
    let said = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = said.lines().collect();
    lines[lines.len().saturating_sub(10)..].join("\n")
}

impl Server {
    /// `http://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

/// A free loopback port: bound, read, released, then given to a server.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Whether an HTTP server answers on `port`: a request sent and an answer starting `HTTP/`.
/// A bare TCP connect, what this waited for before, proves less: it can reach a process other
/// than the server (one that took the port between [`free_port`] and the server's bind), and
/// on some kernels a socket connecting to a free port of the ephemeral range connects to
/// itself. Once (CI, 2026-12-06) Azurite's test found the port taking connections and its
/// first request then met "connection refused"; which of these it was is not known.
fn answers_http(port: u16) -> bool {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    match s.local_addr() {
        Ok(a) if a.port() != port => {}
        _ => return false, // connected to itself
    }
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    let mut head = [0u8; 5];
    s.write_all(b"GET / HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
        .is_ok()
        && s.read_exact(&mut head).is_ok()
        && &head == b"HTTP/"
}

/// Starts the server `command(port)` builds on a free loopback port and waits (at most 60 s)
/// until it answers HTTP there. A server that exits first (another process took the port
/// between [`free_port`] and its bind) is started again on another port, three times at
/// most; its standard error goes to `log`, whose end a failure shows.
fn start(what: &'static str, command: impl Fn(u16) -> Command) -> Server {
    let mut last = String::new();
    for _ in 0..3 {
        let port = free_port();
        let log = log_path(what);
        let err = std::fs::File::create(&log)
            .unwrap_or_else(|e| panic!("cannot create {}: {e}", log.display()));
        let mut cmd = command(port);
        let child = cmd
            .stdout(Stdio::null())
            .stderr(err)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {what} ({cmd:?}): {e}"));
        let mut server = Server {
            child,
            port,
            what,
            log,
        };
        let begun = Instant::now();
        loop {
            if let Ok(Some(status)) = server.child.try_wait() {
                last = format!(
                    "{what} exited ({status}) on port {port}:\n{}",
                    log_tail(&server.log)
                );
                server.what = ""; // reported here: its drop says nothing more
                break;
            }
            if answers_http(port) {
                return server;
            }
            assert!(
                begun.elapsed() < Duration::from_secs(60),
                "{what} did not answer on port {port} in 60 s (its log: {})",
                server.log.display()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    panic!("{what} did not start in three tries; the last: {last}")
}

/// Runs a provisioning step; on failure, the command and the last line it printed.
fn run(cmd: &mut Command) -> Result<(), String> {
    let out = cmd.output().map_err(|e| format!("{cmd:?}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{cmd:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
                .lines()
                .last()
                .unwrap_or("")
        ));
    }
    Ok(())
}

/// The `moto_server` program: `$RA_MOTO_SERVER`, or the one installed under target/.
pub fn moto_server() -> Result<PathBuf, String> {
    if let Some(exe) = std::env::var_os("RA_MOTO_SERVER") {
        return Ok(PathBuf::from(exe));
    }
    let env = Path::new(env!("CARGO_TARGET_TMPDIR")).join("moto-env");
    let exe = env.join("bin/moto_server");
    let stamp = env.join("installed");
    if std::fs::read_to_string(&stamp).is_ok_and(|s| s == MOTO) && exe.is_file() {
        return Ok(exe);
    }
    run(Command::new("python3").args(["-m", "venv"]).arg(&env))?;
    run(Command::new(env.join("bin/pip")).args(["install", "--quiet", MOTO]))?;
    std::fs::write(&stamp, MOTO).map_err(|e| e.to_string())?;
    Ok(exe)
}

/// moto's S3 server on a free loopback port, with `env` set for it (moto's settings, such as
/// `MOTO_ENABLE_RECORDING`).
pub fn moto_with(env: &[(&str, &Path)]) -> Server {
    let exe = moto_server().unwrap_or_else(|why| {
        panic!("the S3 tests need moto's server: {why}; set RA_MOTO_SERVER to a moto_server, or allow python3 -m venv and PyPI")
    });
    start("moto", |port| {
        let mut cmd = Command::new(&exe);
        cmd.args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .envs(env.iter().map(|(k, v)| (k, v.as_os_str())));
        cmd
    })
}

/// moto's S3 server on a free loopback port.
pub fn moto() -> Server {
    moto_with(&[])
}

/// Creates a bucket with a plain HTTP request (object_store has no call for it; moto accepts
/// unsigned requests).
pub fn create_bucket(port: u16, bucket: &str) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(
        s,
        "PUT /{bucket} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
}

/// The Azurite release the Python emulator test pins (`AZURITE = "azurite@X.Y.Z"`).
fn azurite_pin() -> &'static str {
    const SOURCE: &str = include_str!("../../rawarray-python/tests/test_store_emulators.py");
    SOURCE
        .lines()
        .find_map(|l| l.strip_prefix("AZURITE = \""))
        .and_then(|l| l.strip_suffix('"'))
        .expect("test_store_emulators.py pins AZURITE = \"azurite@...\"")
}

/// Azurite's blob service on a free loopback port, its files in `data`. Installed by npm into
/// `home` (the tests' Python environment's `azurite/`, where the Python test puts it) the
/// first time.
pub fn azurite(home: &Path, data: &Path) -> Server {
    let exe = home.join("node_modules/.bin/azurite-blob");
    if !exe.exists() {
        run(Command::new("npm")
            .args(["install", "--silent", "--no-audit", "--no-fund", "--prefix"])
            .arg(home)
            .arg(azurite_pin()))
        .unwrap_or_else(|why| {
            panic!(
                "the Azure tests need Azurite from the npm registry ({}): {why}; install Node.js and npm",
                azurite_pin()
            )
        });
    }
    start("Azurite", |port| {
        let mut cmd = Command::new(&exe);
        cmd.args(["--blobHost", "127.0.0.1", "--blobPort", &port.to_string()])
            .arg("--location")
            .arg(data)
            .args(["--silent", "--skipApiVersionCheck", "--loose"]);
        cmd
    })
}

/// A fresh log file's path for a server of the tests, kept under target/ after the test (named
/// by the server, the process and a counter, so that servers started at once do not share one).
fn log_path(what: &str) -> PathBuf {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("server-logs");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(format!(
        "{what}-{}-{}.log",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ))
}
