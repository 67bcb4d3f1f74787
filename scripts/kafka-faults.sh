#!/usr/bin/env bash
# The pipeline on a three-broker Apache Kafka cluster that loses brokers mid-cell
# (harness/tests/kafka_faults.rs): starts the cluster (scripts/kafka.sh start --brokers 3),
# runs the one-broker kill test RUNS times (5 by default) and each whole-cluster stop
# (SIGKILL, SIGSTOP) once, stops the cluster, and writes what every test printed, with the
# commit and the machine, to results/<date>-kafka-faults/ (never over an earlier run).
# Three JVMs and the suite share the machine: run it with nothing else compiling.
# Usage: scripts/kafka-faults.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."

runs=${1:-5}
[[ "$runs" =~ ^[1-9][0-9]*$ ]] || { echo "kafka-faults.sh: RUNS must be a whole number, not '$runs'" >&2; exit 2; }
out="results/$(date -u +%Y-%m-%d)-kafka-faults"
[[ -e "$out" ]] && { echo "kafka-faults.sh: $out exists; a committed run is never overwritten" >&2; exit 2; }

cluster=$(mktemp -d)
trap 'scripts/kafka.sh stop "$cluster" >&2 || true; rm -rf "$cluster"' EXIT
cargo build --release --locked -p harness --features kafka --tests --quiet
scripts/kafka.sh start --brokers 3 "$cluster" > /dev/null

mkdir -p "$out"
log="$out/output.txt"
{
  echo "commit: $(git rev-parse HEAD)$(git diff --quiet HEAD || echo ' (with uncommitted changes)')"
  echo "machine: $(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo), $(nproc) cores, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo), $(uname -sr)"
  echo "rustc: $(rustc -V); java: $(java -version 2>&1 | head -1)"
  echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "command: scripts/kafka-faults.sh $runs"
  echo "cluster: 3 nodes of $(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:Apache Kafka \1:p' peers/kafka/pom.xml)"
  echo
} > "$log"
test_run() {
  KEYED_BENCH_KAFKA_CLUSTER_DIR="$cluster" cargo test --release --locked -p harness \
    --features kafka --test kafka_faults -- --nocapture --test-threads 1 "$@" 2>&1 |
    grep -vE '^\s*$|^\s+(Finished|Running)' | tee -a "$log"
}
passed=0
for ((run = 1; run <= runs; run++)); do
  echo "== kill test, run $run of $runs ($(date -u +%H:%M:%S), load $(cut -d' ' -f1 /proc/loadavg))" | tee -a "$log"
  if test_run --exact a_broker_killed_mid_cell_costs_a_stall_and_the_cell_loses_nothing; then
    passed=$((passed + 1))
  fi
done
echo "== whole-cluster stops ($(date -u +%H:%M:%S))" | tee -a "$log"
whole=0
test_run whole_cluster || whole=$?
echo "== the kill test passed $passed of $runs runs; the whole-cluster stops $([[ $whole == 0 ]] && echo passed || echo FAILED)" | tee -a "$log"
[[ $passed == "$runs" && $whole == 0 ]]
