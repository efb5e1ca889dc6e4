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
    /// What it is, for messages.
    what: &'static str,
    /// Where its standard error goes.
    log: PathBuf,
    /// Whether its failure was already reported (it exited, or did not answer in time, while
    /// starting).
    reported: bool,
}

impl Drop for Server {
    fn drop(&mut self) {
        // A server that ended before its test did is the likely cause of that test's failure
        // ("connection refused"): say so, with the end of what it wrote (the test's output
        // shows it when the test fails).
        let ended = if self.reported {
            None
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
        // The log is kept when something went wrong (the server ended early, or the test is
        // failing: dropped while panicking); otherwise removed, so that runs leave none.
        if ended.is_none() && !self.reported && !std::thread::panicking() {
            let _ = std::fs::remove_file(&self.log);
        }
    }
}

impl Server {
    /// `http://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

/// The last lines of a server's log.
fn log_tail(log: &Path) -> String {
    let said = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = said.lines().collect();
    lines[lines.len().saturating_sub(10)..].join("\n")
}

/// A free loopback port: bound, read, released, then given to a server. Never one this process
/// gave before: the tests of one binary run at once, and the kernel can hand a released port
/// out again, which would give two servers one port (the second then fails to bind, and the
/// first answers for it).
pub fn free_port() -> u16 {
    use std::collections::BTreeSet;
    use std::sync::Mutex;
    static GIVEN: Mutex<BTreeSet<u16>> = Mutex::new(BTreeSet::new());
    let mut given = GIVEN
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    loop {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        if given.insert(port) {
            return port;
        }
    }
}

/// Whether an HTTP server answers on `port`: a request sent and an answer starting `HTTP/`.
/// A bare TCP connect, what this waited for before, proves less: on some kernels a socket
/// connecting to a free port of the ephemeral range connects to itself, and a process that
/// does not speak HTTP may hold the port. (A server of these tests holding it is ruled out,
/// for the tests of one process, by [`free_port`], and by [`start`] watching its own server
/// exit; a runner of one process a test, such as cargo-nextest, would need more: none is used
/// here.) Once (CI, 2026-12-06) Azurite's test found the port taking connections and its
/// first request then met "connection refused"; the cause is not known.
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
        && head == *b"HTTP/"
}

/// Starts the server `command(port)` builds on a free loopback port and waits (at most 60 s)
/// until it answers HTTP there. A server that exits first (its port taken by another process
/// between [`free_port`] and its bind) is started again on another port, three times at most.
/// Its standard error goes to a log of its own under target/tmp/server-logs, whose end a
/// failure shows.
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
            reported: false,
        };
        let begun = Instant::now();
        loop {
            if let Ok(Some(status)) = server.child.try_wait() {
                last = format!(
                    "{what} exited ({status}) on port {port}; the end of its log {}:\n{}",
                    server.log.display(),
                    log_tail(&server.log)
                );
                server.reported = true;
                break;
            }
            if answers_http(port) {
                return server;
            }
            if begun.elapsed() > Duration::from_secs(60) {
                server.reported = true;
                panic!(
                    "{what} did not answer on port {port} in 60 s; the end of its log {}:\n{}",
                    server.log.display(),
                    log_tail(&server.log)
                );
            }
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

/// A fresh log file's path for a server of the tests, under target/tmp/server-logs (named by the
/// server, the process and a counter, so that servers started at once do not share one); the
/// server's drop removes it unless something went wrong.
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
