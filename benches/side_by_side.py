#!/usr/bin/env python3
"""Runs the benches of two git revisions side by side and prints, row by row, how much slower
(or faster) the newer one is.

    python3 benches/side_by_side.py [--old 50c3750] [--new HEAD] [--runs 3] [BENCH ...]

BENCH names are cargo benches of the root workspace (default: core serde records ragged arrow;
each is `cargo bench --bench NAME`, see doc/benchmarks.md). For each revision the script

1. makes a git worktree of it under the scratch dir (`--scratch`, default
   `$CARGO_TARGET_DIR/side_by_side` or `target/side_by_side`: `old/` and `new/`, moved to the
   revision with `git checkout --detach` when they already exist);
2. builds every bench binary once (`cargo bench --no-run --bench NAME`, under `nice -n 19`),
   with a target dir of its own per revision (`--old-target`, `--new-target`) so that the two
   builds never invalidate each other;
3. then runs the two binaries of a bench alternately, old, new, old, new, ... (`--runs` times
   each) on the same machine in the same minutes, as cargo runs them (working directory the
   package's, argument `--bench`), and keeps every run's output under `<scratch>/logs/`.

Every table the benches print is parsed: markdown rows (`| label | ... |` under a `|---|`
line) and, for benches that print space-aligned columns (arrow), a line of a label, two or more
spaces, then two or more figures, under a header line naming the figures' columns. A row is
keyed by its table (the header's cells, and which such header it is) and its label cells (the
first cell, the cells that are not figures, and whole numbers without a unit under a header
naming none, which are settings such as `threads`); a figure is a number with an optional unit (`12.5`, `1.749s`,
`20 us`, `**1.33x**`). Each column is classified by the unit of its cells or of its header:
`s`, `ms`, `us`, `ns` are times (best = min over runs), `GB/s`, `GiB/s`, `MB/s`, `MiB/s`,
`M/s` throughputs (best = max). For those the tables give the old and the new best and
`new/old`, a factor of time: above 1 the new revision is slower (for a throughput it is
old/new). Columns that cannot be classified (ratios, sizes, counts) are listed after, as
printed in every run, without a factor. Rows or whole tables found on one side only are listed
as such, so an older revision that prints fewer rows still compares on the rest.

`--python` adds the Python package's whole-file bench (`rawarray-python/bench/bench.py`): each
revision's package is built into a venv of its own (`<scratch>/venv-old`, `venv-new`:
`python3 -m venv`, then `pip install -r tests/python/requirements.txt` of that worktree, then
`pip install --no-build-isolation ./rawarray-python` with `CARGO_TARGET_DIR` set to that
revision's target dir; a stamp file records the commit installed, so a later run reuses the
venv), and the two venvs' pythons run each worktree's bench.py alternately like the cargo
benches (`--python-args`, default `--runs 9`). It is reported as the bench `python`. With
`--python`, each side's cargo benches that call Python (arrow's pyarrow baseline) run with that
side's venv as `RAWARRAY_PYTHON` (unless the environment sets it); without it they provision
their own environment as `cargo bench` does (tests/common/python.rs).

`--old-exe PATH --new-exe PATH` (with one BENCH) runs two bench binaries built beforehand
instead (`cargo bench --no-run --bench NAME` in each revision's tree prints the path; copy the
first away before building the second into the same target dir): no worktree, no build; `--old`
and `--new` then only name the revisions in the printout. The binaries run in the repository's
root (a bench of the root package; a bench of another package would need its directory).

Other options: `--env [BENCH:]KEY=VALUE` (repeatable) sets a variable for every bench, or for
BENCH only (`--env ragged:RA_BENCH_DIR=/dev/shm`), on both sides; `--build-only` makes the worktrees, builds and venvs and
stops (build early, run when the machine is quiet); `--no-build` runs what was built before; `--slower 1.10` is the factor above which a row is listed as slower;
`--self-test` checks the parser and the report on sample outputs and exits. Only the standard
library is used."""

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import time
from datetime import datetime, timezone

