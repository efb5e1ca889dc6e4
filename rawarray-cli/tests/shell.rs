//! `ra completions SHELL` and `ra man`: generated from the clap definitions, checked by the
//! shells' and man's own tools where they are installed (a skip says so on stderr).

mod common;

use std::io::Write;
use std::process::{Command as Process, Stdio};

use common::*;

/// Every subcommand, by hand: a new one must be added here, and so is checked below.
const SUBCOMMANDS: &[&str] = &[
    "info",
    "cat",
    "convert",
    "compress",
    "decompress",
    "reshape",
    "slice",
    "diff",
    "watch",
    "recover",
    "checksum",
    "verify",
    "completions",
    "man",
];

/// Feeds `input` to `program args` and returns (success, stdout, stderr); `None` if the
/// program is not installed.
fn pipe_through(program: &str, args: &[&str], input: &[u8]) -> Option<(bool, String, String)> {
    let mut child = Process::new(program)
        .args(args)
        .env("MANPAGER", "cat")
        .env("MANWIDTH", "100")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .ok()?;
    child.stdin.take().unwrap().write_all(input).unwrap();
    let out = child.wait_with_output().unwrap();
    Some((
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    ))
}

#[test]
fn the_help_lists_exactly_these_subcommands() {
    let help = stdout_of(ra().arg("--help"));
    let listed: Vec<&str> = help
        .split("Commands:\n")
        .nth(1)
        .unwrap()
        .lines()
        .take_while(|l| l.starts_with("  "))
        // Wrapped descriptions are indented further.
        .filter(|l| !l[2..].starts_with(' '))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .collect();
    assert_eq!(listed, SUBCOMMANDS);
}

#[test]
fn bash_completion_offers_every_subcommand() {
    let script = stdout_of(ra().args(["completions", "bash"]));
    for sub in SUBCOMMANDS {
        assert!(
            script.contains(&format!("ra__{sub}")) || script.contains(&format!(" {sub} ")),
            "{sub} missing from the bash completion"
        );
    }
    // bash itself: the script loads, and completing `ra d` offers diff and decompress.
    let probe = format!(
        "{script}\nCOMP_WORDS=(ra d); COMP_CWORD=1; COMP_LINE='ra d'; COMP_POINT=4; \
         _ra ra d ra; printf '%s\\n' \"${{COMPREPLY[@]}}\""
    );
    match pipe_through("bash", &["--norc", "-s"], probe.as_bytes()) {
        None => eprintln!("SKIPPED: bash is not installed; the completion script is unrun"),
        Some((ok, out, err)) => {
            assert!(ok, "bash: {err}");
            let mut offered: Vec<&str> = out.lines().collect();
            offered.sort();
            assert_eq!(offered, ["decompress", "diff"], "{err}");
        }
    }
    for shell in ["zsh", "fish", "powershell", "elvish"] {
        let script = stdout_of(ra().args(["completions", shell]));
        assert!(
            script.contains("diff") && script.contains("checksum"),
            "{shell}"
        );
    }
    fails_usage(ra().args(["completions", "tcsh"]));
}

fn fails_usage(cmd: &mut assert_cmd::Command) {
    cmd.assert().code(2);
}

#[test]
fn the_man_page_is_roff_that_man_and_groff_read() {
    let page = stdout_of(ra().arg("man"));
    // clap_mangen puts two lines of groff quote setup before the title.
    let title = page
        .lines()
        .find(|l| l.starts_with('.') && !l.starts_with(".ie") && !l.starts_with(".el"));
    assert!(title.unwrap().starts_with(".TH ra 1"), "{page:.300}");
    for sub in SUBCOMMANDS {
        assert!(
            page.contains(&format!("ra\\-{sub}")),
            "{sub} missing from the man page"
        );
    }
    let mut checked = false;
    if let Some((ok, out, err)) = pipe_through("man", &["-l", "-"], page.as_bytes()) {
        assert!(ok, "man -l: {err}");
        assert!(out.contains("NAME") && out.contains("SUBCOMMANDS"), "{out}");
        assert!(out.contains("--quiet"), "{out}");
        checked = true;
    }
    // -ww: every warning; -z: no output, only the check.
    if let Some((ok, _, err)) = pipe_through("groff", &["-man", "-ww", "-z"], page.as_bytes()) {
        assert!(ok && err.is_empty(), "groff: {err}");
        checked = true;
    }
    if !checked {
        eprintln!("SKIPPED: neither man nor groff is installed; the man page is not rendered");
    }
    // One page per subcommand, with its examples.
    let dir = tempfile::tempdir().unwrap();
    let said = ra()
        .args(["man", "--dir"])
        .arg(dir.path())
        .assert()
        .success()
        .get_output()
        .stderr
        .clone();
    assert!(String::from_utf8(said)
        .unwrap()
        .contains(&format!("{} man pages", SUBCOMMANDS.len() + 1)));
    let mut want: Vec<String> = SUBCOMMANDS.iter().map(|s| format!("ra-{s}.1")).collect();
    want.push("ra.1".into());
    want.sort();
    assert_eq!(listing(dir.path()), want);
    let diff = std::fs::read_to_string(dir.path().join("ra-diff.1")).unwrap();
    assert!(diff.contains(".TH ra-diff 1"), "{diff:.300}");
    assert!(
        diff.contains("\\-\\-equal\\-nan") && diff.contains("Examples"),
        "{diff}"
    );
    // A folder that does not exist yet is made, as mkdir -p.
    let deep = dir.path().join("share/man/man1");
    ra().args(["-q", "man", "--dir"])
        .arg(&deep)
        .assert()
        .success();
    assert_eq!(listing(&deep), want);
}
