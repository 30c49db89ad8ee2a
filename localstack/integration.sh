#!/usr/bin/env bash
# Run dont's AWS integration suite (localstack/integration) against real
# DynamoDB and SQS wire protocols, with the three Lambda functions running as
# their real bootstrap binaries under the AWS Lambda Runtime Interface
# Emulator (aws-lambda-rie).
#
#   bash localstack/integration.sh                  # the suite
#   bash localstack/integration.sh -run Timeout     # extra go test arguments
#
# Endpoints:
#   AWS_ENDPOINT_URL set (LocalStack, or any AWS-compatible endpoint): the
#     suite, the functions and the setup all use it.
#   otherwise: the local stand-ins are started on 127.0.0.1 first
#     (localstack/standins.sh: the DynamoDB stand-in and fauxqs), in a state
#     directory of their own, and stopped again at the end.
#
# What it starts, each killed by PID in the EXIT trap:
#   - five aws-lambda-rie instances, each with its own port pair
#     (--runtime-interface-emulator-address for invokes, and
#     --runtime-api-address, which the emulator hands the bootstrap as
#     AWS_LAMBDA_RUNTIME_API): api (DONT_SPAWN_TIMEOUT 24h, the callback
#     and approval paths, and the Slack app of one project), api-passkey
#     (danger-full-access approved only with a passkey), api-short (DONT_SPAWN_TIMEOUT and
#     DONT_APPROVAL_TIMEOUT = $DONT_IT_SHORT_TIMEOUT, the timeout paths),
#     sweeper (with the sweep work queue, DONT_SWEEP_QUEUE_URL, as the
#     stack wires it: the scheduled event fans out) and operator (a project's first token, its settings). The
#     emulator serves one invoke at a time
#     per instance; the suite invokes each one serially.
#   - the stand-ins, when it started them.
#
# The suite (go test, guarded by DONT_INTEGRATION=1, which this script
# sets) fails rather than skips when anything it needs is missing.
#
# Environment: DONT_IT_SHORT_TIMEOUT (default 2s), DONT_IT_KEEP=1 keeps the
# work directory (logs) for inspection, DONT_IT_TIMEOUT (go test -timeout,
# default 15m), DONT_IT_BENCH_SPAWNS (bench/aws.sh: spawns for the lag
# benchmark), LAMBDA_ARCH is ignored: the functions are built for the host.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
# The RIE has no tagged Go module versions; this is its main branch as of
# the pseudo-version's date, and it builds with this repository's Go.
rie_version="v0.0.0-20261030222936-bef5c4ba774d"

log() { printf 'integration: %s\n' "$*" >&2; }

work="$(mktemp -d "${TMPDIR:-/tmp}/dont-integration.XXXXXX")"
pids=()
standins_started=0

