package main

import (
	"fmt"
	"strings"
	"testing"
)

// inboxProject is a served project with named tokens, two named sessions
// opened by the harness, and helpers to ask in them.
type inboxProject struct {
	*testProject
	srv                 *server
	approver, harness   string
	frontend, backend   string
	remote              []string
	harnessEnv, apprEnv []string
}

func newInboxProject(t *testing.T, env ...string) *inboxProject {
	t.Helper()
	p := newApprovalProject(t)
	ip := &inboxProject{testProject: p}
	ip.approver = p.mintToken("approver", "alice")
	ip.harness = p.mintToken("harness", "build-bot")
	ip.srv = p.serve(t, env...)
	ip.remote = []string{"DONT_ENDPOINT=" + ip.srv.endpoint}
	ip.harnessEnv = append(ip.remote, "DONT_TOKEN="+ip.harness)
	ip.apprEnv = append(ip.remote, "DONT_TOKEN="+ip.approver)
	ip.frontend = ip.open("frontend")
	ip.backend = ip.open("backend")
	return ip
}

func (ip *inboxProject) open(name string) string {
	ip.t.Helper()
	r := ip.runEnv(ip.harnessEnv, "sessions", "open", "--tier", "read-only", "--name", name)
	if r.exit != 0 {
		ip.t.Fatalf("sessions open: %s", r.stdout)
	}
	return r.str("session_id")
}

// ask escalates a call without waiting, as the harness; the page being
// open is what makes the session answerable.
func (ip *inboxProject) ask(ses, call, reason string, preview ...string) string {
	ip.t.Helper()
	args := append([]string{"escalate", "--session", ses, "--call", call, "--to", "workspace-write", "--reason", reason, "--no-wait", "--"}, preview...)
	r := ip.runEnv(ip.harnessEnv, args...)
	if r.exit != 0 || !strings.HasPrefix(r.str("approval_id"), "apr:") {
		ip.t.Fatalf("escalate in %s: exit %d %s", ses, r.exit, r.stdout)
	}
	return r.str("approval_id")
}

func cardOf(apr string) string { return `.request[data-request="` + apr + `"]` }

func endingOf(apr string) string { return `#endings li[data-request="` + apr + `"]` }

// One page shows the open questions of every session, with the names of
// the sessions and tokens, not their ids; choosing a session narrows it.
func TestWebPageIsAnInboxAcrossSessionsFilterableBySession(t *testing.T) {
	needsChromium(t)
	t.Parallel() // a browser test mostly waits: run them side by side
	ip := newInboxProject(t)
	page := openPage(t, ip.srv.endpoint, ip.approver)
	page.waitText(t, "#status", "Signed in as alice (approver). Questions of every session reach you here")
	// The page's read alone makes both sessions answerable: no other watcher.
	inFront := ip.ask(ip.frontend, "npm-ci", "installs the lockfile's packages", "npm", "ci")
	inBack := ip.ask(ip.backend, "migrate", "runs the database migrations", "make", "migrate")
	page.waitCount(t, ".request", 2)
	for apr, want := range map[string][]string{inFront: {"frontend", "npm ci", "build-bot"}, inBack: {"backend", "make migrate", "build-bot"}} {
		card := page.text(t, cardOf(apr))
		for _, w := range want {
			if !strings.Contains(card, w) {
				t.Errorf("the question %s lacks %q: %q", apr, w, card)
			}
		}
		if strings.Contains(card, "tok:") || strings.Contains(card, "ses:") {
			t.Errorf("the question %s shows an id instead of a name: %q", apr, card)
		}
	}
	if opts := page.text(t, "#filter"); !strings.Contains(opts, "every session (2 open)") || !strings.Contains(opts, "frontend (1 open)") {
		t.Fatalf("the session filter offers %q", opts)
	}
	page.screenshot(t, "approvals-inbox.png")

	// Narrowed to one session, only its question stays.
	eval[bool](t, page, fmt.Sprintf(`(() => { const f = document.getElementById("filter"); f.value = %q; f.dispatchEvent(new Event("change")); return true; })()`, ip.backend))
	page.waitCount(t, cardOf(inFront), 0)
	page.waitCount(t, cardOf(inBack), 1)
	page.waitText(t, "#status", "Questions of session backend reach you here")

	// A link can name the session: #session=…
	linked := newBrowser(t, desktop)
	linked.open(t, ip.srv.endpoint+"/approvals#session="+ip.frontend, ip.approver)
	linked.waitCount(t, cardOf(inFront), 1)
	linked.waitCount(t, ".request", 1)

	if r := ip.runEnv(ip.apprEnv, "approvals", "refuse", inFront, "--yes"); r.exit != 0 {
		t.Fatal(r.stdout)
	}
	if r := ip.runEnv(ip.apprEnv, "approvals", "refuse", inBack, "--yes"); r.exit != 0 {
		t.Fatal(r.stdout)
	}
}