SIDES = ("old", "new")
TIME_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0}
THROUGHPUT_UNITS = ("GB/s", "GiB/s", "MB/s", "MiB/s", "M/s")
# A figure: a number, optionally bold, with an optional unit and an optional tail in
# parentheses or after a colon ("4177 (1.01x raw)", "**1.000x**: 256.0 MiB, of which ...").
FIGURE = re.compile(
    r"^\**\s*(?P<num>[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*"
    r"(?P<unit>[A-Za-zµ%]{1,4}(?:/s)?)?\s*\**\s*(?:[(:].*)?$"
)
ALIGNED_ROW = re.compile(r"^(?P<label>\S.*?)\s{2,}(?P<figs>\S+(?:\s+\S+)+)\s*$")


def run(cmd, **kw):
    """Runs `cmd`, returning its stdout; raises with its output when it fails."""
    out = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if out.returncode != 0:
        raise RuntimeError(
            f"{shlex.join(cmd)} failed ({out.returncode}):\n{out.stdout[-3000:]}{out.stderr[-3000:]}"
        )
    return out.stdout


def figure(cell):
    """(value, unit) of a figure cell, or None for a label or an empty cell."""
    m = FIGURE.match(cell.strip())
    if not m or not cell.strip():
        return None
    return float(m.group("num")), (m.group("unit") or "")


def kind_of(header, units):
    """'time', 'throughput' or None for a column, from its cells' units, then its header."""
    for u in units:
        if u in TIME_UNITS:
            return "time"
        if u in THROUGHPUT_UNITS:
            return "throughput"
    if any(t in header for t in THROUGHPUT_UNITS):
        return "throughput"
    if re.search(r"\((?:ns|us|µs|ms|s)\)|\b(?:ns|us|ms)\b", header):
        return "time"
    return None


def header_time_unit(header):
    """The time unit a column's header names ("ours (ms)"), for cells that name none."""
    m = re.search(r"\((ns|us|µs|ms|s)\)|\b(ns|us|ms)\b", header)
    return (m.group(1) or m.group(2)) if m else "s"


def seconds(v):
    """A time for the tables, in the unit that suits it."""
    if v < 1e-3:
        return fmt(v * 1e6) + " us"
    if v < 1:
        return fmt(v * 1e3) + " ms"
    return fmt(v) + " s"


def unique(header):
    """Column names, a repeated one ("ours | MiB/s | baseline | MiB/s") prefixed with the name
    before it ("ours MiB/s", "baseline MiB/s")."""
    return [
        f"{header[k - 1]} {h}" if k > 0 and header.count(h) > 1 else h for k, h in enumerate(header)
    ]


def is_setting(header, cell):
    """Whether a figure is a setting of the row rather than a measurement: a whole number
    without a unit, in a column whose header names no unit ("threads", "chunk records")."""
    return (
        re.fullmatch(r"\d+", cell.strip()) is not None
        and kind_of(header, []) is None
        and not re.search(r"/s\b|\((?:ns|us|µs|ms|s)\)|\bs\b|time|size", header)
    )


def split_md(line):
    return [c.strip() for c in line.strip().strip("|").split("|")]


def parse_tables(text):
    """Every table in a bench's output: {(table key, row key): {column: (value, unit)}} and,
    for display, {table key: title}."""
    rows, titles, seen = {}, {}, {}
    lines = text.splitlines()

    def add_table(header, title):
        base = " | ".join(header)
        seen[base] = seen.get(base, 0) + 1
        key = base if seen[base] == 1 else f"{base} #{seen[base]}"
        titles[key] = title
        return key

    def add_row(table, header, cells):
        labels, figs = [], {}
        for i, c in enumerate(cells):
            col = header[i] if i < len(header) else f"column {i + 1}"
            f = figure(c)
            if f is None or i == 0 or is_setting(col, c):
                if c:
                    labels.append(c if i == 0 or f is None else f"{col} {c}")
            else:
                figs[col] = f
        if not figs:
            return
        label = " / ".join(labels) or "(no label)"
        key, n = (table, label), 1
        while key in rows:
            n += 1
            key = (table, f"{label} #{n}")
        rows[key] = figs

    i, last_text = 0, ""
    while i < len(lines):
        line = lines[i]
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if line.lstrip().startswith("|") and re.match(r"^\s*\|[\s:|-]+\|\s*$", nxt) and "-" in nxt:
            header = unique(split_md(line))
            table = add_table(header, last_text or header[0])
            i += 2
            while i < len(lines) and lines[i].lstrip().startswith("|"):
                add_row(table, header, split_md(lines[i]))
                i += 1
            last_text = ""
            continue
        m = ALIGNED_ROW.match(line)
        figs = m.group("figs").split() if m else []
        if m and len(figs) >= 2 and all(figure(f) for f in figs):
            # A space-aligned table: its header is the nearest line above naming enough columns.
            n = len(figs)
            for j in range(i - 1, max(i - 12, -1), -1):
                words = lines[j].split()
                if len(words) > n and not any(figure(w) for w in words[-n:]):
                    header = [words[0]] + words[-n:]
                    title = lines[j - 1].strip() if j > 0 and lines[j - 1].strip() else words[0]
                    break
            else:
                header = ["row"] + [f"column {k + 2}" for k in range(n)]
                title = "table"
            header = unique(header)
            base = " | ".join(header)
            table = next((k for k in titles if k.split(" #")[0] == base), None) or add_table(
                header, title
            )
            add_row(table, header, [m.group("label").strip()] + figs)
        elif line.strip() and not line.lstrip().startswith("|"):
            last_text = line.strip().lstrip("#").strip()
        i += 1
    return rows, titles


