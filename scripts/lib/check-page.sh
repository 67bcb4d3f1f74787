# Shared by scripts/check-report.sh and scripts/check-history.sh (sourced): renders a page
# in headless Chromium and checks it. Every chart figure's SVG is drawn with a nonzero size
# and nothing is fetched from the network (which is blocked, so a reference out of the page
# fails instead of loading); then, by KIND, a report's verdict table starts on the first
# screen (1280x800), or the history page has a drawn chart under every scenario heading and
# a row for every run folder beside it. Installs Debian's `chromium` when it is missing. The
# checks run on a copy with a checking script appended; the page itself is never changed.
# SCREENSHOT, when not empty, gets the page's first screen as a PNG.
# Usage: check_page report|history PAGE SCREENSHOT; returns 0 if every check holds, 1 if
# one fails (exits 2 where chromium cannot be installed).

# A --screenshot PATH as an absolute path, its folder checked (exits 2 when it is missing).
# parse_page_args USAGE ARGS...: sets `target` (the one operand, empty if none) and
# `screenshot` (--screenshot PATH, empty if none); prints USAGE and exits 2 on bad usage.
parse_page_args() {
  local usage_text="$1"
  shift
  target=""
  screenshot=""
  bad_usage() {
    echo "$usage_text" >&2
    exit 2
  }
  while (($# > 0)); do
    case "$1" in
      --screenshot)
        [[ $# -ge 2 && -n "$2" ]] || bad_usage
        screenshot="$2"
        shift 2
        ;;
      --screenshot=*)
        screenshot="${1#--screenshot=}"
        [[ -n "$screenshot" ]] || bad_usage
        shift
        ;;
      -h | --help) bad_usage ;;
      -*)
        echo "unknown flag $1" >&2
        bad_usage
        ;;
      *)
        [[ -z "$target" ]] || bad_usage
        target="$1"
        shift
        ;;
    esac
  done
}

screenshot_path() {
  local shot_dir
  shot_dir="$(dirname "$1")"
  if [[ ! -d "$shot_dir" ]]; then
    echo "--screenshot $1: no folder $shot_dir" >&2
    exit 2
  fi
  echo "$(cd "$shot_dir" && pwd)/$(basename "$1")"
}

