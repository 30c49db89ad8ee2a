package main

import (
	"strings"
	"testing"
	"time"
)

// Nobody answers: at half the deadline (the person's approval_remind_at)
// the hook subscribed to approval.reminder — the second line — is told
// once, by the waiting embedded escalate; the question then times out as
// ever.
func TestAnUnansweredEscalationRemindsTheSecondLineOnceWhileItWaits(t *testing.T) {
	t.Parallel()
	p := newProject(t, allowLoopback, "DONT_APPROVAL_TIMEOUT=4s", "DONT_APPROVAL_REMIND_AT=0.5")
	first, second := newHookReceiver(t), newHookReceiver(t)
	id := p.addHook(t, first, "approval.asked,approval.ended")
	p.addHook(t, second, "approval.reminder")
	p.ok("hooks", "test", id, "--yes")
	first.next(t, "hook.test", 5*time.Second)
	ses := p.session("read-only")
	c, out, apr := p.startEscalate(nil, "--session", ses, "--call", "c1", "--to", "workspace-write", "--reason", "runs make", "--", "make", "test")
	asked := first.next(t, "approval.asked", 3*time.Second)
	askedAt := time.Now()
	d := second.next(t, "approval.reminder", 4*time.Second)["data"].(map[string]any)
	if d["approval_id"] != apr || d["preview"] != "make test" || d["remind_at"] == nil || d["deadline"] != asked["data"].(map[string]any)["deadline"] {
		t.Fatalf("reminder %v", d)
	}
	if since := time.Since(askedAt); since > 3500*time.Millisecond {
		t.Fatalf("the reminder came %v after the question, past its deadline", since)
	}
	if code, _ := waitExit(t, c, out); code != 1 {
		t.Fatalf("escalate exit %d", code)
	}
	first.next(t, "approval.ended", 5*time.Second)
	// A sweep after the ending sends no second reminder.
	p.ok("approvals", "sweep")
	second.none(t)
}

// The second line is the person's to set: an agent that sets the share in
// its environment or in the workspace config (to page at once, or never)
// changes nothing.
func TestAnAgentCannotSetTheReminderShare(t *testing.T) {
	t.Parallel()
	p := newApprovalProject(t)
	ses := p.session("read-only")
	p.frames("--session", ses)
	r := p.runEnv([]string{"DONT_HARNESS=1", "DONT_APPROVAL_REMIND_AT=0.01"}, "escalate", "--session", ses, "--call", "c1", "--to", "workspace-write", "--reason", "r", "--no-wait")
	if r.exit != 0 || r.data()["remind_at"] != nil || !strings.Contains(warningText(r), "DONT_APPROVAL_REMIND_AT is ignored") {
		t.Fatalf("escalate with the agent's DONT_APPROVAL_REMIND_AT: exit %d %s", r.exit, r.stdout)
	}
	p.agentWritesConfig(t, "approval_remind_at = 0.01\n")
	p.frames("--session", ses)
	r = p.runEnv([]string{"DONT_HARNESS=1"}, "escalate", "--session", ses, "--call", "c2", "--to", "workspace-write", "--reason", "r", "--no-wait")
	if r.exit != 0 || r.data()["remind_at"] != nil || !strings.Contains(warningText(r), "approval_remind_at") {
		t.Fatalf("escalate with the workspace's approval_remind_at: exit %d %s", r.exit, r.stdout)
	}
	// The person's own config sets it.
	p.writePersonConfig(t, "approval_remind_at = 0.5\n")
	p.frames("--session", ses)
	r = p.runEnv([]string{"DONT_HARNESS=1"}, "escalate", "--session", ses, "--call", "c3", "--to", "workspace-write", "--reason", "r", "--no-wait")
	if r.exit != 0 || r.data()["remind_at"] == nil {
		t.Fatalf("escalate with the person's approval_remind_at: exit %d %s", r.exit, r.stdout)
	}
}
