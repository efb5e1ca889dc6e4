//! The layers stay visible: no module of `rawarray-serde`, `rawarray-arrow` or `rawarray-cli`
//! imports, directly or through others, a module that imports it back.
//!
//! Each crate's `src/` is parsed (comments and `#[cfg(test)] mod tests` left out) for the
//! paths it names: `crate::a::b`, `super::x`, `self::x` and the `use` trees they head. A path
//! is resolved to the module file it lands in; a name a facade re-exports (`pub use a::X` in
//! `lib.rs` or a `mod.rs`) is followed to the module it comes from. A facade's own `mod` and
//! `pub use` lines are not imports (a parent lists its children), everything else in it is.
//! Then the strongly connected components of the graph are found (Tarjan): any of more than
//! one module is a cycle, and the test fails naming its modules.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Module path (`codec::table`, `` for the root) -> its source file.
fn modules(src: &Path) -> BTreeMap<String, PathBuf> {
    let mut out = BTreeMap::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            if p.extension().and_then(|x| x.to_str()) != Some("rs") {
                continue;
            }
            let rel = p.strip_prefix(src).unwrap().with_extension("");
            let mut parts: Vec<String> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if matches!(
                parts.last().map(String::as_str),
                Some("mod" | "lib" | "main")
            ) {
                parts.pop();
            }
            out.insert(parts.join("::"), p);
        }
    }
    out
}

/// The source without comments, string literals' contents and test modules.
fn code(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod tests") {
        Some(i) => &text[..i],
        None => text,
    };
    let mut out = String::with_capacity(text.len());
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i] == b'"' {
            out.push('"');
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' {
                    i += 1;
                }
                i += 1;
            }
            out.push('"');
            i += 1;
        } else {
            out.push(b[i] as char);
            i += 1;
        }
    }
    out
}

/// The paths a piece of code names, starting with `crate`, `super` or `self`, with `use` trees
/// (`a::{b, c::d}`) expanded.
fn paths(code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let b = code.as_bytes();
    let is_word = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let mut i = 0;
    while i < b.len() {
        let starts = ["crate::", "super::", "self::"]
            .iter()
            .find(|p| code[i..].starts_with(**p) && (i == 0 || !is_word(b[i - 1])));
        let Some(head) = starts else {
            i += 1;
            continue;
        };
        // The whole path with its braces, as far as it goes.
        let mut j = i;
        let mut depth = 0;
        while j < b.len() {
            let c = b[j];
            if c == b'{' {
                depth += 1;
            } else if c == b'}' {
                if depth == 0 {
                    break;
                }
                depth -= 1;
            } else if depth == 0 && !(is_word(c) || c == b':') {
                break;
            }
            j += 1;
        }
        expand(&code[i..j], &[], &mut out);
        i += head.len().max(1);
    }
    out
}

/// Expands one use tree into its paths.
fn expand(tree: &str, prefix: &[String], out: &mut Vec<Vec<String>>) {
    let tree = tree.trim();
    match tree.find('{') {
        None => {
            let mut p = prefix.to_vec();
            p.extend(
                tree.split("::")
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(|s| s.split_whitespace().next().unwrap_or("").to_string()),
            );
            out.push(p);
        }
        Some(open) => {
            let head = &tree[..open];
            let close = tree.rfind('}').unwrap_or(tree.len());
            let mut p = prefix.to_vec();
            p.extend(
                head.split("::")
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(String::from),
            );
            // Split the inside at top-level commas.
            let inside = &tree[open + 1..close];
            let (mut depth, mut start) = (0, 0);
            for (k, c) in inside.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        expand(&inside[start..k], &p, out);
                        start = k + 1;
                    }
                    _ => {}
                }
            }
            if !inside[start..].trim().is_empty() {
                expand(&inside[start..], &p, out);
            }
        }
    }
}

/// A facade's re-exports: name -> the module path it comes from.
fn reexports(module: &str, code: &str) -> BTreeMap<String, Vec<String>> {
    let mut out = BTreeMap::new();
    for line in code.split(';') {
        let l = line.trim();
        let Some(rest) = l
            .strip_prefix("pub use ")
            .or_else(|| l.strip_prefix("pub(crate) use "))
        else {
            continue;
        };
        let mut trees = Vec::new();
        let rest = rest.trim_start_matches("crate::");
        expand(rest, &[], &mut trees);
        for t in trees {
            if let Some((name, from)) = t.split_last() {
                let mut m: Vec<String> = if module.is_empty() {
                    Vec::new()
                } else {
                    module.split("::").map(String::from).collect()
                };
                m.extend(from.iter().cloned());
                out.insert(name.clone(), m);
            }
        }
    }
    out
}

fn is_facade(path: &Path) -> bool {
    matches!(
        path.file_name().and_then(|n| n.to_str()),
        Some("mod.rs" | "lib.rs" | "main.rs")
    )
}

