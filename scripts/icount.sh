#!/usr/bin/env bash
# Instruction counts of benches/icount.rs (callgrind, through gungraun) against the committed
# baseline benches/icount-baseline.json: one line per benchmark with its count, the
# baseline's, the change and the limit. Valgrind runs one thread at a time: the counts are
# the work done, not contention (docs/instruction-counts.md).
# Exit 0: every count within its limit, or a rustc or valgrind other than the baseline's
# (reported, not judged); 1: a count past its limit either way, a benchmark without a
# baseline or one gone from the bench; 2: it cannot measure (no valgrind or jq, no
# gungraun-runner of the crate's version).
# Each count judged is the median of three runs: a benchmark with two threads counts what
# their interleaving makes it do, which moves from run to run (docs/instruction-counts.md).
# Usage: scripts/icount.sh [--update]   (--update: the baseline's counts become the median
# of five runs; its limits are kept)
set -euo pipefail
cd "$(dirname "$0")/.."

baseline=benches/icount-baseline.json
out="${ICOUNT_OUT:-target/icount}"
update=false
case "${1:-}" in
  "") ;;
  --update) update=true ;;
  *) echo "usage: scripts/icount.sh [--update]" >&2; exit 2 ;;
esac

if [[ "$(uname -m)" != x86_64 ]]; then
  echo "icount: not measured: the bench's callgrind client requests are x86_64 only ($(uname -m))"
  exit 0
fi
for tool in valgrind jq; do
  if ! command -v "$tool" >/dev/null; then
    echo "icount: $tool is not installed (apt-get install $tool): nothing was measured" >&2
    exit 2
  fi
done
version=$(awk '$0 == "name = \"gungraun\"" { getline; gsub(/"/, "", $3); print $3 }' Cargo.lock)
found=$(gungraun-runner --version 2>/dev/null | awk '{ print $2 }' || true)
if [[ "$found" != "$version" ]]; then
  echo "icount: the gungraun crate is $version, gungraun-runner is ${found:-not installed}:" >&2
  echo "  cargo install --locked gungraun-runner --version $version" >&2
  exit 2
fi

mkdir -p "$out"
# Builds the bench, then runs it: $1 is the run's name. Writes $out/$1.json, one count per
# benchmark (group/function/id: instructions, every thread summed).
measure() {
  if ! CARGO_INCREMENTAL=0 cargo bench --locked --quiet --bench icount -- \
    --output-format=json --nosummary >"$out/$1.jsonl" 2>"$out/$1.log"; then
    cat "$out/$1.log" >&2
    echo "icount: the benchmarks did not run" >&2
    exit 2
  fi
  jq -s 'map({key: "\(.module_path | split("::") | .[1:] | join("/"))/\(.id)",
              value: .profiles[0].data.total.metrics.Ir.values.new})
         | from_entries' "$out/$1.jsonl" >"$out/$1.json"
}
rustc=$(rustc --version)
valgrind=$(valgrind --version)

# The median of runs $2.. per benchmark, into $out/$1.json.
median() {
  local name=$1
  shift
  local files=()
  for run in "$@"; do files+=("$(cat "$out/$run.json")"); done
  jq -n '$ARGS.positional as $runs | $runs[0] | keys_unsorted | map(. as $name
      | {key: $name, value: ([$runs[] | .[$name]] | sort | .[length / 2 | floor])})
    | from_entries' --jsonargs "${files[@]}" >"$out/$name.json"
}

if $update; then
  # The median of five runs, so that the baseline sits in the middle of the spread of the
  # benchmarks with more than one thread.
  for run in 1 2 3 4 5; do measure "update-$run"; done
  median update update-1 update-2 update-3 update-4 update-5
  limits='{"default": 1}'
  [[ -f "$baseline" ]] && limits=$(jq '.limit_pct' "$baseline")
  jq -n --arg rustc "$rustc" --arg valgrind "$valgrind" --arg gungraun "$version" \
    --argjson limits "$limits" --slurpfile counts "$out/update.json" \
    '{rustc: $rustc, valgrind: $valgrind, gungraun: $gungraun, limit_pct: $limits,
      instructions: $counts[0]}' >"$baseline"
  echo "icount: $baseline rewritten from the median of five runs ($rustc, $valgrind)"
  exit 0
fi

for run in 1 2 3; do measure "counts-$run"; done
median counts counts-1 counts-2 counts-3
# count, baseline, delta% and limit% per benchmark (a limit of its own, else the default);
# a move past the limit either way fails: a gain left out of the baseline would hide a later
# regression of the same size.
jq -r --slurpfile base "$baseline" '
  . as $counts | $base[0] as $b
  | (to_entries[] | .key as $name | .value as $count
    | ($b.instructions[$name]) as $was
    | ($b.limit_pct | if has($name) then .[$name] else .default end) as $limit
    | if $was == null then [$name, $count, "-", "-", $limit, "NEW"]
      else (($count - $was) * 100 / $was) as $delta
        | [$name, $count, $was, ($delta * 100 | round / 100), ($limit // "-"),
           (if $limit == null then "shown"
            elif $delta > $limit then "PAST" elif -$delta > $limit then "BELOW" else "ok" end)]
      end),
    ($b.instructions | to_entries[] | select(.key as $k | $counts | has($k) | not)
      | [.key, "-", .value, "-", "-", "GONE"])
  | @tsv' "$out/counts.json" >"$out/report.tsv"
{
  printf 'benchmark\tinstructions\tbaseline\tdelta%%\tlimit%%\tverdict\n'
  cat "$out/report.tsv"
} | column -t -s $'\t'

base_rustc=$(jq -r .rustc "$baseline")
base_valgrind=$(jq -r .valgrind "$baseline")
if [[ "$rustc" != "$base_rustc" || "$valgrind" != "$base_valgrind" ]]; then
  echo
  echo "icount: not judged: the baseline was measured with $base_rustc and $base_valgrind,"
  echo "this run with $rustc and $valgrind; another compiler or valgrind changes the counts."
  echo "Refresh the baseline on this toolchain (scripts/icount.sh --update) in its own commit."
  exit 0
fi
if grep -qvP '\t(ok|shown)$' "$out/report.tsv"; then
  echo
  echo "icount: FAILED: a count moved past its limit (PAST: more instructions, BELOW: fewer),"
  echo "or a benchmark has no baseline (NEW) or is gone from the bench (GONE)."
  echo "Valgrind runs one thread at a time: these are instructions of work, not contention."
  echo "If the change is intended, update the baseline in the same commit and say why in"
  echo "its message: scripts/icount.sh --update"
  exit 1
fi
echo
echo "icount: every count within its limit of the baseline (work, not contention: valgrind"
echo "runs one thread at a time)"