// Every ending is shown in words with its reason: a refusal with the
// approver's reason, a cancellation with the requester's, a timeout the
// server decided, and a request refused before it was asked because
// nobody could answer.
func TestWebPageShowsEveryEndingWithItsReason(t *testing.T) {
	needsChromium(t)
	t.Parallel() // a browser test mostly waits: run them side by side
	// Only the question meant to time out asks for a short deadline: a
	// project-wide one raced the answers on a loaded machine.
	ip := newInboxProject(t, "DONT_APPROVAL_TIMEOUT_MIN=1s")
	// Refused before it was asked: nobody watched yet.
	notAsked := ip.runEnv(ip.harnessEnv, "escalate", "--session", ip.frontend, "--call", "early", "--to", "workspace-write", "--reason", "r", "--no-wait")
	if notAsked.exit != 1 {
		t.Fatalf("an escalation nobody watches: exit %d %s", notAsked.exit, notAsked.stdout)
	}
	page := openPage(t, ip.srv.endpoint, ip.approver)
	refused := ip.ask(ip.frontend, "rm-cache", "clears the shared cache", "rm", "-rf", "/var/cache/app")
	cancelled := ip.ask(ip.backend, "deploy", "deploys to staging", "make", "deploy")
	page.waitCount(t, ".request", 2)
	if r := ip.runEnv(ip.apprEnv, "approvals", "refuse", refused, "--reason", "the cache is shared with production", "--yes"); r.exit != 0 {
		t.Fatal(r.stdout)
	}
	if r := ip.runEnv(ip.harnessEnv, "approvals", "cancel", cancelled, "--reason", "the deploy window closed", "--yes"); r.exit != 0 {
		t.Fatal(r.stdout)
	}
	r := ip.runEnv(ip.harnessEnv, "escalate", "--session", ip.backend, "--call", "chmod", "--to", "workspace-write",
		"--reason", "fixes permissions", "--deadline", "3s", "--no-wait", "--", "chmod", "-R", "777", ".")
	timedOut := r.str("approval_id")
	if r.exit != 0 || !strings.HasPrefix(timedOut, "apr:") {
		t.Fatalf("escalate with a 3s deadline: exit %d %s", r.exit, r.stdout)
	}
	for apr, want := range map[string]string{
		refused:   "refused by alice: the cache is shared with production",
		cancelled: "cancelled by build-bot: the deploy window closed",
		timedOut:  "timed out: nobody answered before the deadline, so the server ended it",
	} {
		page.waitText(t, endingOf(apr), want)
		if txt := page.text(t, endingOf(apr)); strings.Contains(txt, "tok:") {
			t.Errorf("the ending of %s shows a token id: %q", apr, txt)
		}
	}
	page.waitText(t, endingOf(notAsked.data()["entity_id"].(string)), "refused before it was asked: nobody who could answer was watching the session")
	page.waitCount(t, ".request", 0)
	page.screenshot(t, "approvals-endings.png")
}