/// The module each module imports, within one crate.
fn graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mods = modules(src);
    let codes: BTreeMap<String, String> = mods
        .iter()
        .map(|(m, p)| (m.clone(), code(&std::fs::read_to_string(p).unwrap())))
        .collect();
    let mut exports: BTreeMap<String, BTreeMap<String, Vec<String>>> = BTreeMap::new();
    for (m, p) in &mods {
        if is_facade(p) {
            exports.insert(m.clone(), reexports(m, &codes[m]));
        }
    }
    // The module a path lands in: the longest module prefix, a facade's re-export followed.
    let resolve = |path: &[String]| -> Option<String> {
        let mut segs = path.to_vec();
        for _ in 0..8 {
            let mut found = None;
            for k in (0..=segs.len()).rev() {
                let m = segs[..k].join("::");
                if mods.contains_key(&m) {
                    found = Some((m, k));
                    break;
                }
            }
            let (m, k) = found?;
            match (segs.get(k), exports.get(&m)) {
                (Some(name), Some(ex)) if ex.contains_key(name) => {
                    let mut next = ex[name].clone();
                    next.push(name.clone());
                    next.extend(segs[k + 1..].iter().cloned());
                    if next == segs {
                        return Some(m);
                    }
                    segs = next;
                }
                _ => return Some(m),
            }
        }
        None
    };
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (m, p) in &mods {
        let here: Vec<String> = if m.is_empty() {
            Vec::new()
        } else {
            m.split("::").map(String::from).collect()
        };
        // A file's own module path for `self::`; `super::` of a `mod.rs` is its parent's.
        let mut text = codes[m].clone();
        if is_facade(p) {
            // Its own `mod` and `pub use` lines list its children: not imports.
            text = text
                .split(';')
                .filter(|l| {
                    let l = l.trim();
                    !(l.starts_with("pub use ")
                        || l.starts_with("pub(crate) use ")
                        || l.starts_with("mod ")
                        || l.starts_with("pub mod ")
                        || l.starts_with("#[cfg(feature = ") && l.contains(" mod "))
                })
                .collect::<Vec<_>>()
                .join(";");
        }
        let edges = g.entry(m.clone()).or_default();
        for path in paths(&text) {
            let abs: Vec<String> = match path.first().map(String::as_str) {
                Some("crate") => path[1..].to_vec(),
                Some("self") => here
                    .iter()
                    .cloned()
                    .chain(path[1..].iter().cloned())
                    .collect(),
                Some("super") => {
                    let mut base = here.clone();
                    let mut rest = &path[..];
                    while rest.first().map(String::as_str) == Some("super") {
                        base.pop();
                        rest = &rest[1..];
                    }
                    base.into_iter().chain(rest.iter().cloned()).collect()
                }
                _ => continue,
            };
            if let Some(to) = resolve(&abs) {
                if &to != m && !to.is_empty() {
                    edges.insert(to);
                }
            }
        }
    }
    g
}

/// The strongly connected components of more than one module (Tarjan).
fn cycles(g: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct T<'a> {
        g: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        next: usize,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(t: &mut T<'a>, v: &'a str) {
        t.index.insert(v, t.next);
        t.low.insert(v, t.next);
        t.next += 1;
        t.stack.push(v);
        t.on.insert(v);
        let g = t.g;
        for w in g.get(v).into_iter().flatten() {
            let w = w.as_str();
            if !t.index.contains_key(w) {
                visit(t, w);
                let lw = t.low[w];
                let lv = t.low[v];
                t.low.insert(v, lv.min(lw));
            } else if t.on.contains(w) {
                let iw = t.index[w];
                let lv = t.low[v];
                t.low.insert(v, lv.min(iw));
            }
        }
        if t.low[v] == t.index[v] {
            let mut comp = Vec::new();
            loop {
                let w = t.stack.pop().unwrap();
                t.on.remove(w);
                comp.push(w.to_string());
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                t.out.push(comp);
            }
        }
    }
    let mut t = T {
        g,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in g.keys() {
        if !t.index.contains_key(v.as_str()) {
            visit(&mut t, v);
        }
    }
    t.out
}

/// Fails naming the modules of each import cycle of `krate`'s `src/`.
fn check(krate: &str) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(krate)
        .join("src");
    let g = graph(&src);
    assert!(g.len() > 3, "{krate}: only {} modules found", g.len());
    let found = cycles(&g);
    assert!(
        found.is_empty(),
        "{krate}: import cycles between modules (each list imports itself through the others):\n{}",
        found
            .iter()
            .map(|c| format!("  {}", c.join(", ")))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn rawarray_serde_has_no_import_cycle() {
    check("rawarray-serde");
}

#[test]
fn rawarray_arrow_has_no_import_cycle() {
    check("rawarray-arrow");
}

#[test]
fn rawarray_cli_has_no_import_cycle() {
    check("rawarray-cli");
}

/// The checker finds a cycle where there is one: two modules naming each other, through a
/// use tree and through `super::`.
#[test]
fn a_cycle_is_found() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    std::fs::create_dir_all(src.join("a")).unwrap();
    std::fs::write(src.join("lib.rs"), "mod a;\nmod b;\npub use a::Thing;\n").unwrap();
    std::fs::write(src.join("a/mod.rs"), "pub mod inner;\npub struct Thing;\n").unwrap();
    std::fs::write(src.join("a/inner.rs"), "use crate::{b::{f, g}};\n").unwrap();
    std::fs::write(
        src.join("b.rs"),
        "pub fn f() { let _ = crate::Thing; }\npub fn g() {}\n",
    )
    .unwrap();
    let g = graph(src);
    assert!(g["a::inner"].contains("b"), "{g:?}");
    assert!(g["b"].contains("a"), "{g:?}");
    // a::inner -> b -> a (Thing, re-exported at the root), but a does not import a::inner
    // (it only lists it): no cycle.
    assert!(cycles(&g).is_empty(), "{:?}", cycles(&g));
    // a names inner in its code: now a cycle of three.
    std::fs::write(
        src.join("a/mod.rs"),
        "pub mod inner;\npub struct Thing;\nfn h() { self::inner::x(); }\n",
    )
    .unwrap();
    let c = cycles(&graph(src));
    assert_eq!(c, [vec!["a", "a::inner", "b"]], "{c:?}");
}