def git(repo, *args):
    return run(["git", "-C", repo, *args]).strip()


def worktree(repo, path, commit):
    """A worktree of `commit` at `path`, made or moved there."""
    if os.path.exists(os.path.join(path, ".git")):
        if git(path, "rev-parse", "HEAD") != commit:
            git(path, "checkout", "--quiet", "--detach", commit)
    else:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        git(repo, "worktree", "add", "--quiet", "--detach", path, commit)


def build_bench(tree, target, name):
    """Builds one bench of the worktree; returns (executable, package dir) or raises."""
    env = dict(os.environ, CARGO_TARGET_DIR=target)
    cmd = ["nice", "-n", "19", "cargo", "bench", "--no-run", "--bench", name, "--message-format=json"]
    out = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True)
    exe = pkg = None
    for line in out.stdout.splitlines():
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        t = msg.get("target", {})
        if msg.get("reason") == "compiler-artifact" and t.get("name") == name and "bench" in t.get("kind", []):
            exe = msg.get("executable")
            pkg = os.path.dirname(msg.get("manifest_path", os.path.join(tree, "Cargo.toml")))
    if out.returncode != 0 or not exe:
        raise RuntimeError(f"`{shlex.join(cmd)}` in {tree} failed ({out.returncode}):\n{out.stderr[-2000:]}")
    return exe, pkg


