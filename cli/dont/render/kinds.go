package render

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/visible"
)

// kinds is the rendering of each envelope kind; a kind missing here is
// shown field by field (generic). TestEveryKindHasAGoldenFile holds every
// constant of internal/envelope/kinds.go to a golden file.
var kinds = map[string]func(*printer, doc){
	"claim":                      entity,
	"term":                       entity,
	envelope.KindList:            entityList,
	envelope.KindSpawnRequest:    spawnRequest,
	envelope.KindSpawn:           spawnRecord,
	envelope.KindSpawns:          spawnList,
	envelope.KindSpawnCancel:     spawnCancel,
	envelope.KindAnswer:          answer,
	envelope.KindSweep:           sweep,
	envelope.KindSession:         session,
	envelope.KindSessions:        sessionList,
	envelope.KindApproval:        approval,
	envelope.KindApprovals:       approvalList,
	envelope.KindEscalation:      escalation,
	envelope.KindFrames:          frames,
	envelope.KindFrame:           frame,
	envelope.KindApprovalsSweep:  approvalsSweep,
	envelope.KindApprovalsAudit:  approvalsAudit,
	envelope.KindToken:           tokenView,
	envelope.KindTokens:          tokenList,
	envelope.KindTokensRevoked:   tokensRevoked,
	envelope.KindConfirmation:    confirmation,
	envelope.KindConfirmations:   confirmationList,
	envelope.KindTools:           toolList,
	envelope.KindHealth:          health,
	envelope.KindInit:            initialized,
	envelope.KindPassphrase:      passphraseSet,
	envelope.KindDoctor:          doctor,
	envelope.KindProjectSettings: projectSettings,
	envelope.KindVersion:         version,
	envelope.KindApprovalsInbox:  approvalsInbox,
	envelope.KindSecretRotation:  secretRotation,
	envelope.KindSpawnHeartbeat:  spawnHeartbeat,
	envelope.KindSpawnRun:        spawnRun,
	envelope.KindHook:            hook,
	envelope.KindHooks:           hookList,
	envelope.KindHookTest:        hookTest,
	envelope.KindHookDeliveries:  hookDeliveries,
	envelope.KindHookDeliver:     hookDeliver,
	envelope.KindConfig:          configView,
	envelope.KindBackup:          backupDone,
	envelope.KindRestore:         restoreDone,
	envelope.KindHarnessInstall:  harnessInstalled,
	envelope.KindWhoAmI:          whoami,
	envelope.KindLogin:           login,
	envelope.KindSlackLinkCode:   slackLinkCode,
}

// Claims and terms.

func entity(p *printer, d doc) {
	p.line("%s  %s", p.st.Bold(d.s("id")), p.st.Status(d.s("status")))
	conf := ""
	if d.has("confidence") {
		conf = d.s("confidence")
	}
	p.fields(
		"statement", d.s("statement"),
		"term", d.s("curie"),
		"definition", d.s("definition"),
		"atoms", strings.Join(d.strs("atoms"), "; "),
		"refs", strings.Join(d.strs("refs"), ", "),
		"depends on", strings.Join(d.strs("depends_on"), ", "),
		"confidence", conf,
		"author", d.s("author"),
		"created", p.at(d, "created_at"),
		"updated", p.at(d, "updated_at"),
		"last spawn", d.s("last_spawn"),
		"resolution", resolution(d.m("resolution")),
	)
	history := d.list("history")
	if len(history) == 0 {
		return
	}
	p.line("")
	p.line("history (%s):", Plural(len(history), "event", "events"))
	rows := make([][]cell, 0, len(history))
	for _, h := range history {
		change := ""
		if h.s("to") != "" && h.s("to") != h.s("from") {
			change = orDash(h.s("from")) + " → " + h.s("to")
		}
		rows = append(rows, []cell{c(p.clock(timeOf(h, "at"))), c(h.s("kind")), c(orDash(change)), c(h.s("author")), c(eventDetail(h))})
	}
	p.tableWhole("  ", []string{"AT", "EVENT", "CHANGE", "BY", "DETAIL"}, rows)
}

func timeOf(d doc, k string) time.Time { t, _ := d.time(k); return t }

// eventDetail is what an event carries besides its change: the reason or
// evidence, the spawn it belongs to, how that spawn ended.
func eventDetail(h doc) string {
	var parts []string
	if r := h.s("reason"); r != "" {
		parts = append(parts, "reason: "+r)
	}
	if ev := h.strs("evidence"); len(ev) > 0 {
		parts = append(parts, "evidence: "+strings.Join(ev, ", "))
	}
	if o := h.s("outcome"); o != "" {
		parts = append(parts, outcomeWords(o))
	}
	if k := h.m("detail").s("request_kind"); k != "" {
		parts = append(parts, k)
	}
	if id := h.s("request_id"); id != "" {
		parts = append(parts, id)
	}
	return strings.Join(parts, " · ")
}

