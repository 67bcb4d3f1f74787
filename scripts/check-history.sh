#!/usr/bin/env bash
# Renders the history page (`keyed-bench history`: results/index.html) in headless Chromium
# and checks the rendered page: every chart figure's SVG is drawn with a nonzero size, every
# scenario heading has at least one drawn chart, the runs' table has a row for every folder
# with a results.json beside the page (its latest/ aside), and nothing is fetched from the
# network. Installs Debian's `chromium` when it is missing; the page itself is never
# changed. `--screenshot` also saves the page's first screen as a PNG.
# Exit 0 if every check holds, 1 if one fails, 2 on bad usage.
# Usage: scripts/check-history.sh [PAGE] [--screenshot PATH]   (PAGE: results/index.html)
set -euo pipefail
# shellcheck source=scripts/lib/check-page.sh
source "$(dirname "$0")/lib/check-page.sh"

parse_page_args "usage: scripts/check-history.sh [PAGE] [--screenshot PATH]" "$@"
page="$target"
page="${page:-results/index.html}"
if [[ ! -f "$page" ]]; then
  echo "$page: no such page (make it first: cargo run --release -- history)" >&2
  exit 2
fi
page="$(cd "$(dirname "$page")" && pwd)/$(basename "$page")"
if [[ -n "$screenshot" ]]; then
  screenshot="$(screenshot_path "$screenshot")"
fi

check_page history "$page" "$screenshot"
