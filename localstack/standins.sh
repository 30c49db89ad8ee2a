#!/usr/bin/env bash
# Start or stop the local AWS stand-ins used when there is no Docker and no
# AWS_ENDPOINT_URL: a DynamoDB-compatible server (localstack/dynamostandin,
# minidyn inside), an SQS-compatible server (fauxqs, pinned in
# localstack/package.json), a KMS-compatible server (localstack/kmsstandin,
# local-kms inside) and an EventBridge PutEvents stand-in
# (localstack/eventbridgestandin). All listen on 127.0.0.1 only, on free ports.
#
#   eval "$(bash localstack/standins.sh start)"   # exports the endpoints
#   bash localstack/standins.sh status
#   bash localstack/standins.sh stop
#
# start prints only `export ...` lines on stdout (progress goes to stderr):
#   export DONT_DYNAMO_ENDPOINT=http://127.0.0.1:PORT DONT_SQS_ENDPOINT=http://127.0.0.1:PORT DONT_KMS_ENDPOINT=http://127.0.0.1:PORT DONT_EVENTBRIDGE_ENDPOINT=http://127.0.0.1:PORT
# State (PIDs, endpoints, logs, the built binary) lives in
# $DONT_STANDINS_DIR (default /tmp/dont-standins). start is idempotent: if
# both servers are already running it prints their endpoints again.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
state="${DONT_STANDINS_DIR:-/tmp/dont-standins}"
wait_seconds="${DONT_STANDINS_WAIT:-60}"