// outcomeWords says how a spawn ended.
func outcomeWords(o string) string {
	switch o {
	case "callback-applied":
		return "resolved by its callback"
	case "timeout-restored":
		return "timed out, status restored"
	case "failed":
		return "failed: the provider gave nothing usable"
	case "cancelled":
		return "cancelled"
	}
	return o
}

func resolution(r doc) string {
	if len(r) == 0 {
		return ""
	}
	if r.b("applied") {
		return "this call resolved " + r.s("request_id")
	}
	return r.s("request_id") + " was already " + outcomeWords(r.s("outcome")) + "; this call changed nothing"
}

func entityList(p *printer, d doc) {
	rows := [][]cell{}
	for _, e := range d.list("entities") {
		text := e.s("statement")
		if e.s("kind") == "term" {
			text = e.s("curie") + " — " + e.s("definition")
		}
		rows = append(rows, []cell{c(e.s("id")), {text: e.s("status"), style: p.st.Status}, c(p.age(timeOf(e, "updated_at"))), c(text)})
	}
	if len(rows) > 0 {
		p.table("", []string{"ID", "STATUS", "UPDATED", "STATEMENT"}, rows)
	}
	p.line("%s", Plural(d.n("count"), "entity", "entities"))
}

// Spawns.

func spawnRequest(p *printer, d doc) {
	ctx, cb := d.m("context"), d.m("callback")
	about := d.s("entity_id")
	if about == "" {
		about = "a question"
	}
	p.line("%s  %s %s, %s mode", p.st.Bold(d.s("request_id")), d.s("request_kind"), about, d.s("mode"))
	limit := ""
	if ctx.has("max_tool_calls") {
		limit = fmt.Sprintf(" (at most %d tool calls)", ctx.n("max_tool_calls"))
	}
	p.fields(
		"issued", p.at(d, "issued_at"),
		"expires", p.at(d, "expires_at"),
		"callback", strings.Join(cb.strs("actions"), " or ")+" with --request-id "+cb.s("request_id"),
		"token", cb.s("token"),
		"allowed", strings.Join(ctx.strs("allowed_tools"), ", ")+limit,
	)
	p.line("")
	p.line("%s", p.st.Dim("prompt for a clean-context subagent:"))
	p.line("%s", strings.TrimRight(ctx.text("prompt"), "\n"))
}

func spawnState(s doc) string {
	if s.s("state") == "pending" {
		return "pending"
	}
	return outcomeWords(s.s("outcome"))
}

// shortState is a spawn's state in a table column.
func shortState(s doc) string {
	switch {
	case s.s("state") == "pending":
		return "pending"
	case s.s("outcome") == "callback-applied":
		return "resolved"
	case s.s("outcome") == "timeout-restored":
		return "timed out"
	}
	return orDash(s.s("outcome"))
}

func spawnRecord(p *printer, d doc) {
	if d.has("tally") || d.has("candidates") {
		answer(p, d)
		return
	}
	about := d.s("entity_id")
	if about == "" {
		about = "“" + d.s("question") + "”"
	}
	p.line("%s  %s %s: %s", p.st.Bold(d.s("request_id")), d.s("request_kind"), about, spawnState(d))
	p.fields(
		"mode", d.s("mode"),
		"status before", d.s("pre_status"),
		"issued", p.at(d, "issued_at"),
		"expires", p.at(d, "expires_at"),
		"resolved", p.at(d, "resolved_at"),
	)
}

var viewWords = map[string]string{"pending": "pending", "timed-out": "timed out", "all": "all"}

func spawnList(p *printer, d doc) {
	rows := [][]cell{}
	for _, s := range d.list("spawns") {
		about := s.s("entity_id")
		if about == "" {
			about = "“" + s.s("question") + "”"
		}
		state := shortState(s)
		if state == "pending" {
			state = "expires " + p.age(timeOf(s, "expires_at"))
		}
		rows = append(rows, []cell{c(s.s("request_id")), c(s.s("request_kind")), c(p.age(timeOf(s, "issued_at"))), c(state), c(about)})
	}
	if len(rows) > 0 {
		p.table("", []string{"REQUEST", "KIND", "ISSUED", "STATE", "ABOUT"}, rows)
	}
	view := viewWords[d.s("view")]
	if view == "" {
		view = d.s("view")
	}
	p.line("%s (%s)", Plural(d.n("count"), "spawn", "spawns"), view)
}

