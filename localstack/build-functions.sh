#!/usr/bin/env bash
# Build dont's three Lambda functions as provided.al2023 bootstraps:
#
#   build/lambda/api/bootstrap       (functions/api)
#   build/lambda/sweeper/bootstrap   (functions/sweeper)
#   build/lambda/operator/bootstrap  (functions/operator)
#
# Static (CGO_ENABLED=0), GOOS=linux, GOARCH=${LAMBDA_ARCH:-arm64}, with
# -tags lambda.norpc (no net/rpc: the custom runtime only speaks the
# Runtime API) and stripped symbol tables. The CDK stack reads these
# directories (infra/stack: DefaultAPIAssetDir, DefaultSweeperAssetDir,
# DefaultOperatorAssetDir).
#
#   bash localstack/build-functions.sh                 # arm64, for AWS
#   LAMBDA_ARCH=amd64 bash localstack/build-functions.sh
#   DONT_LAMBDA_OUT=/tmp/x bash localstack/build-functions.sh   # elsewhere
#
# LAMBDA_ARCH accepts Go's names (arm64, amd64) and Lambda's (x86_64).
# Prints one line per function: its path and size in bytes.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
out="${DONT_LAMBDA_OUT:-$root/build/lambda}"
arch="${LAMBDA_ARCH:-arm64}"
case "$arch" in
  x86_64) arch=amd64 ;;
  aarch64) arch=arm64 ;;
esac
case "$arch" in
  arm64 | amd64) ;;
  *) echo "build-functions: LAMBDA_ARCH must be arm64 or amd64 (x86_64), not $arch" >&2; exit 2 ;;
esac

cd "$root"
for fn in api sweeper operator; do
  mkdir -p "$out/$fn"
  CGO_ENABLED=0 GOOS=linux GOARCH="$arch" GOFLAGS="${GOFLAGS:--buildvcs=false}" \
    go build -tags lambda.norpc -trimpath -ldflags='-s -w' -o "$out/$fn/bootstrap" "./functions/$fn"
  printf '%s %s\n' "$out/$fn/bootstrap" "$(wc -c <"$out/$fn/bootstrap" | tr -d ' ')"
done
