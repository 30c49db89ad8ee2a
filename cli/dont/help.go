package main

import (
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// commandHelp is what `dont <command> --help` adds to a command's one-line
// summary: two examples a person can type, and the exit codes where they
// decide what to do next. TestEveryCommandHasHelpWithTwoExamples holds
// every runnable command to it.
type commandHelp struct {
	examples [2]string
	exits    string
}

// help is keyed by the command's path after "dont".
var help = map[string]commandHelp{
	"init": {[2]string{"dont init", "DONT_PROJECT_DIR=~/proj dont init --no-passphrase"}, ""},
	"passphrase set": {[2]string{"dont passphrase set", "DONT_PROJECT_DIR=~/proj dont passphrase set"},
		"0 set; 1 the current passphrase was wrong (person-not-proven); 2 no person at a terminal (person-required), or the two entries differ"},
	"conclude": {[2]string{`dont conclude "water boils at 100 C at sea level"`, `dont conclude "the build is hermetic" --ref https://example.org/ci --confidence 0.8`}, ""},
	"define":   {[2]string{`dont define ex:boil --doc "the temperature at which vapour pressure equals ambient"`, `dont define ci:hermetic --doc "no network during the build"`}, ""},
	"trust": {[2]string{`dont trust claim:01HX… --reason "ITS-90 puts it at 99.97 C"`, `dont trust claim:01HX… --reason "the cited run used a cache" --request-id spawn:01HX…`},
		"0 doubted; 1 refused (a hedge such as \"might be wrong\" is not a reason); 3 no such entity or spawn"},
	"dismiss": {[2]string{"dont dismiss claim:01HX… --evidence https://example.org/bp", "dont dismiss claim:01HX… --evidence doi:10.1000/182 --request-id spawn:01HX…"},
		"0 verified; 1 refused (evidence must be a URI or CURIE); 3 no such entity or spawn"},
	"lock":   {[2]string{"dont lock claim:01HX…", `dont lock claim:01HX… --reason "settled by ITS-90" --yes`}, "0 locked; 1 declined at the prompt, or not verified; 2 --no-input without --yes"},
	"ignore": {[2]string{`dont ignore claim:01HX… --reason "out of scope for this release"`, `dont list --status stale --json | jq -r '.data.entities[].id' | dont ignore - --reason "superseded by the new spec" --yes`}, "0 set aside; 1 declined at the prompt; 2 --no-input without --yes"},
	"reopen": {[2]string{`dont reopen claim:01HX… --reason "the spec changed in v2"`, `dont reopen term:01HX… --reason "the definition missed vapour"`}, ""},
	"show":   {[2]string{"dont show claim:01HX…", "dont show claim:01HX… --history"}, "0 shown; 3 no such entity or spawn (not-found)"},
	"list":   {[2]string{"dont list", "dont list --status doubted"}, ""},
	"assume": {[2]string{"dont assume claim:01HX… --harness", "DONT_LLM_PROVIDER=openai DONT_LLM_MODEL=gpt-4o dont assume claim:01HX… --direct"},
		"0 a spawn_request (harness) or the verdict (direct); 3 no provider configured at a terminal (config-missing: add --harness, or configure one, see dont help config) or the provider failed"},
	"overlook": {[2]string{"dont overlook claim:01HX… --harness", "dont overlook claim:01HX… --direct"},
		"0 a spawn_request (harness) or the verdict (direct); 3 no provider configured at a terminal (config-missing) or the provider failed"},
	"guess": {[2]string{`dont guess "what is the boiling point of water at 2000 m" --harness`, `dont guess "which test is flaky" --n 5 --temperature 1.2 --direct`},
		"0 a spawn_request (harness) or the answers (direct); 3 no provider configured at a terminal (config-missing) or the provider failed"},
	"answer":           {[2]string{`dont answer spawn:01HX… --candidate "100 C" --candidate "99.97 C"`, `DONT_REQUEST_ID=spawn:01HX… dont answer spawn:01HX… --candidate "93 C"`}, "0 answered (a late or duplicate answer is 0 with a warning); 3 no such spawn"},
	"spawns":           {[2]string{"dont spawns --pending", "dont spawns --timed-out"}, ""},
	"hooks add":        {[2]string{"dont hooks add --url https://hooks.example.com/in --events approval.asked,approval.ended", "dont hooks add --url https://hooks.slack.com/services/T0/B0/x --events approval.asked --format slack --yes"}, "0 added (the secret is shown once); 2 a URL the policy refuses (hook-url-refused)"},
	"hooks list":       {[2]string{"dont hooks list", "dont hooks list --json"}, ""},
	"hooks remove":     {[2]string{"dont hooks remove hook:01HX…", "dont hooks remove hook:01HX… --yes"}, ""},
	"hooks test":       {[2]string{"dont hooks test hook:01HX…", "dont hooks test hook:01HX… --yes"}, ""},
	"hooks deliveries": {[2]string{"dont hooks deliveries hook:01HX…", "dont hooks deliveries hook:01HX… --limit 5"}, ""},
	"hooks deliver":    {[2]string{"dont hooks deliver", "dont hooks deliver --limit 100"}, ""},
	"spawns heartbeat": {[2]string{"dont spawns heartbeat spawn:01HX…", "dont spawns heartbeat spawn:01HX… --extend 2h"}, "0 moved, or left as it was with a warning (capped by spawn_max_lease, or the spawn already ended)"},
	"spawns run":       {[2]string{"dont assume claim:01HX… --harness --json | dont spawns run --agent claude-code", "dont spawns run --agent codex --watch --max-parallel 4"}, "0 every subagent resolved its spawn; 1 one did not (timed out, exited unresolved, failed); 2 bad input; 130 interrupted"},
	"spawns cancel":    {[2]string{"dont spawns cancel spawn:01HX…", `dont spawns cancel spawn:01HX… --reason "asked the wrong question" --yes`}, "0 cancelled (already resolved: 0 with a warning); 1 declined at the prompt; 2 --no-input without --yes"},
	"spawns manage":    {[2]string{"dont spawns manage --op list --view pending", "dont spawns manage --op show --request-id spawn:01HX…"}, ""},
	"sweep":            {[2]string{"dont sweep", "dont sweep --limit 100"}, ""},
	"sessions open":    {[2]string{"dont sessions open --tier read-only", `dont sessions open --tier workspace-write --name "build box"`}, ""},
	"sessions show":    {[2]string{"dont sessions show ses:01HX…", "dont sessions show $DONT_SESSION"}, "0 shown; 3 no such session"},
	"sessions list":    {[2]string{"dont sessions list", "dont sessions list --json | jq -r '.data.sessions[] | select(.open_questions > 0) | .session_id'"}, ""},
	"escalate": {[2]string{`dont escalate --session ses:01HX… --call c1 --to workspace-write --reason "writes build/" -- make install`, `dont escalate --session ses:01HX… --call c2 --to danger-full-access --reason "pushes the tag" --no-wait -- git push --tags`},
		"0 approved: run the call at the granted tier; 1 refused, timed out or cancelled: do not run it; 2 usage; 3 no such session"},
	"approvals list":    {[2]string{"dont approvals list --pending", "dont approvals list --session ses:01HX…"}, ""},
	"approvals inbox":   {[2]string{"dont approvals inbox", "dont approvals inbox --session ses:01HX… --endings 10"}, ""},
	"approvals show":    {[2]string{"dont approvals show apr:01HX…", "dont approvals show apr:01HX… --json"}, "0 shown; 3 no such request"},
	"approvals approve": {[2]string{"dont approvals approve apr:01HX…", "DONT_TOKEN=<approver token> dont approvals approve apr:01HX…"}, "0 answered (the first answer wins; a later one is 0 with the recorded verdict); 1 declined at the prompt, or a wrong approver passphrase (person-not-proven); 2 no person at a terminal (person-required) or no passphrase set (passphrase-not-set)"},
	"approvals refuse":  {[2]string{"dont approvals refuse apr:01HX…", `dont approvals refuse apr:01HX… --reason "not on the release branch"`}, "0 answered (the first answer wins); 1 declined at the prompt, or a wrong approver passphrase (person-not-proven); 2 no person at a terminal (person-required) or no passphrase set (passphrase-not-set)"},
	// The passkey ceremonies are the approvals page's (docs/approvals.md, "Passkeys"): a browser answers them.
	"passkeys register-begin":  {[2]string{"DONT_TOKEN=<approver token> dont passkeys register-begin", "dont passkeys register-begin --json"}, "0 the options; 3 passkeys-unavailable (no page origin: use the approvals page)"},
	"passkeys register-finish": {[2]string{`dont passkeys register-finish --challenge <challenge> --credential '{"id":…}'`, `DONT_TOKEN=<approver token> dont passkeys register-finish --challenge <challenge> --credential "$(cat cred.json)"`}, "0 registered; 1 passkey-invalid; 3 passkeys-unavailable"},
	"passkeys approve-begin":   {[2]string{"DONT_TOKEN=<approver token> dont passkeys approve-begin apr:01HX…", "dont passkeys approve-begin apr:01HX… --json"}, "0 the challenge; 1 passkey-required (no passkey registered); 3 passkeys-unavailable"},
	"approvals cancel":         {[2]string{"dont approvals cancel apr:01HX…", `dont approvals cancel apr:01HX… --reason "the build no longer needs it"`}, ""},
	"approvals wait":           {[2]string{"dont approvals wait apr:01HX…", "dont approvals wait apr:01HX… && make install"}, "0 approved: run the call at the granted tier; 1 refused, timed out or cancelled; 3 no such request"},
	"approvals frames":         {[2]string{"dont approvals frames --session ses:01HX…", "dont approvals frames --session ses:01HX… --after 12 --wait 20s"}, ""},
	"approvals sweep":          {[2]string{"dont approvals sweep", "dont approvals sweep --limit 100"}, ""},
	"approvals audit":          {[2]string{"dont approvals audit", "dont approvals audit --json"}, "0 every question has exactly one ending frame; 3 a finding (frame-log-inconsistent)"},
	"approvals watch":          {[2]string{"dont approvals watch --session ses:01HX…", "DONT_TOKEN=<approver token> DONT_ENDPOINT=http://127.0.0.1:8700 dont approvals watch --session ses:01HX…"}, ""},
	"tokens create":            {[2]string{"dont tokens create --role harness --name agent", "dont tokens create --role approver --name ada --yes"}, "0 created (shown once); 1 declined at the prompt, or a wrong approver passphrase (embedded, person-not-proven); 2 --no-input without --yes, or no person at a terminal (person-required, passphrase-not-set)"},
	"tokens list":              {[2]string{"dont tokens list", "dont tokens list --json"}, ""},
	"tokens manage":            {[2]string{"dont tokens manage --op list", "dont tokens manage --op revoke --id tok:01HX…"}, ""},
	"tokens revoke":            {[2]string{"dont tokens revoke tok:01HX…", "dont tokens revoke tok:01HX… --yes"}, "0 revoked; 1 declined at the prompt, or a wrong approver passphrase (embedded, person-not-proven); 2 --no-input without --yes, or no person at a terminal (person-required, passphrase-not-set)"},
	"tokens revoke-all":        {[2]string{"dont tokens revoke-all", "DONT_ENDPOINT=http://127.0.0.1:8700 DONT_TOKEN=<admin token> dont tokens revoke-all"}, "0 revoked; 1 declined at the prompt (--yes does not answer it: interactive only)"},
	"confirmations list":       {[2]string{"dont confirmations list", "dont confirmations list --all"}, ""},
	"confirmations show":       {[2]string{"dont confirmations show conf:01HX…", "dont confirmations show conf:01HX… --json"}, "0 shown; 3 no such held call"},
	"confirmations confirm":    {[2]string{"dont confirmations confirm conf:01HX…", "DONT_TOKEN=<approver token> dont confirmations confirm conf:01HX…"}, "0 the held call ran (its own result follows); 1 declined, or a wrong approver passphrase (person-not-proven); 2 no person at a terminal (person-required) or no passphrase set (passphrase-not-set)"},
	"confirmations refuse":     {[2]string{"dont confirmations refuse conf:01HX…", `dont confirmations refuse conf:01HX… --reason "not during the freeze"`}, ""},
	"tools":                    {[2]string{"dont tools", "dont --refresh tools --json"}, ""},
	"doctor":                   {[2]string{"dont doctor", "dont doctor --strict --full"}, "0 checked (violations are warnings); 3 the file is damaged (store-damaged), or with --strict: an invariant is broken or the store is readable by others"},
	"backup":                   {[2]string{"dont backup ~/backups/dont-$(date +%F).db", "DONT_PROJECT_DIR=~/proj dont backup /mnt/usb/proj.db"}, "0 written; 2 the file exists (backup-exists); 3 the store could not be read"},
	"restore":                  {[2]string{"dont restore ~/backups/dont-2026-12-01.db", "DONT_PROJECT_DIR=~/proj dont restore /mnt/usb/proj.db"}, "0 restored; 1 you answered no, or a wrong approver passphrase (person-not-proven); 2 no person at a terminal, or a harness signal (person-required); 3 the file is not a sound dont store (backup-invalid)"},
	"serve":                    {[2]string{"dont serve", "dont serve --addr 127.0.0.1:8700"}, ""},
	"mcp":                      {[2]string{"dont mcp", "DONT_PROJECT_DIR=~/proj DONT_AUTHOR=agent-7 dont mcp"}, ""},
	"version":                  {[2]string{"dont version", "dont version --json"}, ""},
	"completion":               {[2]string{"source <(dont completion bash)", "dont completion fish > ~/.config/fish/completions/dont.fish"}, ""},
	"login":                    {[2]string{"dont login https://dont.example.com", "dont login --profile ci http://127.0.0.1:8700"}, "0 stored; 1 the token is an approver's or admin's (login-token-too-powerful); 2 no endpoint or token, or http to a host that is not loopback; 3 the API refused the token or did not answer"},
	"logout":                   {[2]string{"dont logout", "dont logout --profile ci"}, ""},
	"whoami":                   {[2]string{"dont whoami", "dont whoami --profile ci --json"}, ""},
	"config show":              {[2]string{"dont config show", "dont config show --json"}, ""},
	"config trust":             {[2]string{"dont config trust", "DONT_PROJECT_DIR=~/proj dont config trust"}, "0 trusted; 1 you answered no (confirmation-declined); 2 no person at a terminal, or a harness signal (person-required)"},
	"approvals slack-link":     {[2]string{"DONT_TOKEN=<approver token> dont approvals slack-link", "dont approvals slack-link --json"}, "0 a code made; 1 not an approver token"},
}

// shortOverrides keep a summary to one line where the command's own file
// says more than one.
var shortOverrides = map[string]string{
	"doctor":  "Check the database file (SQLite's integrity check), the invariants and file modes (sweeps first); --strict exits 3 on any violation.",
	"restore": "Replace the whole store with a backup (checked first); the person's act, at the terminal with the approver passphrase.",
}

// addHelp adds to every command of the tree its examples, its exit codes
// and its one-line summary. The summaries are set now (help lists them);
// the examples and exit codes when the command is built (app.later), as
// only its own help shows them.
func (a *app) addHelp(root *cobra.Command) {
	var walk func(c *cobra.Command, path string)
	walk = func(c *cobra.Command, path string) {
		if s, ok := shortOverrides[path]; ok {
			if c.Long == "" {
				c.Long = c.Short
			}
			c.Short = s
		}
		if h, ok := help[path]; ok {
			a.later(c, func() {
				if c.Example == "" {
					c.Example = "  " + h.examples[0] + "\n  " + h.examples[1]
				}
				if h.exits != "" {
					long := c.Long
					if long == "" {
						long = c.Short
					}
					c.Long = long + "\n\nExit codes: " + h.exits + "."
				}
			})
		}
		for _, sub := range c.Commands() {
			if path == "" {
				walk(sub, sub.Name())
			} else {
				walk(sub, path+" "+sub.Name())
			}
		}
	}
	walk(root, "")
}

// markRequired puts "(required)" before the usage of a flag a call needs.
func markRequired(f *pflag.Flag) {
	if !strings.HasPrefix(f.Usage, "(required) ") {
		f.Usage = "(required) " + f.Usage
	}
}