cleanup() {
  local status=$?
  for pid in "${pids[@]}"; do
    kill "$pid" 2>/dev/null || true
  done
  for pid in "${pids[@]}"; do
    wait "$pid" 2>/dev/null || true
  done
  if [[ $standins_started -eq 1 ]]; then
    DONT_STANDINS_DIR="$work/standins" bash "$here/standins.sh" stop || true
  fi
  if [[ $status -ne 0 ]]; then
    for f in "$work"/*.log "$work"/standins/*.log; do
      [[ -f "$f" ]] || continue
      log "---- last lines of $f"
      tail -n 40 "$f" >&2 || true
    done
  fi
  if [[ "${DONT_IT_KEEP:-}" == 1 ]]; then
    log "kept $work"
  else
    rm -rf "$work"
  fi
  exit $status
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

command -v go >/dev/null || { log "go is required"; exit 1; }
cd "$root"
export GOFLAGS="${GOFLAGS:--buildvcs=false}"

# ---- endpoints
if [[ -n "${AWS_ENDPOINT_URL:-}" ]]; then
  log "using AWS_ENDPOINT_URL=$AWS_ENDPOINT_URL"
else
  log "AWS_ENDPOINT_URL is not set: starting the local stand-ins"
  standins_started=1
  exports="$(DONT_STANDINS_DIR="$work/standins" bash "$here/standins.sh" start)" || exit 1
  eval "$exports"
  export AWS_ENDPOINT_URL_DYNAMODB="$DONT_DYNAMO_ENDPOINT" AWS_ENDPOINT_URL_SQS="$DONT_SQS_ENDPOINT" AWS_ENDPOINT_URL_KMS="$DONT_KMS_ENDPOINT" AWS_ENDPOINT_URL_EVENTBRIDGE="$DONT_EVENTBRIDGE_ENDPOINT"
  log "DynamoDB $AWS_ENDPOINT_URL_DYNAMODB, SQS $AWS_ENDPOINT_URL_SQS, KMS $AWS_ENDPOINT_URL_KMS, EventBridge $AWS_ENDPOINT_URL_EVENTBRIDGE"
fi
# Local endpoints want some credentials and a region, never real ones.
export AWS_ACCESS_KEY_ID="${AWS_ACCESS_KEY_ID:-test}" AWS_SECRET_ACCESS_KEY="${AWS_SECRET_ACCESS_KEY:-test}"
export AWS_REGION="${AWS_REGION:-${AWS_DEFAULT_REGION:-us-east-1}}"
export AWS_EC2_METADATA_DISABLED=true

# ---- wire-level suites against these same endpoints: the SQS client test
# and the DynamoDB store's conformance suite (they run unchanged against
# LocalStack when AWS_ENDPOINT_URL is set). A skip fails the run.
export DONT_SQS_ENDPOINT="${DONT_SQS_ENDPOINT:-${AWS_ENDPOINT_URL_SQS:-$AWS_ENDPOINT_URL}}"
export DONT_DYNAMO_ENDPOINT="${DONT_DYNAMO_ENDPOINT:-${AWS_ENDPOINT_URL_DYNAMODB:-$AWS_ENDPOINT_URL}}"
if [[ "${DONT_IT_BENCH_ONLY:-}" == 1 ]]; then
  log "DONT_IT_BENCH_ONLY=1: a benchmark run (bench/report -only lambdacpu), without the wire-level suites"
else
log "running the SQS wire test and the DynamoDB store suite against $DONT_SQS_ENDPOINT and $DONT_DYNAMO_ENDPOINT"
go test -count=1 -v ./localstack/sqswire/ ./internal/store/dynamo/ > "$work/wire.out" 2>&1 || { tail -n 60 "$work/wire.out" >&2; exit 1; }
if grep -q -- '--- SKIP' "$work/wire.out"; then
  grep -- '--- SKIP' "$work/wire.out" >&2
  log "a wire-level test skipped: it must run here"
  exit 1
fi
fi

# ---- tools and binaries
log "building aws-lambda-rie $rie_version"
mkdir -p "$work/bin"
GOBIN="$work/bin" go install "github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie@$rie_version"
rie="$work/bin/aws-lambda-rie"

log "building the functions for the host ($(go env GOARCH))"
DONT_LAMBDA_OUT="$work/lambda" LAMBDA_ARCH="$(go env GOARCH)" bash "$here/build-functions.sh" >&2

# ---- table and queue, fresh for this run
run_id="it-$(date +%s)-$$"
exports="$(go run ./localstack/integration/setup -table "dont-$run_id" -queue "dont-timeouts-$run_id" -sweep-queue "dont-sweeps-$run_id")" || exit 1
eval "$exports"
# The sweep work queue is the sweeper's alone (as infra/stack wires it):
# only the sweeper's environment names it; the suite reads it as
# DONT_IT_SWEEP_QUEUE_URL and delivers its messages to the sweeper as the
# event source mapping would.
sweep_queue="$DONT_SWEEP_QUEUE_URL"
unset DONT_SWEEP_QUEUE_URL
export DONT_TABLE DONT_TIMEOUT_QUEUE_URL DONT_SECRETS_KEY DONT_IT_SWEEP_QUEUE_URL="$sweep_queue"
log "table $DONT_TABLE, timeout queue $DONT_TIMEOUT_QUEUE_URL, sweep work queue $sweep_queue, secrets key $DONT_SECRETS_KEY"

# ---- functions under the emulator
used_ports=" "
free_port() {
  local p
  for _ in $(seq 200); do
    # Below Linux's ephemeral range (32768 and up), which outgoing
    # connections of anything else running take ports from.
    p=$((20000 + RANDOM % 12000))
    [[ "$used_ports" == *" $p "* ]] && continue
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
      used_ports+="$p "
      printf '%s\n' "$p"
      return 0
    fi
  done
  log "no free port found"
  return 1
}

# start_function NAME BOOTSTRAP [VAR=VALUE...]: sets fn_url to its invoke URL.
# A port found free can be taken before the emulator binds it; a start that
# fails on "address already in use" is tried again on other ports.
start_function() {
  local attempt
  for attempt in 1 2 3; do
    if start_function_once "$@"; then return 0; fi
    grep -q "address already in use" "$work/$1.log" 2>/dev/null || return 1
    log "$1: a port was taken before the emulator bound it; trying other ports ($attempt/3)"
  done
  return 1
}

start_function_once() {
  local name="$1" bootstrap="$2" invoke_port runtime_port pid
  shift 2
  invoke_port="$(free_port)"
  runtime_port="$(free_port)"
  env "$@" AWS_LAMBDA_FUNCTION_NAME="dont-$name" AWS_LAMBDA_FUNCTION_TIMEOUT=60 \
    "$rie" --runtime-interface-emulator-address "127.0.0.1:$invoke_port" \
    --runtime-api-address "127.0.0.1:$runtime_port" "$bootstrap" >"$work/$name.log" 2>&1 &
  pid=$!
  pids+=("$pid")
  for _ in $(seq 300); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$invoke_port") 2>/dev/null; then
      fn_url="http://127.0.0.1:$invoke_port/2015-03-31/functions/function/invocations"
      log "$name: pid $pid, invoke 127.0.0.1:$invoke_port, runtime API 127.0.0.1:$runtime_port"
      return 0
    fi
    kill -0 "$pid" 2>/dev/null || { log "$name exited before listening"; return 1; }
    sleep 0.1
  done
  log "$name did not listen within 30s"
  return 1
}

short="${DONT_IT_SHORT_TIMEOUT:-2s}"
# DONT_RATE/DONT_BURST: the attack suite floods one token past 300 (apiTokenBurst).
# DONT_SLACK_*: the Slack app answers for one project, which the Slack
# attacks (attacktest.RunSlack) create under that name.
slack_project="it-slack-$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')"
slack_secret="$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
start_function api "$work/lambda/api/bootstrap" DONT_SPAWN_TIMEOUT=24h DONT_RATE=0.001 DONT_BURST=300 \
  DONT_SLACK_SIGNING_SECRET="$slack_secret" DONT_SLACK_PROJECT="$slack_project"
export DONT_IT_API="$fn_url" DONT_IT_SLACK_PROJECT="$slack_project" DONT_IT_SLACK_SIGNING_SECRET="$slack_secret"
# The passkey attacks (attacktest.RunPasskeys) need danger-full-access
# approved only with a passkey; the other attacks approve it with a token.
start_function api-passkey "$work/lambda/api/bootstrap" DONT_SPAWN_TIMEOUT=24h DONT_PASSKEY_REQUIRED_FROM=danger-full-access
export DONT_IT_API_PASSKEY="$fn_url"
start_function api-short "$work/lambda/api/bootstrap" DONT_SPAWN_TIMEOUT="$short" DONT_APPROVAL_TIMEOUT="$short"
export DONT_IT_API_SHORT="$fn_url"
start_function sweeper "$work/lambda/sweeper/bootstrap" DONT_SWEEP_QUEUE_URL="$sweep_queue"
export DONT_IT_SWEEPER="$fn_url"
start_function operator "$work/lambda/operator/bootstrap"
export DONT_IT_OPERATOR="$fn_url"
export DONT_IT_SHORT_TIMEOUT="$short" DONT_IT_RIE="$rie" DONT_IT_LAMBDA_DIR="$work/lambda" DONT_IT_WORK="$work"
export DONT_INTEGRATION=1

# ---- the suite
args=("$@")
if [[ -z "${DONT_IT_BENCH_SPAWNS:-}" ]]; then
  args=(-skip '^TestBench' "${args[@]}") # the benchmarks are bench/aws.sh's
fi
log "running the suite"
go test -count=1 -timeout "${DONT_IT_TIMEOUT:-15m}" -v ./localstack/integration/ "${args[@]}" | tee "$work/suite.out"
# A suite that skipped (a renamed guard, a missing variable) must not pass.
if grep -q -- '--- SKIP' "$work/suite.out"; then
  log "a test skipped: the integration run must run everything it selects"
  exit 1
fi
grep -q -- '--- PASS' "$work/suite.out" || { log "no test ran"; exit 1; }
log "passed"