func spawnCancel(p *printer, d doc) {
	if !d.b("applied") {
		p.line("%s was already resolved (%s); nothing changed", d.s("request_id"), outcomeWords(d.s("outcome")))
		return
	}
	p.line("%s cancelled", d.s("request_id"))
	if d.s("entity_id") != "" {
		verb := "stays"
		if d.b("restored") {
			verb = "is back to"
		}
		p.line("  %s %s %s", d.s("entity_id"), verb, p.st.Status(d.s("status")))
	}
}

func answer(p *printer, d doc) {
	p.line("%s answered with %s", p.st.Bold(d.s("request_id")), Plural(d.n("candidates"), "candidate", "candidates"))
	if r := d.m("resolution"); len(r) > 0 && !r.b("applied") {
		p.line("  %s", resolution(r))
	}
	rows := [][]cell{}
	for _, t := range d.list("tally") {
		rows = append(rows, []cell{c(t.s("count")), c(t.s("answer"))})
	}
	if len(rows) > 0 {
		p.table("  ", []string{"VOTES", "ANSWER"}, rows)
	}
	if cl := d.m("claim"); len(cl) > 0 {
		p.line("the most agreed answer is now %s (%s): %s", cl.s("id"), p.st.Status(cl.s("status")), cl.s("statement"))
	}
}

func sweep(p *printer, d doc) {
	timedOut, lost := d.list("timed_out"), d.list("lost")
	p.line("swept: %s timed out, %s already resolved", Plural(len(timedOut), "spawn", "spawns"), Plural(len(lost), "spawn", "spawns"))
	rows := [][]cell{}
	for _, t := range append(timedOut, lost...) {
		rows = append(rows, []cell{c(t.s("request_id")), c(outcomeWords(t.s("outcome"))), c(orDash(t.s("entity_id"))), {text: orDash(t.s("status")), style: p.st.Status}})
	}
	if len(rows) > 0 {
		p.table("  ", []string{"REQUEST", "OUTCOME", "ENTITY", "NOW"}, rows)
	}
	if a := d.m("approvals"); len(a) > 0 {
		approvalsSweep(p, a)
	}
}

// Sessions and escalations.

func watched(p *printer, d doc) string {
	last, ok := d.time("last_read_at")
	switch {
	case d.b("live_subscriber"):
		return "yes, last read " + p.age(last)
	case ok:
		return "no, last read " + p.age(last)
	}
	return "no"
}

func session(p *printer, d doc) {
	p.line("%s  %s", p.st.Bold(d.s("session_id")), d.s("name"))
	opened := p.at(d, "opened_at")
	if by := d.s("opened_by"); by != "" {
		opened = "by " + by + ", " + opened
	}
	p.fields(
		"tier", d.s("tier")+" (every call's default; an escalation widens one call only)",
		"opened", opened,
		"watched", watched(p, d)+" (a question is asked only while a person watches)",
	)
}

func sessionList(p *printer, d doc) {
	rows := [][]cell{}
	for _, s := range d.list("sessions") {
		open := s.n("open_questions")
		q := cell{text: fmt.Sprint(open)}
		if open > 0 {
			q.style = p.st.Yellow
		}
		rows = append(rows, []cell{c(s.s("session_id")), c(s.s("tier")), q, c(watched(p, s)), c(p.age(timeOf(s, "opened_at"))), c(orDash(s.s("opened_by"))), c(orDash(s.s("name")))})
	}
	if len(rows) > 0 {
		p.table("", []string{"SESSION", "TIER", "OPEN", "WATCHED", "OPENED", "BY", "NAME"}, rows)
	}
	p.line("%s", Plural(d.n("count"), "session", "sessions"))
}