// A token that cannot answer is told so, plainly; the page never claims
// it is watching, offers no answer, sends none from the keyboard, and
// its reads keep no session answerable (the escalation is refused).
func TestWebPageTellsANonApproverTokenItCannotAnswer(t *testing.T) {
	needsChromium(t)
	t.Parallel() // a browser test mostly waits: run them side by side
	ip := newInboxProject(t)
	page := openPage(t, ip.srv.endpoint, ip.harness)
	page.waitText(t, "#notice", "You cannot answer with this token.")
	page.waitText(t, "#notice", "harness token (build-bot)")
	if body := page.text(t, "body"); strings.Contains(strings.ToLower(body), "watching") && !strings.Contains(body, "unless an approver has the page or dont approvals watch open") {
		t.Fatalf("the page claims to be watching: %q", body)
	}
	if strings.Contains(page.text(t, "#status"), "reach you") {
		t.Fatalf("the status promises questions reach this token: %q", page.text(t, "#status"))
	}
	r := ip.runEnv(ip.harnessEnv, "escalate", "--session", ip.frontend, "--call", "c1", "--to", "workspace-write", "--reason", "r", "--no-wait")
	if r.exit != 1 || r.data()["code"] != "no-subscriber" {
		t.Fatalf("with only a harness's page open, escalate: exit %d %s", r.exit, r.stdout)
	}
	// With an approver watching elsewhere, the harness's page shows the
	// question, read-only, and a key press answers nothing.
	openPage(t, ip.srv.endpoint, ip.approver)
	apr := ip.ask(ip.frontend, "c2", "needs the network", "curl", "-O", "https://example.org/x")
	page.waitCount(t, cardOf(apr), 1)
	if n := eval[int](t, page, `Array.from(document.querySelectorAll(".request button")).filter((b) => b.getClientRects().length > 0).length`); n != 0 {
		t.Fatalf("a harness's page shows %d answer buttons", n)
	}
	page.keys(t, "a")
	page.keys(t, "y")
	page.waitText(t, `#log li[data-request="`+apr+`"]`, "call c2 of frontend: you cannot answer with this token; nothing was sent")
	if st := ip.ok("approvals", "show", apr).str("state"); st != "pending" {
		t.Fatalf("a harness's key press answered the question: %s", st)
	}
	page.screenshot(t, "approvals-read-only.png")
	if r := ip.runEnv(ip.apprEnv, "approvals", "refuse", apr, "--yes"); r.exit != 0 {
		t.Fatal(r.stdout)
	}

	// A token the server does not know is refused, in words, and the
	// page stops asking.
	page.signIn(t, ip.srv.endpoint+"/approvals", "dont_tok:01HX05A9K8VP0000000000000A_0000")
	page.waitText(t, "#status", "Stopped: unauthenticated")
	page.waitCount(t, ".request", 0)

	// An admin token cannot answer an escalation either.
	admin := ip.mintToken("admin", "ops")
	page.open(t, ip.srv.endpoint+"/approvals", admin)
	page.waitText(t, "#notice", "You cannot answer with this token.")
	page.waitText(t, "#notice", "an admin token (ops)")
}

