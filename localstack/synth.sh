#!/usr/bin/env bash
# Synthesize dont's CDK stack offline, from the repository root, with the
# CDK CLI pinned in localstack/package.json (installed here with npm ci).
# Fails if synthesis fails or produces no template.
#
#   bash localstack/synth.sh [extra cdk synth arguments]
#
# The functions' code comes from build/lambda/{api,sweeper,operator}/bootstrap. When
# those have not been built yet, placeholder assets are used so that the
# template can still be synthesized and checked (it is then not deployable;
# localstack/deploy.sh insists on real binaries).
#
# Environment: CDK_OUTDIR (default cdk.out), DONT_STACK_NAME (default Dont).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
out="${CDK_OUTDIR:-$root/cdk.out}"
stack="${DONT_STACK_NAME:-Dont}"

log() { printf 'synth: %s\n' "$*" >&2; }

command -v node >/dev/null || { log "node is required (the CDK CLI and the jsii runtime)"; exit 1; }
command -v go >/dev/null || { log "go is required (cdk.json runs go run ./infra)"; exit 1; }

if ! cmp -s "$here/package-lock.json" "$here/node_modules/.dont-lock" 2>/dev/null; then
  log "installing localstack/package.json with npm ci"
  (cd "$here" && npm ci --no-audit --no-fund --loglevel=error >&2)
  cp "$here/package-lock.json" "$here/node_modules/.dont-lock"
fi

context=(-c "dont:stackName=$stack")
placeholder=""
if [[ ! -x "$root/build/lambda/api/bootstrap" || ! -x "$root/build/lambda/sweeper/bootstrap" || ! -x "$root/build/lambda/operator/bootstrap" ]]; then
  placeholder="$(mktemp -d)"
  trap 'rm -rf "$placeholder"' EXIT
  for fn in api sweeper operator; do
    mkdir -p "$placeholder/$fn"
    printf '#!/bin/sh\necho "placeholder: build the %s function first" >&2\nexit 1\n' "$fn" >"$placeholder/$fn/bootstrap"
    chmod +x "$placeholder/$fn/bootstrap"
  done
  context+=(-c "dont:apiAssetDir=$placeholder/api" -c "dont:sweeperAssetDir=$placeholder/sweeper" -c "dont:operatorAssetDir=$placeholder/operator")
  log "build/lambda/{api,sweeper,operator}/bootstrap not built: synthesizing with placeholder assets"
fi

export CDK_DISABLE_VERSION_CHECK=1 CDK_DISABLE_CLI_TELEMETRY=true
cd "$root"
"$here/node_modules/.bin/cdk" synth --quiet --no-notices --output "$out" "${context[@]}" "$@"

template="$out/$stack.template.json"
[[ -s "$template" ]] || { log "no template at $template"; exit 1; }
node -e '
const t = require(process.argv[1]);
const counts = {};
for (const r of Object.values(t.Resources || {})) counts[r.Type] = (counts[r.Type] || 0) + 1;
const total = Object.values(counts).reduce((a, b) => a + b, 0);
if (!counts["AWS::DynamoDB::Table"] || !counts["AWS::Lambda::Function"]) {
  console.error("synth: template lacks the table or the functions");
  process.exit(1);
}
console.error(`synth: ${process.argv[1]}: ${total} resources, outputs ${Object.keys(t.Outputs || {}).join(", ")}`);
' "$template"
