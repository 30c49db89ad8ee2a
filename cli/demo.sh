#!/usr/bin/env bash
# A short real session on the embedded default (SQLite in .dont/, no server):
# init -> conclude -> assume -> dismiss with the request id -> spawns.
# Builds bin/dont first (README.md, Install), printing each package as it compiles (a cold build
# cache compiles the dependencies too, which takes a minute or two).
# Pass a folder to keep the project; default: a temp folder.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
echo "building bin/dont from cli/dont, as README.md installs it (go build -v: one line per package compiled)"
start=$SECONDS
CGO_ENABLED=0 go build -v -o "$repo/bin/dont" "$repo/cli/dont" 2>&1 | sed -u 's/^/  compiled /'
dont="$repo/bin/dont"
echo "built bin/dont $("$dont" version --json | python3 -c "import json,sys; print(json.load(sys.stdin)['data']['version'])") in $((SECONDS - start)) s"
echo
proj="${1:-$(mktemp -d)}"
mkdir -p "$proj" && cd "$proj"
field() { python3 -c "import json,sys; print(json.load(sys.stdin)['data']['$1'])"; }

echo "\$ dont init --no-passphrase   # nobody answers or mints tokens in this demo"; "$dont" init --no-passphrase --json >/dev/null && echo "  project at $proj/.dont"
echo '$ dont conclude "water boils at 100 C at sea level"'
id=$("$dont" conclude "water boils at 100 C at sea level" --json | field id); echo "  $id"
echo "\$ dont assume $id --harness      # a spawn_request for a clean-context subagent"
rid=$("$dont" assume "$id" --harness --json | field request_id); echo "  request $rid"
echo "\$ dont dismiss $id --evidence https://en.wikipedia.org/wiki/Boiling_point --request-id $rid"
"$dont" dismiss "$id" --evidence https://en.wikipedia.org/wiki/Boiling_point --request-id "$rid" --json | field status | sed 's/^/  status: /'
echo "\$ dont spawns --all"
"$dont" spawns --all
