package main

import (
	"strings"
	"testing"
)

// The five-minute path of docs/harnesses.md, end to end: Claude Code's
// and Codex's recorded permission requests reach `dont serve` through
// the hook (DONT_ENDPOINT with a harness token), a person approves one
// and refuses the other on the approvals page in Chromium, and each hook
// writes the exact decision JSON its harness's schema accepts.
func TestAHookQuestionAnsweredOnTheApprovalsPageDecidesTheHarnessCall(t *testing.T) {
	needsChromium(t)
	t.Parallel()
	ip := newInboxProject(t)
	page := openPage(t, ip.srv.endpoint, ip.approver)
	page.waitText(t, "#status", "Signed in as alice (approver)")

	h, out := ip.startHook(ip.harnessEnv, "claude-code", hookPayload(t, "claude-code", "shell"))
	q := ip.pendingQuestion()
	card := cardOf(q["approval_id"].(string))
	page.waitCount(t, card, 1)
	if text := page.text(t, card); !strings.Contains(text, "git push origin main") || !strings.Contains(text, "Push the release commit to origin") {
		t.Fatalf("the page shows %q", text)
	}
	if err := page.answer(card, "approve"); err != nil {
		t.Fatal(err)
	}
	got := ip.hookEnd(h, out)
	validDecision(t, "claude-code", got)
	if string(got) != hookAllow {
		t.Fatalf("approved on the page: %s", got)
	}

	h, out = ip.startHook(ip.harnessEnv, "codex", hookPayload(t, "codex", "network"))
	q = ip.pendingQuestion()
	card = cardOf(q["approval_id"].(string))
	page.waitCount(t, card, 1)
	if err := page.answer(card, "refuse"); err != nil {
		t.Fatal(err)
	}
	if msg := hookDeny(t, "codex", ip.hookEnd(h, out)); !strings.HasPrefix(msg, "dont: refused by") {
		t.Fatalf("refused on the page: %q", msg)
	}
}
