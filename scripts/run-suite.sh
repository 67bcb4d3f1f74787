#!/usr/bin/env bash
# Runs the comparison suite into results/<date>-<host>/, plots it, writes report.html and
# records how it was made.
# Extra flags go to `keyed-bench run` (e.g. --quick, --workers 16).
set -euo pipefail
cd "$(dirname "$0")/.."

out="results/$(date -u +%Y-%m-%d)-$(hostname -s)"
# Committed runs are never overwritten: a second run on the same day gets -2, -3, ...
base="$out"
for n in $(seq 2 99); do [[ -e "$out" ]] || break; out="$base-$n"; done
if [[ -e "$out" ]]; then
  echo "run-suite: no free folder name left for $base" >&2
  exit 2
fi
cargo build --release --quiet
./target/release/keyed-bench run --out "$out" "$@"
./target/release/keyed-bench plot --input "$out/results.json"
# The report checked in headless Chromium, its first screen kept beside it.
scripts/check-report.sh "$out" --screenshot "$out/report-first-screen.png"

cat > "$out/README.md" <<MD
# Run $(basename "$out")

- command: \`scripts/run-suite.sh${*:+ $*}\` (\`keyed-bench run --out $out${*:+ $*}\`)
- commit: $(git rev-parse HEAD)$(git diff --quiet HEAD -- . ':!results' || echo " (with local changes)")
- rustc: $(rustc -V)
- cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')
- cores: $(nproc)

Files: \`results.json\` (schema keyed-bench.results.v1), \`summary.md\`, \`histograms/\`,
\`plots/\` (PNG and SVG of every chart), \`report.html\` (one self-contained page),
\`report-first-screen.png\` (its first screen in headless Chromium, 1280x800).
MD
echo "run-suite: wrote $out" >&2