log() { printf 'standins: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

# alive NAME: the recorded process exists and is the one we started.
alive() {
  local pidfile="$state/$1.pid" pid
  [[ -f "$pidfile" ]] || return 1
  pid="$(cat "$pidfile")"
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  kill -0 "$pid" 2>/dev/null || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q "$2"
}

stop_one() {
  local name="$1" marker="$2" pid
  if alive "$name" "$marker"; then
    pid="$(cat "$state/$name.pid")"
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
      log "$name ($pid) did not stop on SIGTERM; sending SIGKILL"
      kill -9 "$pid" 2>/dev/null || true
    fi
    log "stopped $name ($pid)"
  fi
  rm -f "$state/$name.pid" "$state/$name.endpoint"
}

stop_all() {
  stop_one dynamo dynamostandin
  stop_one sqs fauxqs-loopback
  stop_one kms kmsstandin
  stop_one events eventbridgestandin
  rm -f "$state/env"
}

# wait_listening NAME LOG: waits for the "listening URL" line, prints URL.
wait_listening() {
  local name="$1" logfile="$2" pid url
  pid="$(cat "$state/$name.pid")"
  for _ in $(seq $((wait_seconds * 10))); do
    url="$(sed -n 's/^listening \(http:\/\/[^ ]*\).*/\1/p' "$logfile" | head -n1)"
    if [[ -n "$url" ]]; then
      printf '%s\n' "$url"
      return 0
    fi
    kill -0 "$pid" 2>/dev/null || { cat "$logfile" >&2; die "$name exited before listening"; }
    sleep 0.1
  done
  cat "$logfile" >&2
  die "$name did not start listening within ${wait_seconds}s"
}

check_dynamo() {
  curl -fsS -o /dev/null -X POST \
    -H 'Content-Type: application/x-amz-json-1.0' \
    -H 'X-Amz-Target: DynamoDB_20120810.ListTables' \
    --data '{}' "$1/"
}

check_sqs() {
  curl -fsS -o /dev/null -X POST \
    -H 'Content-Type: application/x-amz-json-1.0' \
    -H 'X-Amz-Target: AmazonSQS.ListQueues' \
    --data '{}' "$1/"
}

print_env() {
  printf 'export DONT_DYNAMO_ENDPOINT=%s DONT_SQS_ENDPOINT=%s DONT_KMS_ENDPOINT=%s DONT_EVENTBRIDGE_ENDPOINT=%s\n' \
    "$(cat "$state/dynamo.endpoint")" "$(cat "$state/sqs.endpoint")" "$(cat "$state/kms.endpoint")" "$(cat "$state/events.endpoint")"
}

check_kms() {
  curl -fsS -o /dev/null -X POST \
    -H 'Content-Type: application/x-amz-json-1.1' \
    -H 'X-Amz-Target: TrentService.ListKeys' \
    --data '{}' "$1/"
}

node_tools() {
  command -v node >/dev/null || die "node is required (fauxqs); install Node.js 20 or newer"
  command -v npm >/dev/null || die "npm is required (fauxqs)"
  # npm ci only when the installed tree does not match the lock file.
  if ! cmp -s "$here/package-lock.json" "$here/node_modules/.dont-lock" 2>/dev/null; then
    log "installing localstack/package.json with npm ci"
    (cd "$here" && npm ci --no-audit --no-fund --loglevel=error >&2)
    cp "$here/package-lock.json" "$here/node_modules/.dont-lock"
  fi
}

start() {
  mkdir -p "$state"
  if alive dynamo dynamostandin && alive sqs fauxqs-loopback && alive kms kmsstandin && alive events eventbridgestandin && [[ -f "$state/env" ]]; then
    log "already running"
    print_env
    return 0
  fi
  stop_all
  command -v go >/dev/null || die "go is required"
  command -v curl >/dev/null || die "curl is required"
  node_tools
  trap 'status=$?; if [[ $status -ne 0 ]]; then stop_all; fi; exit $status' EXIT

  log "building the DynamoDB stand-in"
  (cd "$root" && go build -o "$state/dynamostandin" ./localstack/dynamostandin)
  log "building the KMS stand-in"
  (cd "$root" && go build -o "$state/kmsstandin" ./localstack/kmsstandin)
  log "building the EventBridge stand-in"
  (cd "$root" && go build -o "$state/eventbridgestandin" ./localstack/eventbridgestandin)

  nohup "$state/dynamostandin" -addr 127.0.0.1:0 >"$state/dynamo.log" 2>&1 &
  echo $! >"$state/dynamo.pid"
  FAUXQS_PORT=0 FAUXQS_LOGGER="${FAUXQS_LOGGER:-false}" \
    nohup node "$here/fauxqs-loopback.mjs" >"$state/sqs.log" 2>&1 &
  echo $! >"$state/sqs.pid"
  mkdir -p "$state/kms-data"
  nohup "$state/kmsstandin" -addr 127.0.0.1:0 -data "$state/kms-data" >"$state/kms.log" 2>&1 &
  echo $! >"$state/kms.pid"
  nohup "$state/eventbridgestandin" -addr 127.0.0.1:0 >"$state/events.log" 2>&1 &
  echo $! >"$state/events.pid"

  local dynamo sqs kms events
  dynamo="$(wait_listening dynamo "$state/dynamo.log")"
  sqs="$(wait_listening sqs "$state/sqs.log")"
  kms="$(wait_listening kms "$state/kms.log")"
  check_kms "$kms" || die "the KMS stand-in at $kms does not answer ListKeys"
  printf '%s\n' "$kms" >"$state/kms.endpoint"
  events="$(wait_listening events "$state/events.log")"
  check_dynamo "$dynamo" || die "the DynamoDB stand-in at $dynamo does not answer ListTables"
  check_sqs "$sqs" || die "fauxqs at $sqs does not answer ListQueues"
  printf '%s\n' "$dynamo" >"$state/dynamo.endpoint"
  printf '%s\n' "$sqs" >"$state/sqs.endpoint"
  printf '%s\n' "$events" >"$state/events.endpoint"
  print_env >"$state/env"
  trap - EXIT
  log "DynamoDB stand-in $dynamo (pid $(cat "$state/dynamo.pid")), fauxqs $sqs (pid $(cat "$state/sqs.pid")), KMS stand-in $kms (pid $(cat "$state/kms.pid")), EventBridge stand-in $events (pid $(cat "$state/events.pid")); logs in $state"
  print_env
}

status() {
  local ok=0
  alive dynamo dynamostandin && log "dynamo: pid $(cat "$state/dynamo.pid") $(cat "$state/dynamo.endpoint" 2>/dev/null)" || { log "dynamo: not running"; ok=1; }
  alive sqs fauxqs-loopback && log "sqs: pid $(cat "$state/sqs.pid") $(cat "$state/sqs.endpoint" 2>/dev/null)" || { log "sqs: not running"; ok=1; }
  alive kms kmsstandin && log "kms: pid $(cat "$state/kms.pid") $(cat "$state/kms.endpoint" 2>/dev/null)" || { log "kms: not running"; ok=1; }
  alive events eventbridgestandin && log "events: pid $(cat "$state/events.pid") $(cat "$state/events.endpoint" 2>/dev/null)" || { log "events: not running"; ok=1; }
  [[ $ok -eq 0 ]] && print_env
  return $ok
}

case "${1:-}" in
  start) start ;;
  stop) stop_all ;;
  status) status ;;
  *) die "usage: $0 start|stop|status" ;;
esac
