#!/usr/bin/env bash
# Numbers for dont's AWS path, printed as Markdown tables (docs/aws.md
# quotes them):
#
#   1. Lambda bootstrap sizes, arm64 (what AWS runs) and amd64.
#   2. Start-up of each function under the Lambda Runtime Interface
#      Emulator, against the local stand-ins (or AWS_ENDPOINT_URL).
#   3. Timeout lag, from a spawn's expires_at to its committed
#      spawn_timeout, over DONT_IT_BENCH_SPAWNS spawns (default 200) per
#      case: real delayed SQS messages, the sweeper function driven by a
#      Lambda-like poller loop, DynamoDB stand-in. Goal: p99 < 2 s.
#   4. The api bootstrap's peak resident memory over the lifecycles of
#      TestBenchLambdaCPU, which fails above half of the 128 MB the stack
#      gives the api.
#
#   bash bench/aws.sh
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/dont-bench-aws.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT

echo "## Lambda bootstrap sizes (CGO_ENABLED=0, -tags lambda.norpc, -trimpath, -ldflags '-s -w')"
echo
echo "| function | arm64 (provided.al2023) | amd64 |"
echo "| --- | --- | --- |"
for arch in arm64 amd64; do
  DONT_LAMBDA_OUT="$tmp/$arch" LAMBDA_ARCH="$arch" bash localstack/build-functions.sh >"$tmp/$arch.sizes"
done
for fn in api sweeper operator; do
  a="$(awk -v f="/$fn/bootstrap" 'index($1, f) { print $2 }' "$tmp/arm64.sizes")"
  b="$(awk -v f="/$fn/bootstrap" 'index($1, f) { print $2 }' "$tmp/amd64.sizes")"
  printf '| %s | %s bytes (%.1f MiB) | %s bytes (%.1f MiB) |\n' "$fn" "$a" "$(echo "$a/1048576" | bc -l)" "$b" "$(echo "$b/1048576" | bc -l)"
done
echo

DONT_IT_BENCH_SPAWNS="${DONT_IT_BENCH_SPAWNS:-200}" bash localstack/integration.sh -run '^TestBench' >"$tmp/run.log" 2>&1 || {
  cat "$tmp/run.log" >&2
  exit 1
}
echo "## Start-up under aws-lambda-rie ($(go env GOARCH), $(nproc) CPUs)"
echo
sed -n 's/^BENCH //p' "$tmp/run.log" | awk 'NR <= 4'
echo
echo "## Timeout lag: expires_at -> committed spawn_timeout (SQS stand-in fauxqs, DynamoDB stand-in)"
echo
sed -n 's/^BENCH //p' "$tmp/run.log" | awk 'NR > 4'
echo
echo "## Peak resident memory of the api bootstrap (TestBenchLambdaCPU; it fails above half the deployed size)"
echo
sed -n 's/^MEM | //p' "$tmp/run.log"