// ending says in words where a request stands: waiting with its time
// left, or how it ended and why.
func ending(p *printer, d doc) string {
	if d.s("state") == "pending" {
		if dl, ok := d.time("deadline"); ok && d.b("asked") {
			if !p.o.Now.Before(dl) {
				return "waiting for an answer, past its deadline (the next sweep ends it)"
			}
			return "waiting for an answer, " + Countdown(dl.Sub(p.o.Now)) + " left"
		}
		if d.has("remaining_ms") {
			return "waiting for an answer, " + Countdown(ms(float64(d.n("remaining_ms")))) + " left"
		}
		return "waiting for an answer"
	}
	by, why := "", ""
	if who := d.s("answered_by"); who != "" {
		by = " by " + who
	}
	if x := d.s("detail"); x != "" {
		why = ": " + x
	} else if x := d.s("answer"); x != "" && d.s("verdict") != "approved" {
		why = ": " + x
	}
	switch d.s("verdict") {
	case "approved":
		return "approved" + by
	case "timed-out":
		return "timed out: nobody answered in time"
	case "cancelled":
		if d.s("cause") == "client-gone" {
			return "cancelled: the asking client went away while waiting (it cancelled its request or disconnected)"
		}
		return "cancelled by the requester" + why
	case "refused":
		switch d.s("cause") {
		case "answer":
			return "refused" + by + why
		case "no-subscriber":
			return "refused: nobody was watching the session, so nobody could answer"
		case "unreadable-answer":
			return "refused: the answer could not be read" + why
		case "channel-error":
			return "refused: the store failed while asking or waiting" + why
		}
		return "refused by the hop table (" + d.s("cause") + ")" + why
	}
	return orDash(d.s("verdict"))
}

// shortEnding is ending for a table column: the verdict and its reason,
// without who answered.
func shortEnding(p *printer, d doc) string {
	why := d.s("detail")
	if why == "" && d.s("cause") == "answer" && d.s("verdict") == "refused" {
		why = d.s("answer")
	}
	switch d.s("verdict") {
	case "":
		return strings.Replace(ending(p, d), "waiting for an answer, ", "waiting, ", 1)
	case "timed-out":
		return "timed out"
	case "cancelled":
		if d.s("cause") == "client-gone" {
			why = "the asking client went away"
		}
	case "refused":
		switch d.s("cause") {
		case "answer", "unreadable-answer", "channel-error":
		case "no-subscriber":
			why = "nobody was watching"
		default:
			why = d.s("cause")
		}
	}
	if why != "" {
		return d.s("verdict") + ": " + why
	}
	return d.s("verdict")
}

func tiers(d doc) string { return orDash(d.s("from_tier")) + " → " + d.s("to_tier") }

func approval(p *printer, d doc) {
	p.line("%s  %s for call %s", p.st.Bold(d.s("approval_id")), tiers(d), d.s("call_id"))
	cmd := ""
	if d.s("preview") != "" {
		cmd = "$ " + d.s("preview")
	}
	asked := p.at(d, "created_at")
	if r := d.s("requester"); r != "" {
		asked = "by " + r + ", " + asked
	}
	deadline := ""
	if d.b("asked") {
		deadline = p.at(d, "deadline")
	}
	twoPerson := ""
	if d.b("two_person") {
		twoPerson = "needs two different approvers"
		if first := d.m("first_approval"); first.s("by") != "" {
			twoPerson += "; approved first by " + first.s("by") + ", " + p.at(first, "at")
		}
	}
	p.fields(
		"state", ending(p, d),
		"session", d.s("session_id"),
		"command", cmd,
		"reason", d.s("reason"),
		"asked", asked,
		"deadline", deadline,
		"two-person", twoPerson,
		"reminder", p.at(d, "remind_at"),
		"ended", p.at(d, "resolved_at"),
		"granted", d.s("granted_tier"),
		"this call", decidedWords(d),
	)
}

// decidedWords tells an answerer or a canceller whether its call decided.
func decidedWords(d doc) string {
	switch {
	case !d.has("applied"):
		return ""
	case d.b("applied"):
		return "decided it"
	}
	return "changed nothing: the request had already ended"
}

func approvalList(p *printer, d doc) {
	list := d.list("approvals")
	sessions := map[string]bool{}
	for _, a := range list {
		sessions[a.s("session_id")] = true
	}
	header := []string{"REQUEST", "CALL", "TO", "ASKED", "STATE"}
	if len(sessions) > 1 {
		header = []string{"REQUEST", "SESSION", "CALL", "TO", "ASKED", "STATE"}
	}
	rows := [][]cell{}
	for _, a := range list {
		r := []cell{c(a.s("approval_id")), c(a.s("call_id")), c(a.s("to_tier")), c(p.age(timeOf(a, "created_at"))), c(shortEnding(p, a))}
		if len(sessions) > 1 {
			r = append(r[:1], append([]cell{c(a.s("session_id"))}, r[1:]...)...)
		}
		rows = append(rows, r)
	}
	if len(sessions) == 1 {
		p.line("session %s", list[0].s("session_id"))
	}
	if len(rows) > 0 {
		p.table("", header, rows)
	}
	p.line("%s", Plural(d.n("count"), "request", "requests"))
}

