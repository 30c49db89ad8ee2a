package httpapi_test

import (
	"strings"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/httpapi"
	"github.com/dont-cli/dont/internal/idempotency"
	"github.com/dont-cli/dont/internal/rules"
	"github.com/dont-cli/dont/internal/service"
)

// newCutAPI is the API over a key store that can lose a completion
// (cutAfterWrite), with hooks sent to a counting receiver and a Slack
// app whose responses go to a fake Slack.
func newCutAPI(t *testing.T) (*slackAPI, *cutAfterWrite, *countingSender) {
	t.Helper()
	fake := newFakeSlack(t)
	store := &cutAfterWrite{}
	a := newAPI(t, func(o *httpapi.Options) {
		b := o.Backend.(httpapi.SingleProject)
		store.Store = b.Project.Idempotency
		b.Project.Idempotency = store
		o.Backend = b
		o.Slack = &httpapi.SlackOptions{SigningSecret: slackSecret, PublicURL: "https://dont.example", ResponseURLPrefix: fake.srv.URL + "/"}
	})
	sender := &countingSender{}
	a.svc.HooksConfig = service.HooksConfig{Store: a.store, Sender: sender}
	return &slackAPI{api: a, slack: fake}, store, sender
}

// cutThenStale sends c once with its completion lost (the server died
// between the call's write and its response), then again once the claim
// is stale, and returns both answers.
func cutThenStale(a *api, store *cutAfterWrite, c tokenCreate) (first, again reply) {
	a.t.Helper()
	store.cut.Store(true)
	first = c.send(a)
	store.cut.Store(false)
	store.late.Store(int64(2 * idempotency.StaleClaim))
	again = c.send(a)
	store.late.Store(0)
	return first, again
}

func isOutcomeUnknown(r reply) bool {
	return r.status == 409 && r.code() == string(httpapi.IdempotencyOutcomeUnknown)
}

// A keyed hooks.remove cut between its write and its response: removing
// a hook twice removes nothing more (the second is refused as
// hook-not-found), so the retry runs again and learns the hook is gone
// instead of idempotency-outcome-unknown.
func TestAKeyedHookRemovalCutBeforeItsResponseIsAnsweredOnRetry(t *testing.T) {
	a, store, _ := newCutAPI(t)
	admin := a.tokens["admin"]
	hook := tokenCreate{"hooks.add", admin, "hooks.add", `{"args":{"url":"https://hooks.example.com/in","events":["approval.asked"]},"cli_confirmed":true}`, "add-1"}.send(a.api)
	if hook.status != 200 {
		t.Fatalf("hooks.add: %d %s", hook.status, hook.raw)
	}
	id := hook.str("hook_id")
	first, again := cutThenStale(a.api, store, tokenCreate{"hooks.remove", admin, "hooks.remove", `{"args":{"id":"` + id + `"},"cli_confirmed":true}`, "rm-1"})
	if first.status != 200 {
		t.Fatalf("hooks.remove: %d %s", first.status, first.raw)
	}
	if isOutcomeUnknown(again) || again.status != 404 || again.code() != "hook-not-found" {
		t.Fatalf("the retry once the claim is stale: %d %s", again.status, again.raw)
	}
	if r := a.call(admin, "hooks.show", map[string]any{"id": id}); r.status != 404 {
		t.Fatalf("the removed hook: %d %s", r.status, r.raw)
	}
}

// A keyed hooks.deliver cut between its sends and its response runs again
// on retry: it attempts only what is due, so the receiver is not sent a
// delivered message a second time.
func TestAKeyedHookDeliveryRunCutBeforeItsResponseRunsAgainWithoutResending(t *testing.T) {
	a, store, sender := newCutAPI(t)
	admin := a.tokens["admin"]
	hook := tokenCreate{"hooks.add", admin, "hooks.add", `{"args":{"url":"https://hooks.example.com/in","events":["approval.asked"]},"cli_confirmed":true}`, "add-1"}.send(a.api)
	if r := (tokenCreate{"hooks.test", admin, "hooks.test", `{"args":{"id":"` + hook.str("hook_id") + `"},"cli_confirmed":true}`, "t-1"}).send(a.api); r.status != 200 {
		t.Fatalf("hooks.test: %d %s", r.status, r.raw)
	}
	first, again := cutThenStale(a.api, store, tokenCreate{"hooks.deliver", admin, "hooks.deliver", `{"args":{},"cli_confirmed":true}`, "dl-1"})
	if first.status != 200 {
		t.Fatalf("hooks.deliver: %d %s", first.status, first.raw)
	}
	if isOutcomeUnknown(again) || again.status != 200 {
		t.Fatalf("the retry once the claim is stale: %d %s", again.status, again.raw)
	}
	if n := sender.sent.Load(); n != 1 {
		t.Fatalf("the receiver got %d messages, want 1", n)
	}
}

