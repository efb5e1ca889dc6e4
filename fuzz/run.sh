#!/usr/bin/env bash
# Fuzzes targets one after another, each for SECONDS (default 600), on one core:
#   fuzz/run.sh [SECONDS] [TARGET...]        (default: every target, parsers first)
# Seeds the corpora first (cargo run --bin seeds), keeps each target's libFuzzer log in
# fuzz/logs/TARGET.log and prints its last status line. Stops at the first finding.
set -euo pipefail
cd "$(dirname "$0")"
export RUSTC_BOOTSTRAP=1 CARGO_BUILD_JOBS="${CARGO_BUILD_JOBS:-2}"
secs="${1:-600}"
shift || true
if [ "$#" -eq 0 ]; then
    set -- header dynamic from_slice trailer typed lz4 records recover subset chunked ragged
fi
cargo run --quiet --bin seeds
cargo fuzz build
mkdir -p logs
for target in "$@"; do
    rm -f fuzz-0.log
    status=0
    cargo fuzz run "$target" -- -jobs=1 -workers=1 -rss_limit_mb=2048 -timeout=10 \
        -max_total_time="$secs" -dict=ra.dict -print_final_stats=1 || status=$?
    mv -f fuzz-0.log "logs/$target.log"
    echo "$target: $(grep -E '^#[0-9]+[[:space:]]+(DONE|pulse|NEW|REDUCE)' "logs/$target.log" | tail -1)"
    grep -E '^stat::(number_of_executed_units|average_exec_per_sec)' "logs/$target.log" || true
    if [ "$status" -ne 0 ] || grep -qE 'ERROR: libFuzzer|panicked' "logs/$target.log"; then
        echo "$target: finding, see logs/$target.log and artifacts/$target/" >&2
        exit 1
    fi
done