func escalation(p *printer, d doc) {
	p.line("%s approved: call %s may run at %s", p.st.Bold(d.s("approval_id")), d.s("call_id"), p.st.Green(d.s("granted_tier")))
	p.line("  the session stays at %s for every other call", orDash(d.s("session_tier")))
	by := d.s("answered_by")
	if by != "" {
		p.line("  answered by %s, %s", by, p.at(d, "resolved_at"))
	}
}

func frames(p *printer, d doc) {
	for _, f := range d.list("frames") {
		frame(p, f)
	}
	p.line("%s of %s; next cursor %s", Plural(d.n("count"), "frame", "frames"), d.s("session_id"), d.s("cursor"))
}

func frame(p *printer, f doc) {
	if f.s("kind") == "approval_requested" {
		until := ""
		if t, ok := f.time("deadline"); ok {
			until = ", until " + p.clock(t)
		}
		p.line("#%s %s asked: %s for call %s%s", f.s("cursor"), f.s("request_id"), tiers(f), f.s("call_id"), until)
		if f.s("preview") != "" {
			p.line("  $ %s", f.s("preview"))
		}
		if f.s("reason") != "" {
			p.line("  reason: %s", f.s("reason"))
		}
		return
	}
	by := ""
	if f.s("by") != "" {
		by = " by " + f.s("by")
	}
	p.line("#%s %s ended: %s%s", f.s("cursor"), f.s("request_id"), orDash(f.s("verdict")), by)
}

func approvalsSweep(p *printer, d doc) {
	p.line("questions: %s at their deadline, %s announced", Plural(len(d.strs("timed_out")), "timed out", "timed out"), Plural(len(d.strs("announced")), "missing ending", "missing endings"))
	for _, id := range d.strs("timed_out") {
		p.line("  timed out  %s", id)
	}
	for _, id := range d.strs("announced") {
		p.line("  announced  %s", id)
	}
	for _, id := range d.strs("reminded") {
		p.line("  reminded   %s", id)
	}
}

func approvalsAudit(p *printer, d doc) {
	p.line("audited %s (%s) and %s in %s", Plural(d.n("requests"), "request", "requests"), Plural(d.n("questions"), "question", "questions"),
		Plural(d.n("frames"), "frame", "frames"), Plural(d.n("sessions"), "session", "sessions"))
	findings := d.list("findings")
	if len(findings) == 0 {
		p.line("  %s every question has exactly one ending frame", p.st.Green("ok:"))
		return
	}
	p.line("  %s", p.st.Red(Plural(len(findings), "finding", "findings")+":"))
	for _, f := range findings {
		b, _ := json.Marshal(map[string]any(f))
		p.line("  %s", visible.JSON(b))
	}
}

// Tokens and held calls.

func tokenView(p *printer, d doc) {
	name := d.s("name")
	if name == "" {
		name = "(no name)"
	}
	p.line("%s  %s, role %s", p.st.Bold(d.s("id")), name, d.s("role"))
	secret := d.s("token")
	if secret != "" {
		secret = p.st.Bold(secret) + "  (shown once)"
	}
	p.fields(
		"token", secret,
		"created", p.at(d, "created_at"),
		"revoked", p.at(d, "revoked_at"),
	)
}

func tokenList(p *printer, d doc) {
	rows := [][]cell{}
	for _, t := range d.list("tokens") {
		state := cell{text: "active"}
		if r, ok := t.time("revoked_at"); ok {
			state = cell{text: "revoked " + p.age(r), style: p.st.Dim}
		}
		rows = append(rows, []cell{c(t.s("id")), c(t.s("role")), state, c(p.age(timeOf(t, "created_at"))), c(orDash(t.s("name")))})
	}
	if len(rows) > 0 {
		p.table("", []string{"TOKEN", "ROLE", "STATE", "CREATED", "NAME"}, rows)
	}
	p.line("%s", Plural(d.n("count"), "token", "tokens"))
}

func tokensRevoked(p *printer, d doc) {
	p.line("revoked %s", Plural(d.n("count"), "token", "tokens"))
	for _, id := range d.strs("revoked") {
		p.line("  %s", id)
	}
}

var heldWords = map[string]string{
	"pending":   "held: waiting for an approver or admin to confirm it",
	"executing": "confirmed, running",
	"executed":  "confirmed and run",
	"refused":   "refused: it did not run",
	"expired":   "expired unconfirmed: it did not run",
	"revoked":   "dropped: the token that asked was revoked",
}

func heldState(d doc) string {
	if w, ok := heldWords[d.s("state")]; ok {
		return w
	}
	return d.s("state")
}

