#!/usr/bin/env bash
# Instructions per message of each variant of examples/dispatch_variants.rs (the criterion
# `dispatch` cell, the `uniform --spin-ns 0` cell, and one factor between them at a time),
# counted by callgrind over exactly one timed batch each: all threads, and the producer's
# (the thread that submits and drains) alone. Valgrind runs one thread at a time: the
# counts are the work done, not contention. Prints one line per variant.
# Usage: scripts/dispatch-callgrind.sh [strategy] [workers] [variants]
set -euo pipefail
cd "$(dirname "$0")/.."

strategy="${1:-keyed-mailbox}"
workers="${2:-1}"
variants="${3:-bench,recorder,random,stamp,400k,random+stamp+400k,run}"

CARGO_INCREMENTAL=0 cargo build --release --quiet --example dispatch_variants
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
run() {
  valgrind --tool=callgrind --callgrind-out-file="$out/$1" "${@:2}" \
    target/release/examples/dispatch_variants --strategy "$strategy" --workers "$workers" \
    --variants "$variants" --rounds 1 --callgrind >/dev/null 2>"$out/$1.log"
}
run all
run producer --separate-threads=yes

# Dump 1 is the set-up; dump n + 1 is variant n. A batch has 400,000 messages with `400k`
# or `run` among its factors, else 10,000.
IFS=, read -ra names <<<"$variants"
printf '%-28s %12s %12s %12s\n' "variant" "Ir/msg" "producer" "other"
for index in "${!names[@]}"; do
  name="${names[$index]}"
  dump=$((index + 2))
  messages=10000
  [[ "$name" == *400k* || "$name" == *run* ]] && messages=400000
  all=$(awk '/^totals:/ {print $2}' "$out/all.$dump")
  producer=$(awk '/^totals:/ {print $2}' "$out/producer.$dump-01")
  awk -v n="$name" -v a="$all" -v p="$producer" -v m="$messages" \
    'BEGIN {printf "%-28s %12.0f %12.0f %12.0f\n", n, a / m, p / m, (a - p) / m}'
done
