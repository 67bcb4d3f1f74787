#!/usr/bin/env bash
# Model-checks the executor core with loom: every interleaving, within a preemption bound,
# of the mailbox state machine, park/unpark, the admission window and the close protocol
# (strategies/src/loom_models/). Prints the interleavings each model explored.
#
# Usage: scripts/loom.sh [model name filter]
# Environment: LOOM_MAX_PREEMPTIONS (default 3: seconds; 4 explores about ten times more
# interleavings, under a minute), LOOM_LOG=1 for a trace of a failing execution,
# LOOM_CHECKPOINT_FILE to replay one.
set -euo pipefail
cd "$(dirname "$0")/.."

export LOOM_MAX_PREEMPTIONS="${LOOM_MAX_PREEMPTIONS:-3}"
# Release for speed, with debug assertions kept: the mailbox phase checks are assertions.
# A separate target folder, so that the loom build does not replace the normal one.
RUSTFLAGS="--cfg loom -C debug-assertions -C overflow-checks" \
  cargo test --locked --release --target-dir target/loom -p strategies --lib -- \
  --nocapture --test-threads 1 "loom_models::${1:-}"