func confirmation(p *printer, d doc) {
	p.line("%s  %s: %s", p.st.Bold(d.s("confirmation_id")), d.s("tool"), heldState(d))
	args, _ := json.Marshal(map[string]any(d.m("args")))
	asked := p.at(d, "requested_at")
	if by := d.s("requested_by"); by != "" {
		asked = "by " + by + ", " + asked
	}
	decided := p.at(d, "decided_at")
	if by := d.s("decided_by"); by != "" && decided != "" {
		decided = "by " + by + ", " + decided
	}
	outcome := ""
	if o := d.m("outcome"); len(o) > 0 {
		outcome = "ran: " + o.s("envelope_kind")
		if !o.b("ok") {
			outcome = "failed: " + o.s("code") + ": " + o.s("message")
		}
	}
	expires := ""
	if d.s("state") == "pending" {
		expires = p.at(d, "expires_at")
	}
	p.fields(
		"arguments", string(visible.JSON(args)),
		"asked", asked,
		"expires", expires,
		"decided", decided,
		"reason", d.s("reason"),
		"outcome", outcome,
	)
}

func confirmationList(p *printer, d doc) {
	rows := [][]cell{}
	for _, x := range d.list("confirmations") {
		rows = append(rows, []cell{c(x.s("confirmation_id")), c(x.s("tool")), c(x.s("state")), c(p.age(timeOf(x, "requested_at"))), c(orDash(x.s("requested_by")))})
	}
	if len(rows) > 0 {
		p.table("", []string{"CONFIRMATION", "TOOL", "STATE", "ASKED", "BY"}, rows)
	}
	view := d.s("view")
	if view == "" {
		view = "pending"
	}
	p.line("%s (%s)", Plural(d.n("count"), "held call", "held calls"), view)
}

// The rest.

func toolList(p *printer, d doc) {
	rows := [][]cell{}
	for _, t := range d.list("tools") {
		rows = append(rows, []cell{c("dont " + strings.ReplaceAll(t.s("name"), ".", " ")), c(strings.Join(t.strs("roles"), ",")), c(t.s("summary"))})
	}
	if len(rows) > 0 {
		p.table("", []string{"COMMAND", "ROLES", "SUMMARY"}, rows)
	}
	confirm := "off"
	if d.m("features").b("interactive_confirm") {
		confirm = "on"
	}
	p.line("%s from the %s schema; confirmation at this terminal: %s", Plural(len(rows), "tool", "tools"), orDash(d.s("source")), confirm)
}

func health(p *printer, d doc) {
	if d.b("ok") {
		p.line("%s the API is up", p.st.Green("ok:"))
		return
	}
	p.line("%s the API is not healthy", p.st.Red("not ok:"))
}

func initialized(p *printer, d doc) {
	p.line("initialised the project in %s", d.s("root"))
	p.fields("database", d.s("database"), "config", d.s("config"))
}

func backupDone(p *printer, d doc) {
	p.line("backed up %s to %s (%s)", d.s("store"), d.s("file"), Plural(d.n("bytes"), "byte", "bytes"))
}

func restoreDone(p *printer, d doc) {
	p.line("restored %s from %s (%s)", d.s("store"), d.s("file"), Plural(d.n("bytes"), "byte", "bytes"))
}

func harnessInstalled(p *printer, d doc) {
	if !d.b("changed") {
		p.line("%s: already installed; nothing changed", d.s("harness"))
	} else {
		p.line("installed dont for %s", d.s("harness"))
	}
	for _, f := range d.list("files") {
		state := "unchanged"
		if f.b("changed") {
			state = "written"
		}
		p.line("  %-9s %s: %s", state, f.s("path"), f.s("what"))
	}
}

func passphraseSet(p *printer, d doc) {
	p.line("set the approver passphrase of %s for %s", d.s("root"), d.s("name"))
	p.fields("record", d.s("record"))
}