// j/k move between questions, a and r ask to confirm (y or Enter sends,
// Esc and n send nothing), and ? shows the shortcuts.
func TestWebPageKeyboardShortcuts(t *testing.T) {
	needsChromium(t)
	t.Parallel() // a browser test mostly waits: run them side by side
	ip := newInboxProject(t)
	page := openPage(t, ip.srv.endpoint, ip.approver)
	first := ip.ask(ip.frontend, "k1", "first", "make", "one")
	second := ip.ask(ip.backend, "k2", "second", "make", "two")
	page.waitCount(t, ".request", 2)
	selected := func() string {
		return eval[string](t, page, `document.querySelector(".request.selected").dataset.request`)
	}
	if got := selected(); got != first {
		t.Fatalf("the oldest question is not selected first: %s", got)
	}
	page.keys(t, "j")
	if got := selected(); got != second {
		t.Fatalf("j selected %s, want %s", got, second)
	}
	page.keys(t, "k")
	if got := selected(); got != first {
		t.Fatalf("k selected %s, want %s", got, first)
	}
	page.keys(t, "?")
	page.waitText(t, "#help", "Keyboard shortcuts")
	page.keys(t, "?")
	page.waitCount(t, "#help:not([hidden])", 0)

	// a asks first; Esc, then n, send nothing.
	page.keys(t, "a")
	page.waitText(t, cardOf(first)+" .confirm", "About to approve call k1 at workspace-write. Proceed?")
	page.keys(t, "\x1b")
	page.waitCount(t, ".confirm", 0)
	page.keys(t, "a")
	page.waitCount(t, ".confirm", 1)
	page.keys(t, "n")
	page.waitCount(t, ".confirm", 0)
	if st := ip.ok("approvals", "show", first).str("state"); st != "pending" {
		t.Fatalf("a cancelled confirmation answered: %s", st)
	}
	page.keys(t, "a")
	page.waitCount(t, ".confirm", 1)
	page.keys(t, "y")
	page.waitCount(t, cardOf(first), 0)
	if v := ip.ok("approvals", "show", first).str("verdict"); v != "approved" {
		t.Fatalf("a then y: verdict %q", v)
	}

	// r asks for a reason; Enter sends it.
	page.waitText(t, ".request.selected", "k2")
	page.keys(t, "r")
	page.waitCount(t, ".confirm .reason-input", 1)
	page.keys(t, "not on a Friday\r")
	page.waitCount(t, cardOf(second), 0)
	shown := ip.ok("approvals", "show", second)
	if shown.str("verdict") != "refused" || shown.str("detail") != "not on a Friday" {
		t.Fatalf("r, a reason, Enter: %s", shown.stdout)
	}
	page.waitText(t, endingOf(second), "refused by alice: not on a Friday")
}

// On a phone's screen (375 px wide) nothing is wider than the screen,
// and a long preview wraps instead of running off it.
func TestWebPageFitsAPhoneWidthScreen(t *testing.T) {
	needsChromium(t)
	t.Parallel() // a browser test mostly waits: run them side by side
	ip := newInboxProject(t)
	phone := newBrowser(t, window{width: 375, height: 740, phone: true})
	phone.open(t, ip.srv.endpoint+"/approvals", ip.approver)
	apr := ip.ask(ip.frontend, "long", "installs the toolchain system-wide", "sh", "-c",
		"curl --fail --location https://example.org/toolchains/very/long/path/installer-1.2.3-linux-x86_64.tar.gz | tar -xz -C /usr/local")
	phone.waitCount(t, cardOf(apr), 1)
	if w := eval[int](t, phone, "document.documentElement.scrollWidth"); w > 375 {
		t.Fatalf("the page is %d px wide on a 375 px screen", w)
	}
	for _, sel := range []string{cardOf(apr), cardOf(apr) + " .preview", cardOf(apr) + " button.approve", cardOf(apr) + " button.refuse", "#filter"} {
		right := eval[float64](t, phone, fmt.Sprintf("document.querySelector(%q).getBoundingClientRect().right", sel))
		if right > 375 {
			t.Errorf("%s ends at %.0f px, past the 375 px screen", sel, right)
		}
	}
	if h := eval[float64](t, phone, fmt.Sprintf("document.querySelector(%q).getBoundingClientRect().height", cardOf(apr)+" button.approve")); h < 40 {
		t.Errorf("the approve button is %.0f px high: too small to tap", h)
	}
	phone.screenshot(t, "approvals-phone.png")
	if err := phone.answer(cardOf(apr), "refuse"); err != nil {
		t.Fatal(err)
	}
	phone.waitCount(t, cardOf(apr), 0)
}
