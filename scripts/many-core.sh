#!/usr/bin/env bash
# The scaling run for a many-core host: the scenarios that show scaling at --workers 1, 2,
# 4, ... below the core count and at cores - 1 (one core left to the producer), sized to
# finish in about 7 minutes on 16 cores. Writes results.json, summary.md, plots/,
# report.html, gate.md and a README into OUT. Never touches the network: it runs an
# existing build (KEYED_BENCH, or target/release/keyed-bench) or builds one offline.
#
#   scripts/many-core.sh [--dry-run] [--cores N] OUT [extra `keyed-bench run` flags]
#
# --dry-run lists the cells and the estimate and writes nothing; --cores N plans for N
# cores instead of this machine's (to read the estimate of a bigger host here).
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
  sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//' >&2
}
fail() {
  echo "error: $*" >&2
  exit 2
}

dry_run=0
cores=$(nproc)
while [[ $# -gt 0 ]]; do
  case "$1" in
    --dry-run) dry_run=1; shift ;;
    --cores)
      [[ $# -ge 2 && "$2" =~ ^[1-9][0-9]*$ ]] || fail "--cores needs a positive whole number"
      cores=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    --*) fail "unknown flag $1 before OUT (run flags go after OUT)" ;;
    *) break ;;
  esac
done
[[ $# -ge 1 ]] || { usage; fail "OUT is missing"; }
out=$1
shift
[[ $dry_run -eq 1 || ! -e "$out" ]] || fail "$out exists: the scaling run writes a fresh folder"

# 1, 2, 4, ... below the core count, then cores - 1: each worker with a core of its own
# beside the producer. One core gives one point, --workers 1.
workers=""
for ((n = 1; n < cores - 1; n *= 2)); do workers+="${workers:+,}$n"; done
last=$((cores > 1 ? cores - 1 : 1))
[[ ",$workers," == *",$last,"* ]] || workers+="${workers:+,}$last"

# Sizes: the defaults but twice the messages of uniform and zipf (short runs at 15 workers
# would be too short to judge), two cold-command slow counts (150 ms each) and two open-loop loads.
flags=(
  --scenario uniform,zipf,stateful,cold-command,conflict-backoff,open-loop,parallel-consumer
  --workers "$workers"
  --messages 400000
  --paced-messages 10000
  --cold-slow 0,128
  --cold-duration-ms 150
  --loads 0.5,0.9
  "$@"
)

bin=${KEYED_BENCH:-target/release/keyed-bench}
if [[ ! -x "$bin" ]]; then
  echo "many-core: building $bin offline" >&2
  cargo build --release --locked --offline --quiet ||
    fail "no $bin and no offline build: build it first (cargo build --release) or set KEYED_BENCH"
fi

if [[ $dry_run -eq 1 ]]; then
  exec "$bin" run --dry-run "${flags[@]}"
fi

start=$(date +%s)
"$bin" run --out "$out" "${flags[@]}"
"$bin" plot --input "$out/results.json"
gate_status=0
"$bin" gate --results "$out/results.json" --format markdown > "$out/gate.md" || gate_status=$?
took=$(($(date +%s) - start))

cat > "$out/README.md" <<MD
# Scaling run $(basename "$out")

- command: \`scripts/many-core.sh $out${*:+ $*}\` (\`keyed-bench run --out $out ${flags[*]}\`)
- commit: $(git rev-parse HEAD 2>/dev/null || echo unknown)
- binary: \`$bin\`, $("$bin" --version)
- cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores
- workers: $workers (one core left to the producer at the last point)
- took: $took s with the plots and the gate; the gate exited $gate_status (\`gate.md\`)

Files: \`results.json\`, \`summary.md\` (its first line says how quiet the machine was),
\`histograms/\`, \`plots/\` (the \`sweep-workers-*\` charts show the scaling),
\`report.html\`, \`gate.md\`.
MD
echo "many-core: wrote $out in $took s (gate exit $gate_status)" >&2
exit "$gate_status"
