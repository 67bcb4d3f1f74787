#!/usr/bin/env bash
# Re-plots an existing results folder: PNG and SVG charts into <run>/plots/ and the
# self-contained page <run>/report.html. Usage: scripts/plot.sh results/<run>
set -euo pipefail
run="$(cd "${1:?usage: scripts/plot.sh results/<run>}" && pwd)"
cd "$(dirname "$0")/.."

cargo build --release --quiet
./target/release/keyed-bench plot --input "$run/results.json"
