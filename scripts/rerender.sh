#!/usr/bin/env bash
# Re-renders every committed run (each `results.json` git tracks) into OUT with the given keyed-bench binary: per run, the
# charts (SVG and PNG), report.html and summary.md (`plot --input`), both exports
# (`export --format bmf|gab`), and once the history page. Two trees rendered by two builds
# compare with `diff -r`: a change that should not alter any output shows none. Exit 0 when
# every run rendered, 1 when one failed, 2 on bad usage.
# Usage: scripts/rerender.sh BINARY OUT
set -euo pipefail
usage="usage: scripts/rerender.sh BINARY OUT"
binary="${1:-}"
out="${2:-}"
if [[ -z "$binary" || -z "$out" || $# -ne 2 ]]; then
  echo "$usage" >&2
  exit 2
fi
if [[ ! -x "$binary" ]]; then
  echo "$binary: not an executable" >&2
  exit 2
fi
if [[ -e "$out" ]]; then
  echo "$out: already exists (give a new folder)" >&2
  exit 2
fi
binary="$(cd "$(dirname "$binary")" && pwd)/$(basename "$binary")"
cd "$(dirname "$0")/.."

mkdir -p "$out"
status=0
while IFS= read -r results; do
  run="$(dirname "${results#results/}")"
  mkdir -p "$out/$run"
  if ! "$binary" plot --input "$results" --out "$out/$run/plots" \
      --report "$out/$run/report.html" --summary "$out/$run/summary.md" \
      > "$out/$run/plot.out" 2>&1; then
    echo "$run: plot failed (see $out/$run/plot.out)" >&2
    status=1
  fi
  for format in bmf gab; do
    "$binary" export --results "$results" --format "$format" --out "$out/$run/export.$format.json" \
      || { echo "$run: export --format $format failed" >&2; status=1; }
  done
done < <(git ls-files 'results/**/results.json')
"$binary" history --out "$out/index.html" > "$out/history.out" 2>&1 \
  || { echo "history failed (see $out/history.out)" >&2; status=1; }
# What the commands printed names OUT: name it alike, so two trees differ only in content.
find "$out" -name '*.out' -exec sed -i "s|$out/|OUT/|g" {} +
exit "$status"
