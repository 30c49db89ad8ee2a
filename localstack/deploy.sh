#!/usr/bin/env bash
# Deploy dont's CDK stack into a running LocalStack with cdklocal (pinned in
# localstack/package.json), then print its outputs.
#
#   docker compose -f localstack/docker-compose.yml up -d --wait
#   bash localstack/deploy.sh            # bootstrap + deploy, print outputs
#   eval "$(bash localstack/deploy.sh env)"   # exports from the last deploy
#   bash localstack/deploy.sh destroy
#
# Builds the three functions (build/lambda/{api,sweeper,operator}/bootstrap,
# localstack/build-functions.sh) for the Docker host's architecture when
# they are missing; binaries already built decide the functions'
# architecture (arm64 or x86_64), with a warning when it is not the host's
# (LocalStack would then run them under emulation).
#
# Environment:
#   AWS_ENDPOINT_URL   LocalStack edge URL (default http://localhost:4566)
#   AWS_ENDPOINT_URL_S3  cdklocal's S3 endpoint (default: LocalStack's S3
#                      virtual host on the edge port,
#                      http://s3.localhost.localstack.cloud:PORT)
#   AWS_REGION         region (default us-east-1)
#   DONT_STACK_NAME    stack name (default Dont)
#   DONT_API_FRONT     httpApi or functionUrl (default: httpApi when this
#                      LocalStack offers API Gateway v2, else functionUrl)
#   DONT_LOCALSTACK_DIR  where outputs are written (default .dont-localstack
#                      under the system temp directory)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
endpoint="${AWS_ENDPOINT_URL:-http://localhost:4566}"
endpoint="${endpoint%/}"
# cdklocal needs an S3 endpoint with .s3. in its host; LocalStack serves
# one on every edge port. Derived, so that the exports of `env` (which set
# AWS_ENDPOINT_URL) never stop a later destroy or env.
port="${endpoint##*:}"
[[ "$port" =~ ^[0-9]+$ ]] || port=4566
s3_endpoint="${AWS_ENDPOINT_URL_S3:-http://s3.localhost.localstack.cloud:$port}"
region="${AWS_REGION:-us-east-1}"
stack="${DONT_STACK_NAME:-Dont}"
state="${DONT_LOCALSTACK_DIR:-${TMPDIR:-/tmp}/dont-localstack}"
outputs="$state/$stack.outputs.json"
cmd="${1:-deploy}"

log() { printf 'deploy: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

print_env() {
  [[ -s "$outputs" ]] || die "no outputs at $outputs: run deploy first"
  node -e '
const [file, stack, endpoint, region, s3] = process.argv.slice(1);
const o = require(file)[stack] || {};
const q = (v) => "\x27" + String(v ?? "").replace(/\x27/g, "\x27\\\x27\x27") + "\x27";
// CloudFormation gives an HTTP API the URL it would have on AWS (https, port
// 443); LocalStack serves it as a virtual host on its edge port.
let api = String(o.ApiUrl ?? "");
const m = api.match(/^https:\/\/([a-z0-9]+)\.execute-api\.[^/]+\.amazonaws\.com(\/.*)?$/);
if (m) api = `http://${m[1]}.execute-api.localhost.localstack.cloud:${new URL(endpoint).port || 4566}${m[2] || "/"}`;
console.log(`export AWS_ENDPOINT_URL=${q(endpoint)} AWS_ENDPOINT_URL_S3=${q(s3)} AWS_REGION=${q(region)}`);
console.log(`export DONT_API_URL=${q(api)} DONT_TABLE=${q(o.TableName)} DONT_TIMEOUT_QUEUE_URL=${q(o.TimeoutQueueUrl)}`);
console.log(`export DONT_API_FUNCTION=${q(o.ApiFunctionName)} DONT_SWEEPER_FUNCTION=${q(o.SweeperFunctionName)} DONT_OPERATOR_FUNCTION=${q(o.OperatorFunctionName)}`);
' "$outputs" "$stack" "$endpoint" "$region" "$s3_endpoint"
}

if [[ "$cmd" == env ]]; then
  print_env
  exit 0
fi

command -v node >/dev/null || die "node is required (cdklocal)"
command -v go >/dev/null || die "go is required (cdk.json runs go run ./infra)"
command -v curl >/dev/null || die "curl is required"

health="$(curl -fsS "$endpoint/_localstack/health" 2>/dev/null)" ||
  die "no LocalStack at $endpoint: start it with 'docker compose -f localstack/docker-compose.yml up -d --wait' (see localstack/README.md)"

if ! cmp -s "$here/package-lock.json" "$here/node_modules/.dont-lock" 2>/dev/null; then
  log "installing localstack/package.json with npm ci"
  (cd "$here" && npm ci --no-audit --no-fund --loglevel=error >&2)
  cp "$here/package-lock.json" "$here/node_modules/.dont-lock"
fi

export AWS_REGION="$region" AWS_DEFAULT_REGION="$region"
export AWS_ENVAR_ALLOWLIST="AWS_REGION,AWS_DEFAULT_REGION"
export AWS_ACCESS_KEY_ID="${AWS_ACCESS_KEY_ID:-test}" AWS_SECRET_ACCESS_KEY="${AWS_SECRET_ACCESS_KEY:-test}"
export AWS_ENDPOINT_URL="$endpoint" AWS_ENDPOINT_URL_S3="$s3_endpoint"
export CDK_DISABLE_VERSION_CHECK=1 CDK_DISABLE_CLI_TELEMETRY=true
cdklocal="$here/node_modules/.bin/cdklocal"
cd "$root"

if [[ "$cmd" == destroy ]]; then
  "$cdklocal" destroy --force --no-notices -c "dont:stackName=$stack" "$stack"
  rm -f "$outputs"
  exit 0
fi
[[ "$cmd" == deploy ]] || die "usage: $0 [deploy|env|destroy]"

# The functions' architecture follows the binaries; missing ones are built
# for the Docker host's (LocalStack runs Lambda containers on it).
host_arch="$( (docker info --format '{{.Architecture}}' 2>/dev/null || uname -m) | head -1)"
case "$host_arch" in
  aarch64 | arm64) host_arch=arm64 ;;
  *) host_arch=x86_64 ;;
