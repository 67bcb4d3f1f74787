#!/usr/bin/env bash
# Runs the comparison suite into results/<date>-<host>/ and records how it was made.
# Extra flags go to `keyed-bench run` (e.g. --quick, --workers 16).
set -euo pipefail
cd "$(dirname "$0")/.."

out="results/$(date -u +%Y-%m-%d)-$(hostname -s)"
if [[ -e "$out/results.json" ]]; then
  echo "run-suite: $out already holds a run; committed runs are never overwritten" >&2
  exit 2
fi
cargo build --release --quiet
./target/release/keyed-bench run --out "$out" "$@"

cat > "$out/README.md" <<MD
# Run $(basename "$out")

- command: \`scripts/run-suite.sh${*:+ $*}\` (\`keyed-bench run --out $out${*:+ $*}\`)
- commit: $(git rev-parse HEAD)$(git diff --quiet HEAD -- . ':!results' || echo " (with local changes)")
- rustc: $(rustc -V)
- cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')
- cores: $(nproc)

Files: \`results.json\` (schema keyed-bench.results.v1), \`summary.md\`, \`histograms/\`.
MD
echo "run-suite: wrote $out" >&2
