//! The Rust guide's (`doc/rust.md`) copies of the crate's tables are identical to their one
//! source:
//! - the serde mapping, `rawarray-serde/doc/serde-mapping.md` (rustdoc shows it on the crate's
//!   front page);
//! - the element types, `rawarray-serde/doc/element-types.md`, itself rendered here from the
//!   library's element-type table (`ScalarType::ALL`), so the docs cannot drift from the code.
//!
//! `RAWARRAY_BLESS=1 cargo test --test readme_sync` rewrites the copies.
//!
//! And the README and the guides in `doc/` hold together: every relative link names a file
//! (and a heading) that is there, and every `cargo install` line is `--locked`.

use rawarray_serde::eltype::ScalarType;

fn bless() -> bool {
    std::env::var_os("RAWARRAY_BLESS").is_some()
}

/// The guide that holds the copies.
const GUIDE: &str = "doc/rust.md";

/// Checks (or, blessing, rewrites) the text between `<!-- name ... -->` and `<!-- /name -->`
/// in the Rust guide against `source`.
fn readme_section_is(name: &str, source: &str, from: &str) {
    // The tests run on threads; one may be rewriting the README (blessing) while another reads.
    static README: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one_at_a_time = README
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let readme_path = format!("{}/{GUIDE}", env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(&readme_path).unwrap();
    let open = readme
        .find(&format!("<!-- {name}"))
        .and_then(|i| readme[i..].find("-->\n").map(|j| i + j + 4))
        .unwrap_or_else(|| panic!("{GUIDE} has a <!-- {name} ... --> marker"));
    let close = readme[open..]
        .find(&format!("<!-- /{name} -->"))
        .map(|j| open + j)
        .unwrap_or_else(|| panic!("{GUIDE} has a <!-- /{name} --> marker"));
    if readme[open..close] != *source && bless() {
        let blessed = format!("{}{source}{}", &readme[..open], &readme[close..]);
        std::fs::write(&readme_path, blessed).unwrap();
        return;
    }
    assert_eq!(
        &readme[open..close],
        source,
        "{GUIDE}'s {name} table differs from {from}; edit the latter and run \
         RAWARRAY_BLESS=1 cargo test --test readme_sync"
    );
}

#[test]
fn the_readme_serde_table_is_the_crates() {
    let source = include_str!("../rawarray-serde/doc/serde-mapping.md");
    readme_section_is(
        "serde-mapping",
        source,
        "rawarray-serde/doc/serde-mapping.md",
    );
}

/// The element-type table in words: one row per `ScalarType`.
fn render_element_types() -> String {
    let mut out =
        String::from("| Rust | eltype | elbyte | numpy dtype | name |\n|---|---|---|---|---|\n");
    for t in ScalarType::ALL {
        let rust = t
            .rust_type()
            .map_or("none (raw bytes)".to_string(), |r| format!("`{r}`"));
        // A `|` inside a table cell ends the cell, even in code: escaped.
        let numpy = t.numpy().map_or("none".to_string(), |d| {
            format!("`{}`", d.replace('|', "\\|"))
        });
        out += &format!(
            "| {rust} | {} ({}) | {} | {numpy} | {} |\n",
            t.eltype().code(),
            t.eltype(),
            t.elbyte(),
            t.label()
        );
    }
    out
}

#[test]
fn the_element_type_tables_are_the_librarys() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/rawarray-serde/doc/element-types.md"
    );
    let rendered = render_element_types();
    let doc = std::fs::read_to_string(path).unwrap_or_default();
    if doc != rendered && bless() {
        std::fs::write(path, &rendered).unwrap();
    } else {
        assert_eq!(
            doc, rendered,
            "rawarray-serde/doc/element-types.md differs from the library's element-type table; \
             run RAWARRAY_BLESS=1 cargo test --test readme_sync"
        );
    }
    readme_section_is(
        "element-types",
        &rendered,
        "the library's element-type table",
    );
}

/// The README and the guides of `doc/` (the files a user reads first).
fn guides() -> Vec<std::path::PathBuf> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![root.join("README.md")];
    for entry in std::fs::read_dir(root.join("doc")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "md") {
            files.push(path);
        }
    }
    files.sort();
    files
}