esac
for fn in api sweeper operator; do
  if [[ ! -x "$root/build/lambda/$fn/bootstrap" ]]; then
    log "building the functions for the Docker host ($host_arch)"
    LAMBDA_ARCH="$host_arch" bash "$here/build-functions.sh" >&2
    break
  fi
done
arch=""
for fn in api sweeper operator; do
  bin="$root/build/lambda/$fn/bootstrap"
  goarch="$(go version -m "$bin" 2>/dev/null | sed -n 's/^[[:space:]]*build[[:space:]]*GOARCH=//p')"
  case "$goarch" in
    arm64) a=arm64 ;;
    amd64) a=x86_64 ;;
    *) die "$bin: cannot tell its GOARCH (got '$goarch'); rebuild with: LAMBDA_ARCH=$host_arch bash localstack/build-functions.sh" ;;
  esac
  [[ -z "$arch" || "$arch" == "$a" ]] || die "the function binaries are built for different architectures; rebuild with: LAMBDA_ARCH=$host_arch bash localstack/build-functions.sh"
  arch="$a"
done
if [[ "$arch" != "$host_arch" ]]; then
  log "warning: the functions are built for $arch but the Docker host is $host_arch: LocalStack will emulate them (slow);"
  log "  rebuild with: LAMBDA_ARCH=$host_arch bash localstack/build-functions.sh"
fi

front="${DONT_API_FRONT:-}"
if [[ -z "$front" ]]; then
  front="$(node -e '
const s = (JSON.parse(process.argv[1]).services || {}).apigatewayv2;
console.log(s && !["disabled", "error"].includes(s) ? "httpApi" : "functionUrl");
' "$health")"
fi
log "LocalStack at $endpoint, region $region; functions $arch; API front $front"

mkdir -p "$state"
# No pre-warmed table in LocalStack: warm throughput is an AWS charge.
context=(-c "dont:stackName=$stack" -c "dont:lambdaArch=$arch" -c "dont:apiFront=$front" -c "dont:warmWrites=0")
"$cdklocal" bootstrap --no-notices "${context[@]}" >&2
"$cdklocal" deploy "$stack" --require-approval never --no-notices \
  --outputs-file "$outputs" "${context[@]}" >&2

log "outputs ($outputs):"
node -e '
const [file, stack] = process.argv.slice(1);
for (const [k, v] of Object.entries(require(file)[stack] || {})) console.error(`  ${k} = ${v}`);
' "$outputs" "$stack"
print_env
