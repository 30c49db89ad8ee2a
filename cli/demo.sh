#!/usr/bin/env bash
# A short real session on the embedded default (SQLite in .dont/, no server):
# init -> conclude -> assume -> dismiss with the request id -> spawns.
# Builds bin/dont first. Pass a folder to keep the project; default: a temp folder.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
go build -o "$repo/bin/dont" "$repo/cli/dont"
dont="$repo/bin/dont"
proj="${1:-$(mktemp -d)}"
mkdir -p "$proj" && cd "$proj"
field() { python3 -c "import json,sys; print(json.load(sys.stdin)['data']['$1'])"; }

echo "\$ dont init"; "$dont" init --json >/dev/null && echo "  project at $proj/.dont"
echo '$ dont conclude "water boils at 100 C at sea level" --json'
id=$("$dont" conclude "water boils at 100 C at sea level" --json | field id); echo "  $id"
echo "\$ dont assume $id --json        # harness mode: a spawn_request for a clean-context subagent"
rid=$("$dont" assume "$id" --json | field request_id); echo "  request $rid"
echo "\$ dont dismiss $id --evidence https://en.wikipedia.org/wiki/Boiling_point --request-id $rid --json"
"$dont" dismiss "$id" --evidence https://en.wikipedia.org/wiki/Boiling_point --request-id "$rid" --json | field status | sed 's/^/  status: /'
echo "\$ dont spawns --all --json"
"$dont" spawns --all --json
