#!/usr/bin/env bash
# Apache Kafka as a real broker for the pipeline scenarios (docs/transport.md, "Apache
# Kafka itself"): KRaft nodes, each a combined broker and controller on 127.0.0.1, started from
# the jars that peers/kafka/pom.xml pins (fetched through Maven, offline once ~/.m2 holds
# them), their storage, logs and ports kept in DIR.
#
# Usage:
#   scripts/kafka.sh start [--brokers N] [--heap SIZE] [--timeout S] DIR
#   scripts/kafka.sh stop [--timeout S] DIR
#   scripts/kafka.sh status DIR
#   scripts/kafka.sh signal SIGNAL [--node N] DIR
#   scripts/kafka.sh client-check [--group-protocol P] [--topic NAME] BOOTSTRAP
#
# start   formats DIR on its first start (N nodes: 1, or 3 voters of one quorum; ports
#         chosen once and kept in DIR/cluster.env, so that a cluster stopped and started
#         again answers at the same --bootstrap-servers), starts every node of DIR that is
#         not running, waits until the cluster describes itself with all N brokers (a
#         metadata answer, within --timeout, 120 s by default) and prints
#         `bootstrap=127.0.0.1:PORT[,...]` as the first line of standard output. On
#         failure it stops the nodes it started, prints each log's path and last lines,
#         and exits 1. --heap caps each JVM's heap (512m).
# stop    ends the nodes DIR's pid files name, once each is checked to be that node's
#         broker: SIGTERM (after SIGCONT, for a stopped one), then SIGKILL after --timeout
#         (30 s).
# status  prints the bootstrap line and each node's state; exit 0 when all run.
# signal  sends SIGNAL (KILL, STOP, CONT, TERM) to one node (--node N) or all: faults.
# client-check  runs Kafka's Java client against the broker at BOOTSTRAP (this script's
#         or `keyed-bench broker`): produce, consume in a group (--group-protocol classic
#         or consumer, the default), commit, resume from the commits (ClientCheck.java).
#
# Exit 2: bad usage, or Java 17+ or Maven missing (with the apt-get command).
set -euo pipefail

usage() {
  sed -n '7,12p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}
fail() {
  echo "kafka.sh: $*" >&2
  exit 2
}
note() { echo "kafka.sh: $*" >&2; }

root="$(cd "$(dirname "$0")/.." && pwd)"
peer="$root/peers/kafka"

command=${1:-}
[[ -n "$command" ]] || usage
shift
brokers=""
heap=512m
timeout=""
node=""
signal=""
group_protocol=consumer
topic=""
if [[ "$command" == signal ]]; then
  signal=${1:-}
  [[ -n "$signal" ]] || usage
  shift
  case "$signal" in
    KILL | STOP | CONT | TERM) ;;
    *) fail "signal: SIGNAL must be KILL, STOP, CONT or TERM, not '$signal'" ;;
  esac
fi
dir=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --brokers) brokers=${2:?--brokers needs 1 or 3}; shift 2 ;;
    --heap) heap=${2:?--heap needs a size such as 512m}; shift 2 ;;
    --timeout) timeout=${2:?--timeout needs seconds}; shift 2 ;;
    --node) node=${2:?--node needs a node number}; shift 2 ;;
    --group-protocol) group_protocol=${2:?--group-protocol needs classic or consumer}; shift 2 ;;
    --topic) topic=${2:?--topic needs a name}; shift 2 ;;
    -h | --help) usage ;;
    -*) fail "unknown flag $1" ;;
    *) [[ -z "$dir" ]] || fail "one DIR or BOOTSTRAP only ('$dir', then '$1')"; dir=$1; shift ;;
  esac
done
[[ -n "$dir" ]] || usage
[[ -z "$brokers" || "$brokers" == 1 || "$brokers" == 3 ]] ||
  fail "--brokers must be 1 or 3 (one node, or three voters of one quorum), not '$brokers'"
[[ -z "$timeout" || "$timeout" =~ ^[1-9][0-9]*$ ]] || fail "--timeout must be whole seconds, not '$timeout'"
[[ "$heap" =~ ^[1-9][0-9]*[mMgG]$ ]] || fail "--heap must be a size such as 512m or 1g, not '$heap'"
[[ "$group_protocol" == classic || "$group_protocol" == consumer ]] ||
  fail "--group-protocol must be classic or consumer, not '$group_protocol'"