check_page() {
kind=$1
page=$2
screenshot=$3
# The browser: Debian's chromium, installed quietly when missing (the package lists are
# fetched only when they offer no candidate for it).
if ! command -v chromium > /dev/null; then
  if [[ $EUID -ne 0 ]] || ! command -v apt-get > /dev/null; then
    echo "chromium is not installed and cannot be installed here (needs apt-get as root)" >&2
    exit 2
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt_log="$(mktemp)"
  if { LC_ALL=C apt-cache policy chromium | grep '^ *Candidate: [^(]' || apt-get update -qq; } \
    > "$apt_log" 2>&1 \
    && apt-get install -y -qq --no-install-recommends chromium > "$apt_log" 2>&1; then
    rm -f "$apt_log"
  else
    cat "$apt_log" >&2
    rm -f "$apt_log"
    echo "cannot install chromium" >&2
    exit 2
  fi
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# Headless, with a throwaway profile, no background services, and no network: every
# host name fails to resolve and every request goes to a proxy that is not there.
flags=(
  --headless
  --disable-gpu
  --user-data-dir="$work/profile"
  --no-first-run
  --no-default-browser-check
  --disable-extensions
  --disable-background-networking
  --disable-component-update
  --disable-default-apps
  --disable-domain-reliability
  --disable-sync
  --no-pings
  "--disable-features=NetworkTimeServiceQuerying,PreconnectToSearch,OptimizationHints,Translate,MediaRouter"
  --hide-scrollbars
  --mute-audio
  --host-resolver-rules="MAP * ~NOTFOUND"
  --proxy-server="http://127.0.0.1:9"
  --proxy-bypass-list="<-loopback>"
  "--window-size=1280,800"
)
if [[ $EUID -eq 0 ]]; then
  flags+=(--no-sandbox)
fi

# The copy, with the checking script appended: after the load event it measures every
# chart figure, the verdict table, the resources the page loaded and every reference out
# of the page, and writes them as JSON into <pre id="report-check">.
cp "$page" "$work/page.html"
cat >> "$work/page.html" << 'EOF'
<script>
window.addEventListener("load", () => setTimeout(() => {
  const out = { viewport: [innerWidth, innerHeight], charts: [], verdict: null,
                resources: [], references: [] };
  const shapes = "path, rect, line, polyline, polygon, circle, ellipse, text, image, use";
  for (const fig of document.querySelectorAll("figure")) {
    const svg = fig.querySelector("svg");
    const chart = { id: fig.id, svg: !!svg, width: 0, height: 0, drawn: 0 };
    if (svg) {
      // The drawing area (inside the border), and the shapes with a size that fall in it.
      const box = svg.getBoundingClientRect();
      const style = getComputedStyle(svg);
      const visible = style.visibility !== "hidden" && Number(style.opacity) > 0;
      chart.width = visible ? svg.clientWidth : 0;
      chart.height = visible ? svg.clientHeight : 0;
      const left = box.left + svg.clientLeft, top = box.top + svg.clientTop;
      const right = left + chart.width, bottom = top + chart.height;
      for (const el of svg.querySelectorAll(shapes)) {
        const b = el.getBoundingClientRect();
        if ((b.width > 0 || b.height > 0) && b.right >= left && b.left <= right &&
            b.bottom >= top && b.top <= bottom && chart.width > 0 && chart.height > 0) {
          chart.drawn++;
        }
      }
    }
    out.charts.push(chart);
  }
  const heading = document.getElementById("verdict");
  out.verdict_heading = !!heading;
  if (heading) {
    let table = null;
    for (let el = heading.nextElementSibling; el && !/^H[12]$/.test(el.tagName);
         el = el.nextElementSibling) {
      table = el.tagName === "TABLE" ? el : el.querySelector("table");
      if (table) break;
    }
    if (table) {
      const box = table.getBoundingClientRect();
      out.verdict = { top: box.top + scrollY, height: box.height, rows: table.rows.length };
    }
  }
  const local = /^(file|data|about|blob|chrome|javascript):/i;
  for (const entry of performance.getEntriesByType("resource")) {
    if (!local.test(entry.name)) out.resources.push(entry.name);
  }
  const external = /^\s*(https?:|wss?:|ftp:|\/\/)/i;
  const attrs = ["src", "srcset", "href", "xlink:href", "poster", "data", "background",
                 "action", "formaction"];
  for (const el of document.querySelectorAll("*")) {
    if (el.id === "report-check" || /^(A|AREA)$/i.test(el.tagName)) continue;
    for (const name of attrs) {
      const value = el.getAttribute(name);
      if (value && value.split(",").some((part) => external.test(part))) {
        out.references.push(`<${el.tagName.toLowerCase()} ${name}="${value}">`);
      }
    }
  }
  const css = [...document.querySelectorAll("style")].map((s) => s.textContent)
    .concat([...document.querySelectorAll("[style]")].map((e) => e.getAttribute("style")));
  for (const text of css) {
    for (const m of text.matchAll(/(?:url\(\s*['"]?|@import\s+['"])\s*((?:https?:|wss?:|\/\/)[^'")\s]*)/gi)) {
      out.references.push(`css ${m[1]}`);
    }
  }
  // Each h2 with the chart figures after it up to the next h2, and the rows of the runs'
  // table (the history page's).
  out.sections = [];
  for (const h2 of document.querySelectorAll("h2")) {
    const figures = [];
    for (let el = h2.nextElementSibling; el && el.tagName !== "H2"; el = el.nextElementSibling) {
      for (const fig of (el.tagName === "FIGURE" ? [el] : el.querySelectorAll("figure"))) {
        figures.push(fig.id);
      }
    }
    out.sections.push({ id: h2.id, figures });
  }
  out.run_rows = [...document.querySelectorAll("tr[id^='run-']")].map(
    (row) => row.cells.length > 2 ? row.cells[2].textContent.trim() : "");
  const pre = document.createElement("pre");
  pre.id = "report-check";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
}, 0));
</script>
EOF

started=$SECONDS
status=0
file_url() { python3 -c 'import pathlib, sys; print(pathlib.Path(sys.argv[1]).as_uri())' "$1"; }
timeout 120 chromium "${flags[@]}" --log-net-log="$work/net.json" --net-log-capture-mode=Default \
  --virtual-time-budget=10000 --dump-dom "$(file_url "$work/page.html")" \
  > "$work/dom.html" 2> "$work/chromium.log" || status=$?

result=0
python3 - "$kind" "$page" "$work/dom.html" "$work/net.json" "$status" << 'EOF' || result=$?
import html, json, re, sys

kind, report, dom_path, net_path, status = sys.argv[1:6]
source = open(report, encoding="utf-8").read()
dom = open(dom_path, encoding="utf-8", errors="replace").read()
failed = False

def line(ok, text):
    global failed
    failed |= not ok
    print(f"{'pass' if ok else 'FAIL'}  {text}")

found = re.findall(r'<pre id="report-check">(.*?)</pre>', dom, re.S)
if not found:
    print(f"FAIL  the page was not rendered (chromium exit status {status}, no check results)")
    sys.exit(1)
page = json.loads(html.unescape(found[-1]))
width, height = page["viewport"]

# a. Charts: every figure of the source has an SVG with a size and drawn shapes.
expected = len(re.findall(r"<figure[\s>]", source))
charts = page["charts"]
bad = [c for c in charts if not (c["svg"] and c["width"] > 0 and c["height"] > 0 and c["drawn"] > 0)]
drawn = len(charts) - len(bad)
shapes = sum(c["drawn"] for c in charts)
detail = "; ".join(
    f"{c['id'] or '?'}: " + ("no svg" if not c["svg"] else
                             f"{c['width']:.0f}x{c['height']:.0f} px, {c['drawn']} shapes drawn")
    for c in bad)
line(expected > 0 and not bad and drawn == expected,
     f"charts: {drawn} of {expected} chart figures drawn ({expected} in the page, "
     f"{len(charts)} in the rendered page; {shapes} shapes with a size)"
     + (f"; not drawn: {detail}" if detail else ""))

# b. A report: the verdict table starts within the first viewport. The history page: every
# scenario heading has a drawn chart, and every run folder under the page's folder (its
# latest/ aside) has its row.
verdict = page["verdict"]
if kind == "history":
    import os
    drawn_ids = {c["id"] for c in charts if c["svg"] and c["width"] > 0 and c["height"] > 0}
    scenarios = [s for s in page["sections"] if s["id"] not in ("runs", "contents", "left-out")]
    empty = [s["id"] for s in scenarios if not any(f in drawn_ids for f in s["figures"])]
    line(scenarios and not empty,
         f"scenarios: {len(scenarios) - len(empty)} of {len(scenarios)} scenario headings with a "
         f"drawn chart" + (f"; none under: {', '.join(empty)}" if empty else ""))
    root = os.path.dirname(os.path.abspath(report))
    folders = sorted(os.path.relpath(d, root) for d, _, files in os.walk(root)
                     if "results.json" in files
                     and os.path.relpath(d, root).split(os.sep)[0] != "latest")
    folders = [f.replace(os.sep, "/") if f != "." else "" for f in folders]
    rows = page["run_rows"]
    missing = [f for f in folders if f not in rows]
    line(folders and not missing and len(rows) == len(folders),
         f"runs: {len(rows)} rows in the runs table, {len(folders)} folders with a results.json "
         f"under {root}" + (f"; without a row: {', '.join(missing)}" if missing else ""))
elif verdict is None:
    line(False, "verdict: no verdict table (" + ("no table after the verdict heading"
         if page["verdict_heading"] else "no <h2 id=\"verdict\"> in the page") + ")")
else:
    top = verdict["top"]
    line(0 <= top < height,
         f"verdict: table top at {top:.0f} px, {'within' if 0 <= top < height else 'outside'} "
         f"the first screen (viewport {width}x{height} of a 1280x800 window; "
         f"{verdict['rows']} rows, {verdict['height']:.0f} px tall)")

# c. No network: the page's requests in the browser's net log (those made for the file://
# page: initiated by it or keyed to its site; the browser's own background requests are
# counted apart), the page's resource timing, and the page's own references out of it.
remote = re.compile(r"^(https?|wss?|ftp)://", re.I)
page_urls, browser_hosts = set(), set()
def urls_in(value):
    if isinstance(value, str):
        if remote.match(value) and "~notfound" not in value:
            yield value.split()[0]
    elif isinstance(value, dict):
        for item in value.values():
            yield from urls_in(item)
    elif isinstance(value, list):
        for item in value:
            yield from urls_in(item)
def host(url):
    return re.sub(r"^\w+://([^/:?#]*).*", r"\1", url)
try:
    text = open(net_path, encoding="utf-8", errors="replace").read().rstrip()
    try:
        log = json.loads(text)
    except json.JSONDecodeError:  # cut short: close the events list
        log = json.loads(text.rstrip(",") + "]}")
    events = log["events"]
except (OSError, ValueError, KeyError) as error:
    events = None
    line(False, f"network: cannot read the browser's net log ({error})")
if events is not None:
    for event in events:
        params = event.get("params") or {}
        found_urls = set(urls_in(params))
        if not found_urls:
            continue
        initiator = params.get("initiator")
        if "file://" in json.dumps(params) or (initiator and initiator != "not an origin"):
            page_urls |= found_urls
        else:
            browser_hosts |= {host(u) for u in found_urls}
    browser_hosts -= {host(u) for u in page_urls}
    browser_hosts -= {".".join(h.split(".")[-2:]) for h in map(host, page_urls)}
    refs, res = page["references"], page["resources"]
    ok = not page_urls and not refs and not res
    own = (f" (not counted: the browser's own background requests to "
           f"{', '.join(sorted(browser_hosts))})" if browser_hosts else "")
    line(ok, f"network: {len(page_urls)} requests by the page in the net log ({len(events)} events), "
             f"{len(res)} remote resources in its resource timing, {len(refs)} references out of "
             f"the page" + ("" if ok else ": " + ", ".join(sorted(page_urls)[:5] + res[:5] + refs[:5]))
             + own)
sys.exit(1 if failed else 0)
EOF
if ((status != 0)) || ! grep -q 'id="report-check"' "$work/dom.html"; then
  echo "chromium (exit status $status):" >&2
  tail -n 20 "$work/chromium.log" >&2
fi

if [[ -n "$screenshot" ]]; then
  timeout 120 chromium "${flags[@]}" --screenshot="$screenshot" "$(file_url "$page")" \
    > "$work/shot.log" 2>&1 || true
  if [[ -s "$screenshot" ]]; then
    echo "screenshot: $screenshot"
  else
    echo "FAIL  screenshot: chromium wrote no $screenshot" >&2
    tail -n 20 "$work/shot.log" >&2
    result=1
  fi
fi
echo "checked in $((SECONDS - started)) s"
return "$result"
}