func doctor(p *printer, d doc) {
	p.line("checked %s, %s, %s and %s", Plural(d.n("entities"), "entity", "entities"), Plural(d.n("events"), "event", "events"),
		Plural(d.n("spawns"), "spawn", "spawns"), Plural(d.n("approvals"), "approval request", "approval requests"))
	if d.has("retention") {
		r := d.m("retention")
		p.line("  retention removed %s (%s, %s), %s and %s", Plural(r.n("sessions"), "ended session", "ended sessions"),
			Plural(r.n("questions"), "question", "questions"), Plural(r.n("frames"), "frame", "frames"),
			Plural(r.n("deliveries"), "finished delivery", "finished deliveries"), Plural(r.n("attempts"), "logged attempt", "logged attempts"))
	}
	vs := d.list("violations")
	if len(vs) == 0 {
		p.line("  %s no invariant is broken", p.st.Green("ok:"))
		return
	}
	p.line("  %s", p.st.Red(Plural(len(vs), "invariant violation", "invariant violations")+":"))
	rows := [][]cell{}
	for _, v := range vs {
		rows = append(rows, []cell{c(v.s("rule")), c(v.s("id")), c(v.s("message") + " — next: " + v.s("remediation"))})
	}
	p.table("  ", []string{"RULE", "ID", "WHAT"}, rows)
}

// approvalsInbox is the terminal's view of the approvals page: who reads,
// what waits for an answer (every session), what ended lately and why.
func approvalsInbox(p *printer, d doc) {
	viewer := d.m("viewer")
	if viewer.b("can_answer") {
		p.line("reading as %s (%s): you can answer with dont approvals approve|refuse <request>", orDash(viewer.s("id")), viewer.s("role"))
	} else {
		p.line("reading as %s (%s): you cannot answer with this token; an approver's token can", orDash(viewer.s("id")), viewer.s("role"))
	}
	pending := d.list("pending")
	// Each question whole, as the approve prompt shows it: the command is
	// wrapped, never cut to the terminal's width.
	for _, a := range pending {
		for _, l := range QuestionLines(QuestionOf(a, d.m("names")), p.o.width()) {
			p.line("%s", l)
		}
		p.line("  %s", shortEnding(p, a))
	}
	rows := [][]cell{}
	p.line("%s waiting across %s", Plural(len(pending), "question", "questions"), Plural(len(d.list("sessions")), "session", "sessions"))
	endings := d.list("endings")
	if len(endings) == 0 {
		return
	}
	rows = rows[:0]
	for _, a := range endings {
		rows = append(rows, []cell{c(a.s("approval_id")), c(inboxName(d, a.s("session_id"))), c(a.s("call_id")), c(p.age(timeOf(a, "resolved_at"))), c(ending(p, a))})
	}
	p.line("recent endings")
	p.table("  ", []string{"REQUEST", "SESSION", "CALL", "ENDED", "HOW"}, rows)
}

// inboxName is a session's name from the inbox's names, else its id.
func inboxName(d doc, id string) string {
	if n := d.m("names").s(id); n != "" {
		return n
	}
	return id
}

func spawnHeartbeat(p *printer, d doc) {
	if d.b("moved") {
		p.line("%s now expires %s (it was %s)", p.st.Bold(d.s("request_id")), p.at(d, "expires_at"), p.at(d, "previous_expires_at"))
	} else {
		p.line("%s still expires %s: a heartbeat never moves an expiry earlier", p.st.Bold(d.s("request_id")), p.at(d, "expires_at"))
	}
	p.fields("entity", d.s("entity_id"), "state", d.s("state"), "lease ends", p.at(d, "lease_ends_at"))
}

// spawnRun is the runner's report: one line per started subagent and how
// it ended.
func spawnRun(p *printer, d doc) {
	rows := [][]cell{}
	for _, r := range d.list("runs") {
		outcome := cell{text: r.s("outcome")}
		if r.s("outcome") != "resolved" {
			outcome.style = p.st.Yellow
		}
		rows = append(rows, []cell{c(r.s("request_id")), c(orDash(r.s("agent"))), outcome, c(orDash(r.s("spawn_outcome"))), c(fmt.Sprint(r.n("exit_code"))), c(fmt.Sprint(r.n("heartbeats")))})
	}
	if len(rows) > 0 {
		p.table("", []string{"SPAWN", "AGENT", "OUTCOME", "SPAWN OUTCOME", "EXIT", "HEARTBEATS"}, rows)
	}
	p.line("%d of %s resolved", d.n("resolved"), Plural(d.n("count"), "subagent", "subagents"))
	if d.b("interrupted") {
		p.line("interrupted: the agents still running were killed")
	}
}

// Webhooks (docs/hooks.md).

func hook(p *printer, d doc) {
	if d.has("removed_at") {
		p.line("%s removed %s: nothing more is delivered to it", p.st.Bold(d.s("hook_id")), p.at(d, "removed_at"))
	} else {
		p.line("%s delivers %s to %s", p.st.Bold(d.s("hook_id")), strings.Join(d.strs("events"), ", "), d.s("url"))
	}
	p.fields("format", d.s("format"), "created", p.at(d, "created_at"), "by", d.s("created_by"))
	if secret := d.s("secret"); secret != "" {
		p.line("signing secret (shown this once): %s", p.st.Bold(secret))
	}
}