/// The anchors GitHub gives a file's headings: lower case, code marks and punctuation dropped,
/// spaces as hyphens.
fn anchors(markdown: &str) -> Vec<String> {
    let mut in_code = false;
    let mut out = Vec::new();
    for line in markdown.lines() {
        if line.starts_with("```") {
            in_code = !in_code;
        }
        if in_code || !line.starts_with('#') {
            continue;
        }
        let title = line.trim_start_matches('#').trim();
        let slug: String = title
            .to_lowercase()
            .chars()
            .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
            .map(|c| if c == ' ' { '-' } else { c })
            .collect();
        out.push(slug);
    }
    out
}

/// The targets of a file's inline links, `[text](target)`, outside code blocks.
fn link_targets(markdown: &str) -> Vec<String> {
    let mut in_code = false;
    let mut out = Vec::new();
    for line in markdown.lines() {
        if line.starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if in_code {
            continue;
        }
        let mut rest = line;
        while let Some(i) = rest.find("](") {
            let tail = &rest[i + 2..];
            let Some(j) = tail.find(')') else { break };
            out.push(tail[..j].to_string());
            rest = &tail[j..];
        }
    }
    out
}

#[test]
fn every_relative_link_of_the_guides_names_a_file_and_heading_that_are_there() {
    let mut broken = Vec::new();
    for file in guides() {
        let text = std::fs::read_to_string(&file).unwrap();
        for target in link_targets(&text) {
            if target.starts_with("http://") || target.starts_with("https://") {
                continue;
            }
            let (path, anchor) = target.split_once('#').unwrap_or((&target, ""));
            let linked = if path.is_empty() {
                file.clone()
            } else {
                file.parent().unwrap().join(path)
            };
            if !linked.exists() {
                broken.push(format!("{}: {target}: no such file", file.display()));
                continue;
            }
            if !anchor.is_empty() {
                let there = std::fs::read_to_string(&linked).unwrap_or_default();
                if !anchors(&there).iter().any(|a| a == anchor) {
                    broken.push(format!("{}: {target}: no such heading", file.display()));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

/// Every markdown file of the repository (outside build folders).
fn markdown_files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            if !name.starts_with('.') && name != "target" {
                markdown_files(&path, out);
            }
        } else if name.ends_with(".md") {
            out.push(path);
        }
    }
}

#[test]
fn every_cargo_install_the_docs_show_is_locked() {
    // Without --locked, cargo install resolves every dependency afresh, ignoring Cargo.lock:
    // what builds is then not what the tests ran.
    let mut files = Vec::new();
    markdown_files(std::path::Path::new(env!("CARGO_MANIFEST_DIR")), &mut files);
    assert!(files.len() > 5, "{files:?}");
    let mut unlocked = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for (n, line) in text.lines().enumerate() {
            for (i, _) in line.match_indices("cargo install") {
                let words: Vec<&str> = line[i..].split_whitespace().take(4).collect();
                if !words.contains(&"--locked") {
                    unlocked.push(format!("{}:{}: {line}", file.display(), n + 1));
                }
            }
        }
    }
    assert!(
        unlocked.is_empty(),
        "cargo install without --locked:\n{}",
        unlocked.join("\n")
    );
}

#[test]
fn every_benchmark_table_names_the_command_that_produced_it() {
    // A table's command is a code span starting with cargo, python, valgrind or an
    // environment assignment before one, between the previous table (or the top) and it.
    let text = include_str!("../doc/benchmarks.md");
    let is_command = |span: &str| {
        let first_program = span
            .split_whitespace()
            .find(|w| !w.contains('='))
            .unwrap_or_default();
        ["cargo", "python", "valgrind"].contains(&first_program)
    };
    let (mut in_table, mut command, mut tables) = (false, false, 0);
    for (n, line) in text.lines().enumerate() {
        if line.starts_with('|') {
            if !in_table {
                assert!(
                    command,
                    "doc/benchmarks.md:{}: a table without its command",
                    n + 1
                );
                tables += 1;
                command = false;
            }
            in_table = true;
            continue;
        }
        in_table = false;
        command |= line.split('`').skip(1).step_by(2).any(is_command);
    }
    assert!(tables >= 15, "{tables} tables");
}