// A keyed approvals.slack-link cut before its response reached the
// approver: the lost code is useless to them, so the retry makes a fresh
// one (which links) instead of answering idempotency-outcome-unknown.
func TestAKeyedSlackLinkCodeLostToACrashIsMadeAfreshOnRetry(t *testing.T) {
	a, store, _ := newCutAPI(t)
	approver := a.tokens["approver"]
	first, again := cutThenStale(a.api, store, tokenCreate{"approvals.slack-link", approver, "approvals.slack-link", `{"args":{}}`, "sl-1"})
	if first.status != 200 {
		t.Fatalf("slack-link: %d %s", first.status, first.raw)
	}
	code := again.str("code")
	if isOutcomeUnknown(again) || again.status != 200 || code == first.str("code") || !strings.HasPrefix(code, service.SlackLinkCodePrefix) {
		t.Fatalf("the retry once the claim is stale: %d %s", again.status, again.raw)
	}
	if r := a.command("T3MDE", "U0CA5", "link "+code); !strings.HasPrefix(r["text"].(string), "Linked") {
		t.Fatalf("the fresh code: %v", r)
	}
}

// A Slack link code is a secret shown once (whoever sends it links their
// Slack user to the approver token): a keyed slack-link's response is
// stored, and so replayed, without it.
func TestASlackLinkCodeIsNeverStoredUnderItsIdempotencyKey(t *testing.T) {
	a, _, _ := newCutAPI(t)
	c := tokenCreate{"approvals.slack-link", a.tokens["approver"], "approvals.slack-link", `{"args":{}}`, "sl-2"}
	first := c.send(a.api)
	code := first.str("code")
	if first.status != 200 || !strings.HasPrefix(code, service.SlackLinkCodePrefix) {
		t.Fatalf("slack-link: %d %s", first.status, first.raw)
	}
	again := c.send(a.api)
	if again.status != 200 || strings.Contains(string(again.raw), code) || again.str("code") != idempotency.Redacted || !hasWarning(again, string(idempotency.SecretNotReplayed)) {
		t.Fatalf("the replay: %d %s", again.status, again.raw)
	}
	if r := a.command("T3MDE", "U0CA5", "link "+code); !strings.HasPrefix(r["text"].(string), "Linked") {
		t.Fatalf("the code shown once: %v", r)
	}
}

// A keyed escalate cut by a crash after it asked its question: the retry
// with its key, once the claim is stale, re-attaches to that question
// (the same approval id, one question for the call) instead of asking the
// person again or answering idempotency-outcome-unknown.
func TestAKeyedEscalateCutAfterItAskedReattachesToItsQuestionOnRetry(t *testing.T) {
	a, store, _ := newCutAPI(t)
	a.now.Store(time.Now().UnixNano()) // the question is dated by the clock the key is
	h, approver := a.tokens["harness"], a.tokens["approver"]
	ses := a.ok(h, "sessions.open", map[string]any{"tier": "read-only"}).str("session_id")
	a.ok(approver, "approvals.frames", map[string]any{"session": ses})
	body := `{"args":{"session":"` + ses + `","call":"c1","to":"workspace-write","reason":"writes build/","preview":"make build","no_wait":true}}`
	first, again := cutThenStale(a.api, store, tokenCreate{"escalate", h, "escalate", body, "esc-1"})
	id := first.str("approval_id")
	if first.status != 200 || id == "" {
		t.Fatalf("escalate: %d %s", first.status, first.raw)
	}
	if again.status != 200 || again.str("approval_id") != id {
		t.Fatalf("the retry once the claim is stale: %d %s", again.status, again.raw)
	}
	list := a.ok(h, "approvals.list", map[string]any{"session": ses})
	if qs, _ := list.data()["approvals"].([]any); len(qs) != 1 {
		t.Fatalf("the call has %d questions, want 1: %s", len(qs), list.raw)
	}
}

// A keyed escalate that waited for its verdict and was cut by a crash
// after the verdict (here a person's allow rule, which answers at once):
// the retry reports that verdict, the tier granted, as the first call
// would have, rather than asking again (which the ratchet would refuse)
// or answering idempotency-outcome-unknown.
func TestAKeyedEscalateCutAfterItsVerdictReportsThatVerdictOnRetry(t *testing.T) {
	a, store, _ := newCutAPI(t)
	a.now.Store(time.Now().UnixNano())
	set, err := rules.Load([]rules.Rule{{Name: "git-status", Decision: rules.Allow, Prefix: []string{"git", "status"}, Match: []string{"git status"}}})
	if err != nil {
		t.Fatal(err)
	}
	a.svc.Approvals.Rules = set
	h := a.tokens["harness"]
	ses := a.ok(h, "sessions.open", map[string]any{"tier": "read-only"}).str("session_id")
	body := `{"args":{"session":"` + ses + `","call":"c1","to":"danger-full-access","reason":"see the tree","preview":"git status --short"}}`
	first, again := cutThenStale(a.api, store, tokenCreate{"escalate", h, "escalate", body, "esc-2"})
	if first.status != 200 || first.str("granted_tier") != "danger-full-access" {
		t.Fatalf("escalate: %d %s", first.status, first.raw)
	}
	if again.status != 200 || again.str("approval_id") != first.str("approval_id") || again.str("granted_tier") != "danger-full-access" {
		t.Fatalf("the retry once the claim is stale: %d %s", again.status, again.raw)
	}
}