func hookList(p *printer, d doc) {
	rows := [][]cell{}
	for _, h := range d.list("hooks") {
		rows = append(rows, []cell{c(h.s("hook_id")), c(h.s("format")), c(strings.Join(h.strs("events"), ",")), c(orDash(h.s("last_outcome"))), c(h.s("url"))})
	}
	if len(rows) > 0 {
		p.table("", []string{"HOOK", "FORMAT", "EVENTS", "LAST", "URL"}, rows)
	}
	p.line("%s", Plural(d.n("count"), "hook", "hooks"))
}

func hookAttempt(p *printer, a doc) string {
	status := "no answer"
	if a.n("status") > 0 {
		status = fmt.Sprintf("HTTP %d", a.n("status"))
	}
	return fmt.Sprintf("attempt %d: %s, %s in %d ms", a.n("attempt"), a.s("outcome"), status, a.n("latency_ms"))
}

func hookTest(p *printer, d doc) {
	p.line("test delivery %s", p.st.Bold(d.s("message_id")))
	if a := d.m("attempt"); len(a) > 0 {
		p.line("  %s", hookAttempt(p, a))
	}
}

func hookDeliveries(p *printer, d doc) {
	rows := [][]cell{}
	for _, x := range d.list("deliveries") {
		rows = append(rows, []cell{c(x.s("message_id")), c(x.s("type")), c(x.s("state")), c(fmt.Sprint(x.n("attempts"))), c(p.age(timeOf(x, "created_at")))})
	}
	p.line("deliveries of %s", d.s("hook_id"))
	if len(rows) > 0 {
		p.table("", []string{"MESSAGE", "EVENT", "STATE", "ATTEMPTS", "CREATED"}, rows)
	}
	if attempts := d.list("attempts"); len(attempts) > 0 {
		p.line("attempts")
		for _, a := range attempts {
			p.line("  %s  %s  %s", a.s("message_id"), p.age(timeOf(a, "at")), hookAttempt(p, a))
		}
	}
}

func hookDeliver(p *printer, d doc) {
	p.line("%d attempted: %d delivered, %d to retry, %d failed", d.n("attempted"), d.n("delivered"), d.n("retrying"), d.n("failed"))
}

func secretRotation(p *printer, d doc) {
	p.line("the callback secret of %s is now version %s", orDash(d.s("project")), p.st.Bold(d.s("key_id")))
	p.line("  tokens made under version %s keep verifying", d.s("previous_key_id"))
}

func projectSettings(p *printer, d doc) {
	name := d.s("project")
	if name == "" {
		name = "this project"
	}
	p.line("settings of %s", name)
	p.fields("spawn timeout", d.s("spawn_timeout"))
}

func version(p *printer, d doc) {
	line := "dont " + d.s("version")
	if rev := d.s("revision"); rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if d.b("modified") {
			rev += "+dirty"
		}
		line += " (" + rev
		if b := d.s("build_date"); b != "" {
			line += ", " + b
		}
		line += ")"
	}
	if g := d.s("go_version"); g != "" {
		line += " " + g
	}
	p.line("%s", line)
}

// configView is `dont config show` (every setting, its value and where
// it came from; * marks the ones only a person decides) and `dont config
// trust` (the file trusted, by its hash).
func configView(p *printer, d doc) {
	if !d.has("settings") {
		p.line("trusted %s (sha256 %s) until it changes", d.s("workspace_config"), d.s("sha256"))
		return
	}
	trusted := "not trusted"
	if d.b("workspace_trusted") {
		trusted = "trusted"
	}
	person := "none"
	if d.b("person_config_used") {
		person = d.s("person_config")
	}
	p.fields("project config", d.s("workspace_config")+" ("+trusted+")", "your config", person)
	rows := [][]cell{}
	for _, st := range d.list("settings") {
		key := "  " + st.s("key")
		if st.b("person_only") {
			key = "* " + st.s("key")
		}
		rows = append(rows, []cell{c(key), c(st.s("source")), c(orDash(st.s("env"))), c(orDash(st.s("value")))})
	}
	p.table("", []string{"SETTING", "FROM", "ENV", "VALUE"}, rows)
	if keys := d.strs("untrusted"); len(keys) > 0 {
		p.line("ignored until you trust the project config (dont config trust): %s", strings.Join(keys, ", "))
	}
	p.line("* only you decide it: your environment (no harness signal), your config, or the project config once trusted")
}