def python_env(tree, target, venv, commit, rebuild):
    """The venv's python, with this worktree's package installed (built once per commit)."""
    py = os.path.join(venv, "bin", "python")
    stamp = os.path.join(venv, "rawarray-commit")
    if not rebuild and os.path.exists(stamp) and open(stamp).read().strip() == commit:
        return py
    if not os.path.exists(py):
        run(["python3", "-m", "venv", venv])
    pip = [py, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    run([*pip, "numpy", "-r", os.path.join(tree, "tests/python/requirements.txt")])
    run([*pip, "maturin"])
    # maturin, the build backend, is found on PATH: the venv's own.
    env = dict(os.environ, CARGO_TARGET_DIR=target)
    env["PATH"] = os.path.join(venv, "bin") + os.pathsep + env.get("PATH", "")
    run(["nice", "-n", "19", *pip, "--no-build-isolation", "--force-reinstall", "--no-deps", "./rawarray-python"], cwd=tree, env=env)
    with open(stamp, "w") as f:
        f.write(commit + "\n")
    return py


def fmt(v):
    if v == 0:
        return "0"
    a = abs(v)
    if a >= 100:
        return f"{v:.0f}"
    if a >= 10:
        return f"{v:.1f}"
    if a >= 1:
        return f"{v:.2f}"
    return f"{v:.3g}"


def md(cell):
    return str(cell).replace("|", "\\|")


def report(name, outputs, errors, threshold):
    """Prints the side-by-side tables of one bench; returns the rows slower than `threshold`."""
    parsed = {s: [parse_tables(o) for o in outputs[s]] for s in SIDES}
    titles = {}
    values = {s: {} for s in SIDES}  # (table, row, column) -> [(value, unit) per run]
    for s in SIDES:
        for rows, t in parsed[s]:
            titles.update(t)
            for (table, label), figs in rows.items():
                for col, f in figs.items():
                    values[s].setdefault((table, label, col), []).append(f)
    print(f"\n## {name}\n")
    for s in SIDES:
        if errors[s]:
            print(f"{s}: {len(errors[s])} of {len(errors[s]) + len(outputs[s])} runs failed; the first:\n")
            print("```\n" + errors[s][0].strip()[-1500:] + "\n```\n")
    keys = sorted(set(values["old"]) | set(values["new"]), key=lambda k: order(k, values))
    slower, classified, unclassified, one_side = [], [], [], []
    for key in keys:
        old, new = values["old"].get(key), values["new"].get(key)
        table, label, col = key
        where = titles.get(table, table)
        where = where if len(where) <= 60 else where[:57] + "..."
        if not old or not new:
            one_side.append((where, label, col, "old" if old else "new"))
            continue
        kind = kind_of(col, [u for _, u in old + new])
        if kind is None:
            runs = lambda fs: ", ".join(f"{v:g}{'' if u in ('', 'x', '%') else ' '}{u}" for v, u in fs)
            unclassified.append((where, label, col, runs(old), runs(new)))
            continue
        default = header_time_unit(col)
        scale = lambda fs: [v * TIME_UNITS.get(u or default, 1.0) if kind == "time" else v for v, u in fs]
        pick = min if kind == "time" else max
        bo, bn = pick(scale(old)), pick(scale(new))
        factor = (bn / bo if kind == "time" else bo / bn) if bo and bn else float("nan")
        shown = seconds if kind == "time" else fmt
        classified.append((where, label, col, shown(bo), shown(bn), factor))
        if factor > threshold:
            slower.append((name, where, label, col, factor))
    if classified:
        print("| table | row | column | old (best) | new (best) | new/old (times slower) |")
        print("|---|---|---|---:|---:|---:|")
        for where, label, col, o, n, f in classified:
            mark = f"**{f:.2f}**" if f > threshold else f"{f:.2f}"
            print(f"| {md(where)} | {md(label)} | {md(col)} | {o} | {n} | {mark} |")
    if unclassified:
        print("\nNot classified as a time or a throughput (as printed, every run):\n")
        print("| table | row | column | old runs | new runs |")
        print("|---|---|---|---|---|")
        for where, label, col, o, n in unclassified:
            print(f"| {md(where)} | {md(label)} | {md(col)} | {o} | {n} |")
    if one_side:
        # One line a row (its columns together), and one line for a table printed by one side.
        rows_of = {}
        for where, label, col, s in one_side:
            rows_of.setdefault((where, label, s), []).append(col)
        paired_tables = {w for w, *_ in classified + unclassified}
        print("\nOnly on one side:\n")
        print("| table | row | columns | printed by |")
        print("|---|---|---|---|")
        done = set()
        for (where, label, s), cols in rows_of.items():
            if where not in paired_tables:
                if where in done:
                    continue
                done.add(where)
                n = sum(1 for w, _, _ in rows_of if w == where)
                print(f"| {md(where)} | all {n} rows | {md(', '.join(cols))} | {s} only |")
            else:
                print(f"| {md(where)} | {md(label)} | {md(', '.join(cols))} | {s} only |")
    if not (classified or unclassified or one_side):
        print("No table rows were printed by either side.")
    return slower


def order(key, values):
    """Keys in the order the new (else old) side printed them."""
    for s in ("new", "old"):
        ks = list(values[s])
        if key in ks:
            return (0 if s == "new" else 1, ks.index(key))
    return (2, 0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("benches", nargs="*", default=["core", "serde", "records", "ragged", "arrow"])
    ap.add_argument("--old", default="50c3750")
    ap.add_argument("--new", default="HEAD")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--scratch")
    ap.add_argument("--old-target")
    ap.add_argument("--new-target")
    ap.add_argument("--env", action="append", default=[], metavar="[BENCH:]KEY=VALUE")
    ap.add_argument("--python", action="store_true", help="also rawarray-python/bench/bench.py")
    ap.add_argument("--python-args", default="--runs 9")
    ap.add_argument("--rebuild-python", action="store_true")
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--build-only", action="store_true", help="make the worktrees, builds and venvs; run nothing")
    ap.add_argument("--slower", type=float, default=1.10)
    ap.add_argument("--old-exe", help="a bench binary built beforehand, run as the old side (one BENCH)")
    ap.add_argument("--new-exe", help="the same for the new side")
    a = ap.parse_args()

    repo = git(os.getcwd(), "rev-parse", "--show-toplevel")
    base = os.environ.get("CARGO_TARGET_DIR") or os.path.join(repo, "target")
    scratch = os.path.abspath(a.scratch or os.path.join(base, "side_by_side"))
    targets = {
        "old": os.path.abspath(a.old_target or os.path.join(scratch, "target-old")),
        "new": os.path.abspath(a.new_target or os.path.join(scratch, "target-new")),
    }
    commits = {s: git(repo, "rev-parse", f"{r}^{{commit}}") for s, r in (("old", a.old), ("new", a.new))}
    trees = {s: os.path.join(scratch, s) for s in SIDES}
    logs = os.path.join(scratch, "logs")
    os.makedirs(logs, exist_ok=True)

    print("# Side by side\n")
    print("Command: `" + shlex.join([os.path.basename(sys.executable), *sys.argv]) + "`\n")
    for s in SIDES:
        subject = git(repo, "log", "-1", "--format=%s", commits[s])
        print(f"- {s}: `{commits[s]}` ({subject[:100]})")
    print(f"- started {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, {os.cpu_count()} cores, "
          f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"- each bench: {a.runs} runs a side, alternately old, new; best of the runs\n")
    sys.stdout.flush()

    exes = {"old": a.old_exe, "new": a.new_exe}
    if any(exes.values()) and (not all(exes.values()) or len(a.benches) != 1 or a.python):
        ap.error("--old-exe and --new-exe go together, with one BENCH and no --python")
    if not any(exes.values()):
        for s in SIDES:
            worktree(repo, trees[s], commits[s])

    def bench_env(name, side):
        env = dict(os.environ)
        if side in pythons and "RAWARRAY_PYTHON" not in env:
            env["RAWARRAY_PYTHON"] = pythons[side]
        for item in a.env:
            k, _, v = item.partition("=")
            scope, _, k = k.rpartition(":")
            if scope and scope != name:
                continue
            env[k] = v
        return env

    # The Python package first: with --python, each side's cargo benches that call Python
    # (arrow's pyarrow baseline) get that side's venv as RAWARRAY_PYTHON, unless --env sets it.
    pythons, python_job = {}, None
    if a.python:
        cmds, errs = {}, {}
        for s in SIDES:
            try:
                py = python_env(trees[s], targets[s], os.path.join(scratch, f"venv-{s}"), commits[s], a.rebuild_python)
                pythons[s] = py
                script = os.path.join(trees[s], "rawarray-python/bench/bench.py")
                cmds[s] = ([py, script, *shlex.split(a.python_args)], scratch)
            except RuntimeError as e:
                errs[s] = str(e)
        python_job = ("python", cmds, errs)

    # What to run: (name, {side: (argv, cwd)}), or the build error per side.
    jobs, errors = [], {}
    for name in a.benches:
        cmds, errs = {}, {}
        for s in SIDES:
            try:
                if exes[s]:
                    # Run where cargo runs the root package's benches.
                    found = (os.path.abspath(exes[s]), repo)
                elif a.no_build:
                    found = build_bench_cached(trees[s], targets[s], name)
                else:
                    found = build_bench(trees[s], targets[s], name)
                exe, pkg = found
                cmds[s] = ([exe, "--bench"], pkg)
            except RuntimeError as e:
                errs[s] = str(e)
        jobs.append((name, cmds, errs))
    if python_job:
        jobs.append(python_job)

    if a.build_only:
        for name, cmds, errs in jobs:
            for s in SIDES:
                print(f"- {name} {s}: " + (shlex.join(cmds[s][0]) if s in cmds else "FAILED: " + errs[s]))
        return
    loads = []
    slower = []
    for name, cmds, errs in jobs:
        outputs = {s: [] for s in SIDES}
        failures = {s: [errs[s]] if s in errs else [] for s in SIDES}
        t0 = time.time()
        if len(cmds) == 2:
            for r in range(a.runs):
                for s in SIDES:
                    loads.append(os.getloadavg()[0])
                    argv, cwd = cmds[s]
                    out = subprocess.run(argv, cwd=cwd, env=bench_env(name, s), capture_output=True, text=True)
                    with open(os.path.join(logs, f"{name}-{s}-{r + 1}.txt"), "w") as f:
                        f.write(f"$ {shlex.join(argv)}  (in {cwd})\n{out.stdout}\n--- stderr\n{out.stderr}")
                    if out.returncode == 0:
                        outputs[s].append(out.stdout)
                    else:
                        failures[s].append(f"exit {out.returncode}\n{out.stdout[-1000:]}\n{out.stderr[-1500:]}")
        slower += report(name, outputs, failures, a.slower)
        print(f"\n({name}: {time.time() - t0:.0f} s; run logs in {logs})")
        sys.stdout.flush()

    loads.append(os.getloadavg()[0])
    print(f"\nLoad average (1 min) when each run started: {min(loads):.2f} to {max(loads):.2f}; "
          f"finished {datetime.now(timezone.utc):%H:%M} UTC.")
    print(f"\nRows more than {a.slower:.2f}x slower (best of the runs):\n")
    if not slower:
        print("none")
    for name, where, label, col, f in slower:
        print(f"- {name}: {where}: {label}: {col}: {f:.2f}x")


def build_bench_cached(tree, target, name):
    """The newest built bench binary named `name` in `target`, without building."""
    deps = os.path.join(target, "release", "deps")
    found = [
        os.path.join(deps, f) for f in os.listdir(deps) if f.startswith(name.replace("-", "_") + "-")
        and "." not in f and os.access(os.path.join(deps, f), os.X_OK)
    ] if os.path.isdir(deps) else []
    if not found:
        raise RuntimeError(f"no built bench {name} in {deps} (run without --no-build)")
    return max(found, key=os.path.getmtime), tree


def self_test():
    """Checks the parser and the report on outputs shaped like the benches' (`--self-test`)."""
    import contextlib
    import io

    new = """3 records of 80 bytes (1 MiB), best of 3
workload                           ours   baseline      MiB/s    ratio
ra -> parquet (snappy)           2.000s     1.000s        100    2.00x
ra -> arrow (in memory)          0.500s     0.100s        800    5.00x

| workload | ours | MiB/s | baseline | MiB/s | time vs baseline |
|---|---|---:|---|---:|---:|
| write | `a` | 100 | `b` | 200 | 2.00x |

| open + row | file size | best | target |
|---|---:|---:|---:|
| `open` | 1152 MiB | 15.0 us | < 100 us |

| layout | threads | ours (ms) |
|---|---|---:|
| zstd | 1 | 10.0 |
| zstd | 2 | **6.0** |
"""
    old = new.replace("2.000s", "1.000s").replace("| 100 | `b`", "| 125 | `b`")
    old = old.replace("15.0 us", "30.0 us").replace("| 6.0", "| 5.0").replace("**6.0**", "5.0")
    old = "\n".join(line for line in old.splitlines() if "arrow (in memory)" not in line)
    rows, _ = parse_tables(new)
    arrow = ("workload | ours | baseline | MiB/s | ratio", "ra -> parquet (snappy)")
    assert rows[arrow] == {"ours": (2.0, "s"), "baseline": (1.0, "s"), "MiB/s": (100.0, ""), "ratio": (2.0, "x")}
    ragged = [k for k in rows if k[1] == "write / `a` / `b`"][0]
    assert set(rows[ragged]) == {"ours MiB/s", "baseline MiB/s", "time vs baseline"}, rows[ragged]
    assert [k[1] for k in rows if k[0].startswith("layout")] == ["zstd / threads 1", "zstd / threads 2"]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        # The new side's second run is slower: its best is its first.
        runs = [new, new.replace("2.000s", "2.500s").replace("**6.0**", "9.0")]
        slower = report("t", {"old": [old], "new": runs}, {"old": [], "new": []}, 1.10)
    text = out.getvalue()
    found = {(label, col): round(f, 2) for _, _, label, col, f in slower}
    # A time twice as long, a throughput 0.8x, a best over runs, ms in the header: all slower.
    assert found == {
        ("ra -> parquet (snappy)", "ours"): 2.0,
        ("write / `a` / `b`", "ours MiB/s"): 1.25,
        ("zstd / threads 2", "ours (ms)"): 1.2,
    }, found
    assert "| 15.0 us |" in text and "0.50" in text  # the open row: faster, in us
    assert "ra -> arrow (in memory) | ours, baseline, MiB/s, ratio | new only |" in text, text
    assert "| 2x | 2x, 2x |" in text  # the ratio column, as printed in every run
    assert "| 1.00 s | 2.00 s | **2.00** |" in text, text
    print("self-test passed")


if __name__ == "__main__":
    if sys.argv[1:] == ["--self-test"]:
        self_test()
    else:
        main()
