#!/usr/bin/env bash
# Runs a quick suite and judges it with the committed rules (gates.toml and
# gates-baseline.json): exit 0 if every rule holds, 1 if one fails, 2 on bad input, 3 if
# a wall-clock rule had only void cells (the machine was too busy to judge it).
# Usage: scripts/gate.sh [--format text|markdown|json] [more `keyed-bench run` flags]
set -euo pipefail
cd "$(dirname "$0")/.."

format=text
if [[ "${1:-}" == "--format" ]]; then
  format="${2:?--format needs a value}"
  shift 2
fi
out="${GATE_OUT:-target/gate-run}"
# KEYED_BENCH_FEATURES (e.g. `kafka`) builds the binary with those cargo features: .ci/run
# sets it so that its one release build of the binary is the one with the Kafka transport.
cargo build --release --quiet --locked ${KEYED_BENCH_FEATURES:+--features "$KEYED_BENCH_FEATURES"}
# The run's log lies beside its folder: the suite refuses a folder holding files it did not
# write.
log="${out%/}.log"
mkdir -p "$(dirname "$out")"
if ! ./target/release/keyed-bench run --quick --out "$out" "$@" > /dev/null 2> "$log"; then
  cat "$log" >&2
  exit 1 # the suite itself failed: a real failure, not bad input
fi
./target/release/keyed-bench gate --results "$out/results.json" --format "$format"