# --- DIR and its cluster ------------------------------------------------------------------

env_file() { echo "$dir/cluster.env"; }
node_dir() { echo "$dir/node-$1"; }

# Reads DIR/cluster.env: BROKERS, CLUSTER_ID, BROKER_PORTS, CONTROLLER_PORTS, DIRECTORY_IDS.
load() {
  [[ -f "$(env_file)" ]] || fail "$dir holds no cluster (no cluster.env): start one with 'scripts/kafka.sh start $dir'"
  # shellcheck disable=SC1090
  source "$(env_file)"
  read -r -a broker_ports <<< "$BROKER_PORTS"
  read -r -a controller_ports <<< "$CONTROLLER_PORTS"
  read -r -a directory_ids <<< "$DIRECTORY_IDS"
}

bootstrap() {
  local addresses=() n
  for ((n = 1; n <= BROKERS; n++)); do addresses+=("127.0.0.1:${broker_ports[n - 1]}"); done
  local IFS=,
  echo "${addresses[*]}"
}

# The pid of node N's broker if it is running (the pid file's process is still the broker
# started with that node's server.properties), else nothing.
pid_of() {
  local file pid
  file="$(node_dir "$1")/pid"
  [[ -f "$file" ]] || return 0
  pid=$(<"$file")
  [[ "$pid" =~ ^[0-9]+$ && -r "/proc/$pid/cmdline" ]] || return 0
  if tr '\0' ' ' < "/proc/$pid/cmdline" | grep -qF "kafka.Kafka $(node_dir "$1")/server.properties"; then
    echo "$pid"
  fi
}

# A base64url UUID as Kafka writes them (22 characters; never one that starts with '-').
uuid() {
  local id
  while :; do
    id=$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\n')
    [[ "$id" != -* ]] && { echo "$id"; return; }
  done
}

# 2N free ports on 127.0.0.1 below the ephemeral range, so that no client's outgoing
# connection takes one while the cluster is stopped.
free_ports() {
  python3 - "$1" <<'PY'
import random, socket, sys
low, _ = map(int, open("/proc/sys/net/ipv4/ip_local_port_range").read().split())
# Below the ephemeral range where it leaves room, else anywhere above the well-known ports.
low, high = (10000, low) if low - 10000 >= 1000 else (10000, 65536)
chosen = []
while len(chosen) < int(sys.argv[1]):
    port = random.randrange(low, high)
    if port in chosen:
        continue
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            continue
    chosen.append(port)
print(" ".join(map(str, chosen)))
PY
}

