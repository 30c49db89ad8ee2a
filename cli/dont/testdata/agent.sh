#!/usr/bin/env bash
# A scripted subagent for the tests of `dont spawns run` (spawnsrun_test.go):
# it reads the prompt on stdin, finds the claim in it, reads the claim with
# `dont show` and resolves the spawn with what it was given (DONT_ENDPOINT,
# DONT_TOKEN, DONT_REQUEST_ID). AGENT_MODE picks a behaviour; AGENT_LOG is
# a file it appends to, one "key value" a line.
set -u
log() { [ -n "${AGENT_LOG:-}" ] && printf '%s\n' "$*" >>"$AGENT_LOG"; return 0; }
prompt="$(cat)"
id="$(printf '%s' "$prompt" | grep -o 'claim:[0-9A-Z]\{26\}' | head -n 1)"
log "started $$"
log "begin $(date +%s%N)"
trap 'log "end $(date +%s%N)"' EXIT
log "entity $id"
env | sort | sed 's/^/env /' >>"${AGENT_LOG:-/dev/null}"
"$DONT_BIN" show "$id" --json >/dev/null
log "show $?"
resolve() {
  "$DONT_BIN" dismiss "$id" --evidence https://example.org/boiling-point --request-id "$DONT_REQUEST_ID" --json >/dev/null
  log "dismiss $?"
}
case "${AGENT_MODE:-ok}" in
ok) resolve ;;
hang)
  sleep 1000 &
  log "child $!"
  wait
  ;;
slow)
  sleep "${AGENT_SLEEP:-3}"
  resolve
  ;;
forbidden)
  out="$("$DONT_BIN" lock "$id" --yes --reason "final" --json)"
  log "lock $? $(printf '%s' "$out" | grep -o '"code":"[a-z-]*"' | head -n 1)"
  out="$("$DONT_BIN" tokens create --role admin --yes --json)"
  log "tokens-create $? $(printf '%s' "$out" | grep -o '"code":"[a-z-]*"' | head -n 1)"
  resolve
  ;;
exit) exit 0 ;;
fail) exit 3 ;;
esac
