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
log "pwd $(pwd)"
if [ "${AGENT_MODE:-ok}" != silent ]; then
  "$DONT_BIN" show "$id" --json >/dev/null
  log "show $?"
fi
code() { grep -o '"code":"[a-z-]*"' | head -n 1; }
# bare runs dont without any variable the runner set: what the agent's own
# dont finds from its working directory alone.
bare() { env -u DONT_ENDPOINT -u DONT_TOKEN -u DONT_REQUEST_ID -u DONT_HARNESS -u DONT_ENTITY_ID -u DONT_ALLOWED_TOOLS "$DONT_BIN" "$@"; }
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
  # Works for AGENT_SLEEP seconds, saying so on stdout every 0.1 s: the
  # progress that earns it heartbeats.
  n="$(awk -v s="${AGENT_SLEEP:-3}" 'BEGIN { print int(s * 10) }')"
  for _ in $(seq "$n"); do
    echo "working"
    sleep 0.1
  done
  resolve
  ;;
forbidden)
  out="$("$DONT_BIN" lock "$id" --yes --reason "final" --json)"
  log "lock $? $(printf '%s' "$out" | grep -o '"code":"[a-z-]*"' | head -n 1)"
  out="$("$DONT_BIN" tokens create --role admin --yes --json)"
  log "tokens-create $? $(printf '%s' "$out" | grep -o '"code":"[a-z-]*"' | head -n 1)"
  resolve
  ;;
silent)
  # Alive and silent: no output, no call.
  sleep 1000 </dev/null >/dev/null 2>&1 &
  log "child $!"
  wait
  ;;
selfbeat)
  # Keeps its own spawn alive with its callback token, to the lease.
  while :; do
    "$DONT_BIN" spawns heartbeat "$DONT_REQUEST_ID" --extend 720h --json >/dev/null 2>&1
    log "selfbeat $?"
    sleep 0.2
  done
  ;;
escape)
  # Leaves its process group (setsid) and the runner's tree (a double
  # fork: the subshell exits at once), then resolves and exits.
  setsid sleep 1000 </dev/null >/dev/null 2>&1 &
  log "escaped $!"
  (
    setsid sleep 1000 </dev/null >/dev/null 2>&1 &
    log "daemon $!"
  )
  resolve
  ;;
nostore)
  out="$(bare tokens create --role admin --name escaped --yes --json 2>/dev/null)"
  log "bare-tokens-create $? $(printf '%s' "$out" | code)"
  out="$(bare show "$id" --json 2>/dev/null)"
  log "bare-show $? $(printf '%s' "$out" | code)"
  resolve
  ;;
exit) exit 0 ;;
fail) exit 3 ;;
esac
