#!/usr/bin/env bash
# Renders a run's report.html in headless Chromium and checks the rendered page: every
# chart figure's SVG is drawn with a nonzero size, the verdict table starts on the first
# screen (1280x800), and nothing is fetched from the network (which is blocked, so a
# reference out of the page fails instead of loading). Installs Debian's `chromium` when
# it is missing. The checks run on a copy with a checking script appended; the report
# itself is never changed. `--screenshot` also saves the report's first screen as a PNG.
# Exit 0 if every check holds, 1 if one fails, 2 on bad usage.
# Usage: scripts/check-report.sh <run-dir> [--screenshot PATH]
set -euo pipefail
# shellcheck source=scripts/lib/check-page.sh
source "$(dirname "$0")/lib/check-page.sh"

usage_text="usage: scripts/check-report.sh <run-dir> [--screenshot PATH]"
parse_page_args "$usage_text" "$@"
run_dir="$target"
if [[ -z "$run_dir" ]]; then
  echo "$usage_text" >&2
  exit 2
fi
if [[ ! -d "$run_dir" ]]; then
  echo "$run_dir: not a folder" >&2
  exit 2
fi
report="$(cd "$run_dir" && pwd)/report.html"
if [[ ! -f "$report" ]]; then
  echo "$run_dir: no report.html (plot it first: keyed-bench plot --input $run_dir/results.json)" >&2
  exit 2
fi
if [[ -n "$screenshot" ]]; then
  screenshot="$(screenshot_path "$screenshot")"
fi

check_page report "$report" "$screenshot"