create() {
  local count=${brokers:-1} ports n
  command -v python3 > /dev/null || fail "choosing ports needs python3: apt-get install -y python3"
  local chosen
  chosen=$(free_ports $((2 * count))) || fail "could not choose ports (python3 failed)"
  read -r -a ports <<< "$chosen"
  [[ ${#ports[@]} == $((2 * count)) ]] || fail "could not choose $((2 * count)) ports: '$chosen'"
  {
    echo "# Written once by scripts/kafka.sh; every start of this cluster reads it."
    echo "BROKERS=$count"
    echo "CLUSTER_ID=$(uuid)"
    echo "BROKER_PORTS=\"${ports[*]:0:count}\""
    echo "CONTROLLER_PORTS=\"${ports[*]:count}\""
    local ids=()
    for ((n = 1; n <= count; n++)); do ids+=("$(uuid)"); done
    echo "DIRECTORY_IDS=\"${ids[*]}\""
  } > "$(env_file)"
}

# --- Java, Maven and the classpath --------------------------------------------------------

need_jvm() {
  local missing=()
  command -v java > /dev/null || missing+=(openjdk-17-jre-headless)
  command -v mvn > /dev/null || missing+=(maven)
  if [[ ${#missing[@]} -gt 0 ]]; then
    fail "Apache Kafka needs Java 17 or later and Maven: apt-get install -y ${missing[*]}"
  fi
  local version
  version=$(java -XshowSettings:properties -version 2>&1 | awk -F' = ' '/java.specification.version/ { print $2 }')
  [[ "${version%%.*}" -ge 17 ]] 2>/dev/null ||
    fail "Apache Kafka 4 needs Java 17 or later, and 'java' is $version: apt-get install -y openjdk-17-jre-headless"
}

# The jars peers/kafka/pom.xml resolves, as a classpath kept in target/peers/kafka/ for
# every DIR and reused while the POM is unchanged and every jar is still in ~/.m2. Maven
# runs offline first, and fetches only what is missing.
cache="$root/target/peers/kafka"
classpath_file="$cache/classpath"

classpath() {
  local stamp="$cache/classpath.pom-sha256" sum jar ok=1
  mkdir -p "$cache"
  sum=$(sha256sum "$peer/pom.xml" | cut -d' ' -f1)
  if [[ -f "$classpath_file" && -f "$stamp" && "$(<"$stamp")" == "$sum" ]]; then
    while IFS= read -r -d: jar || [[ -n "$jar" ]]; do
      [[ -f "$jar" ]] || { ok=0; break; }
    done < "$classpath_file"
    [[ $ok == 1 ]] && return 0
  fi
  local written="$cache/classpath.$$"
  local args=(-q -B -f "$peer/pom.xml" dependency:build-classpath "-Dmdep.outputFile=$written")
  if ! mvn -o "${args[@]}" > "$cache/maven.log" 2>&1; then
    note "fetching Apache Kafka through Maven (peers/kafka/pom.xml) into ~/.m2"
    local started=$SECONDS
    mvn "${args[@]}" > "$cache/maven.log" 2>&1 || {
      tail -n 20 "$cache/maven.log" >&2
      echo "kafka.sh: Maven could not resolve peers/kafka/pom.xml (log: $cache/maven.log)" >&2
      exit 1
    }
    note "fetched in $((SECONDS - started)) s"
  fi
  mv "$written" "$classpath_file"
  echo "$sum" > "$stamp"
}

# --- Nodes --------------------------------------------------------------------------------

# node N's server.properties, written at every start from cluster.env.
properties() {
  local n=$1 here quorum=() replicas min_isr p
  here=$(node_dir "$n")
  for ((p = 1; p <= BROKERS; p++)); do quorum+=("127.0.0.1:${controller_ports[p - 1]}"); done
  replicas=$BROKERS
  min_isr=$((BROKERS > 1 ? 2 : 1))
  local IFS=,
  cat << EOF
# Written by scripts/kafka.sh from cluster.env at every start; edits are lost.
# Node $n of $BROKERS: a combined broker and controller on 127.0.0.1.
process.roles=broker,controller
node.id=$n
listeners=PLAINTEXT://127.0.0.1:${broker_ports[n - 1]},CONTROLLER://127.0.0.1:${controller_ports[n - 1]}
advertised.listeners=PLAINTEXT://127.0.0.1:${broker_ports[n - 1]},CONTROLLER://127.0.0.1:${controller_ports[n - 1]}
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
controller.listener.names=CONTROLLER
controller.quorum.bootstrap.servers=${quorum[*]}
log.dirs=$here/data

# Replication: every internal topic on every node; writes need 2 replicas of 3.
offsets.topic.replication.factor=$replicas
transaction.state.log.replication.factor=$replicas
transaction.state.log.min.isr=$min_isr
share.coordinator.state.topic.replication.factor=$replicas
share.coordinator.state.topic.min.isr=$min_isr
default.replication.factor=$replicas
min.insync.replicas=$min_isr

# Test settings (docs/transport.md, "Test settings"): a KIP-848
# session of 6 s with a 1 s heartbeat (45 s and 5 s by default) and their minimums with
# them; the classic protocol's minimum session at its default, 6 s, the session the suite
# asks for on a cluster; no delay before a classic group's first rebalance (3 s by
# default); commit metadata capped at the default 4,096 characters.
group.consumer.session.timeout.ms=6000
group.consumer.min.session.timeout.ms=6000
group.consumer.heartbeat.interval.ms=1000
group.consumer.min.heartbeat.interval.ms=1000
group.min.session.timeout.ms=6000
group.initial.rebalance.delay.ms=0
offset.metadata.max.bytes=4096
EOF
}

# Runs a Java helper of Kafka's (the storage tool, Ready.java, ClientCheck.java) on the
# classpath with HEAP and Kafka's log at LEVEL: java_tool HEAP LEVEL MAIN ARGS...
java_tool() {
  local heap=$1 level=$2
  shift 2
  java "-Xmx$heap" "-Dkafka.log.level=$level" "-Dlog4j2.configurationFile=$peer/log4j2.xml" \
    -cp "$(<"$classpath_file")" "$@"
}

java_opts() {
  # As Kafka's own kafka-server-start.sh runs a broker (G1, short pauses), the heap capped.
  echo "-Xms$heap -Xmx$heap -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35"
  echo "-XX:+ExplicitGCInvokesConcurrent -Djava.awt.headless=true"
  echo "-Dlog4j2.configurationFile=$peer/log4j2.xml"
}

# Formats node N's storage once (its data/meta.properties says it was).
format() {
  local n=$1 here voters=() p
  here=$(node_dir "$n")
  [[ -f "$here/data/meta.properties" ]] && return 0
  local quorum_flag
  if [[ $BROKERS == 1 ]]; then
    quorum_flag=(--standalone)
  else
    for ((p = 1; p <= BROKERS; p++)); do
      voters+=("$p@127.0.0.1:${controller_ports[p - 1]}:${directory_ids[p - 1]}")
    done
    local IFS=,
    quorum_flag=(--initial-controllers "${voters[*]}")
  fi
  java_tool 256m WARN kafka.tools.StorageTool format -t "$CLUSTER_ID" \
    -c "$here/server.properties" "${quorum_flag[@]}" > "$here/format.log" 2>&1 || {
    cat "$here/format.log" >&2
    echo "kafka.sh: formatting node $n failed (log: $here/format.log)" >&2
    return 1
  }
}

start_node() {
  local n=$1 here
  here=$(node_dir "$n")
  # shellcheck disable=SC2046
  setsid java $(java_opts) -cp "$(<"$classpath_file")" kafka.Kafka "$here/server.properties" \
    >> "$here/server.log" 2>&1 < /dev/null &
  echo $! > "$here/pid"
}

# Stops the nodes whose numbers are given: SIGCONT and SIGTERM, then SIGKILL after the
# bound; only processes still their node's broker are signalled.
stop_nodes() {
  local bound=$1 n pid
  shift
  local pids=()
  for n in "$@"; do
    pid=$(pid_of "$n")
    if [[ -n "$pid" ]]; then
      kill -CONT "$pid" 2> /dev/null || true
      kill -TERM "$pid" 2> /dev/null || true
      pids+=("$pid")
    fi
  done
  local deadline=$((SECONDS + bound))
  while [[ ${#pids[@]} -gt 0 && $SECONDS -lt $deadline ]]; do
    local alive=()
    for pid in "${pids[@]}"; do kill -0 "$pid" 2> /dev/null && alive+=("$pid"); done
    pids=("${alive[@]+"${alive[@]}"}")
    [[ ${#pids[@]} -gt 0 ]] && sleep 0.2
  done
  for n in "$@"; do
    pid=$(pid_of "$n")
    [[ -n "$pid" ]] || continue
    note "node $n (pid $pid) did not end within $bound s of SIGTERM: SIGKILL"
    kill -KILL "$pid" 2> /dev/null || true
  done
  for n in "$@"; do
    gone_within "$n" 10 || note "node $n still runs 10 s after SIGKILL"
    rm -f "$(node_dir "$n")/pid"
  done
}

# Waits at most SECONDS for node N's broker to be gone; whether it is.
gone_within() {
  local n=$1 deadline=$((SECONDS + $2))
  while [[ -n "$(pid_of "$n")" ]]; do
    ((SECONDS < deadline)) || return 1
    sleep 0.05
  done
}

show_logs() {
  local n
  for n in "$@"; do
    echo "--- node $n: $(node_dir "$n")/server.log (last 25 lines)" >&2
    tail -n 25 "$(node_dir "$n")/server.log" >&2 2> /dev/null || true
  done
}

# --- Commands -----------------------------------------------------------------------------

cmd_start() {
  need_jvm
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  if [[ -f "$(env_file)" ]]; then
    load
    [[ -z "$brokers" || "$brokers" == "$BROKERS" ]] ||
      fail "$dir holds a cluster of $BROKERS node(s), not $brokers: stop it and use another DIR"
  else
    [[ -z "$(ls -A "$dir")" ]] || fail "$dir is neither empty nor a cluster of this script's (no cluster.env)"
    create
    load
  fi
  classpath
  local started_at=$SECONDS n
  for ((n = 1; n <= BROKERS; n++)); do
    mkdir -p "$(node_dir "$n")"
    properties "$n" > "$(node_dir "$n")/server.properties"
  done
  local formats=()
  for ((n = 1; n <= BROKERS; n++)); do
    format "$n" &
    formats+=($!)
  done
  local pid
  for pid in "${formats[@]}"; do wait "$pid" || exit 1; done
  local started=() pid
  for ((n = 1; n <= BROKERS; n++)); do
    pid=$(pid_of "$n")
    if [[ -z "$pid" ]]; then
      start_node "$n"
      started+=("$n")
    elif [[ "$(awk '{ print $3 }' "/proc/$pid/stat")" == T ]]; then
      note "node $n was stopped (SIGSTOP): SIGCONT"
      kill -CONT "$pid"
    fi
  done
  local bound=${timeout:-120}
  local left=$((bound - (SECONDS - started_at)))
  ((left > 5)) || left=5
  if ! java_tool 128m ERROR "$peer/Ready.java" "$(bootstrap)" "$BROKERS" "$((left * 1000))"; then
    echo "kafka.sh: the cluster in $dir did not answer with $BROKERS broker(s) within $bound s" >&2
    show_logs $(seq 1 "$BROKERS")
    [[ ${#started[@]} -gt 0 ]] && stop_nodes 10 "${started[@]}"
    exit 1
  fi
  echo "bootstrap=$(bootstrap)"
  note "${#started[@]} of $BROKERS node(s) started, the cluster ready $((SECONDS - started_at)) s after the classpath was; logs in $dir/node-*/server.log"
}

cmd_stop() {
  dir=$(cd "$dir" 2> /dev/null && pwd) || fail "no such DIR: $dir"
  load
  stop_nodes "${timeout:-30}" $(seq 1 "$BROKERS")
}

cmd_status() {
  dir=$(cd "$dir" 2> /dev/null && pwd) || fail "no such DIR: $dir"
  load
  echo "bootstrap=$(bootstrap)"
  local n pid state all=0
  for ((n = 1; n <= BROKERS; n++)); do
    pid=$(pid_of "$n")
    if [[ -z "$pid" ]]; then
      state=down
      all=1
    elif [[ "$(awk '{ print $3 }' "/proc/$pid/stat")" == T ]]; then
      state="stopped (SIGSTOP), pid $pid"
      all=1
    else
      state="running, pid $pid"
    fi
    echo "node $n: $state"
  done
  return $all
}

cmd_signal() {
  dir=$(cd "$dir" 2> /dev/null && pwd) || fail "no such DIR: $dir"
  load
  local nodes n pid
  if [[ -n "$node" ]]; then
    [[ "$node" =~ ^[0-9]+$ && $node -ge 1 && $node -le $BROKERS ]] || fail "--node must be 1 to $BROKERS, not '$node'"
    nodes=("$node")
  else
    read -r -a nodes <<< "$(seq 1 "$BROKERS" | tr '\n' ' ')"
  fi
  for n in "${nodes[@]}"; do
    pid=$(pid_of "$n")
    [[ -n "$pid" ]] || fail "node $n is not running"
    kill "-$signal" "$pid"
    if [[ $signal == KILL ]]; then
      gone_within "$n" 10 || fail "node $n (pid $pid) still runs 10 s after SIGKILL"
      rm -f "$(node_dir "$n")/pid"
    fi
    note "SIG$signal sent to node $n (pid $pid)"
  done
}

cmd_client_check() {
  need_jvm
  local bootstrap=$dir
  [[ "$bootstrap" =~ ^[^,:]+:[0-9]+(,[^,:]+:[0-9]+)*$ ]] || fail "client-check: BOOTSTRAP must be HOST:PORT[,...], not '$bootstrap'"
  [[ -n "$topic" ]] || topic="keyed-bench-java-client-$(date +%s)-$$"
  classpath
  java_tool 256m WARN "$peer/ClientCheck.java" "$bootstrap" "$topic" "$group_protocol"
}

case "$command" in
  start) cmd_start ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  signal) cmd_signal ;;
  client-check) cmd_client_check ;;
  *) fail "unknown command '$command' (start, stop, status, signal, client-check)" ;;
esac
