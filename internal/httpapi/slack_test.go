package httpapi_test

import (
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/auth"
	"github.com/dont-cli/dont/internal/httpapi"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/slackapp"
)

const slackSecret = "8f742231b10e8888abcd99yyyzzz85a5"

// fakeSlack stands in for Slack's side of an interaction: the
// response_url every answer is posted to.
type fakeSlack struct {
	srv   *httptest.Server
	mu    sync.Mutex
	posts []map[string]any
}

func newFakeSlack(t *testing.T) *fakeSlack {
	f := &fakeSlack{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m map[string]any
		b, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(b, &m); err != nil {
			t.Errorf("fake Slack: a response that is not JSON: %q", b)
		}
		m["_path"] = r.URL.Path
		f.mu.Lock()
		f.posts = append(f.posts, m)
		f.mu.Unlock()
		_, _ = w.Write([]byte("ok"))
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeSlack) all() []map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]map[string]any(nil), f.posts...)
}

// slackAPI is the API with a Slack app, a fake Slack, an approver linked
// as Slack user U0CA5 of team T3MDE, and an open question.
type slackAPI struct {
	*api
	slack    *fakeSlack
	approver string // the linked approver's token id
	question approvals.Approval
}

func newSlackAPI(t *testing.T) *slackAPI {
	t.Helper()
	fake := newFakeSlack(t)
	a := newAPI(t, func(o *httpapi.Options) {
		o.Slack = &httpapi.SlackOptions{SigningSecret: slackSecret, PublicURL: "https://dont.example", ResponseURLPrefix: fake.srv.URL + "/"}
	})
	s := &slackAPI{api: a, slack: fake}
	s.approver, _, _ = auth.ParseBearer(a.tokens["approver"])
	code := s.linkCode(a.tokens["approver"])
	if r := s.command("T3MDE", "U0CA5", "link "+code); !strings.HasPrefix(r["text"].(string), "Linked") {
		t.Fatalf("link: %v", r)
	}
	s.question = s.ask("c1", "make build")
	return s
}

// linkCode makes a link code as the approver token's holder does.
func (s *slackAPI) linkCode(bearer string) string {
	s.t.Helper()
	return s.ok(bearer, "approvals.slack-link", nil).str("code")
}

func (s *slackAPI) ask(call, preview string) approvals.Approval {
	s.t.Helper()
	h, approver := s.tokens["harness"], s.tokens["approver"]
	ses := s.ok(h, "sessions.open", map[string]any{"tier": "read-only"}).str("session_id")
	s.ok(approver, "approvals.frames", map[string]any{"session": ses})
	id := s.ok(h, "escalate", map[string]any{"session": ses, "call": call, "to": "workspace-write", "reason": "writes build/", "preview": preview, "no_wait": true}).str("approval_id")
	a, err := s.svc.Slack().Question(context.Background(), id)
	if err != nil {
		s.t.Fatal(err)
	}
	return a
}

// signed posts body to path as Slack does: X-Slack-Request-Timestamp and
// X-Slack-Signature (v0=HMAC-SHA256 of "v0:<ts>:<body>").
func (s *slackAPI) signed(path, body string, at time.Time, secret string) (int, []byte) {
	s.t.Helper()
	ts := strconv.FormatInt(at.Unix(), 10)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte("v0:" + ts + ":" + body))
	return s.raw(path, body, ts, "v0="+hex.EncodeToString(mac.Sum(nil)))
}

func (s *slackAPI) raw(path, body, ts, sig string) (int, []byte) {
	s.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, s.srv.URL+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Slack-Request-Timestamp", ts)
	req.Header.Set("X-Slack-Signature", sig)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func (s *slackAPI) command(team, user, text string) map[string]any {
	s.t.Helper()
	form := url.Values{"command": {"/dont"}, "text": {text}, "team_id": {team}, "user_id": {user}, "response_url": {s.slack.srv.URL + "/commands/1"}}
	status, b := s.signed("/v1/slack/commands", form.Encode(), time.Now(), slackSecret)
	var m map[string]any
	if status != 200 || json.Unmarshal(b, &m) != nil {
		s.t.Fatalf("/dont %s: %d %s", text, status, b)
	}
	return m
}

// click is the recorded block_actions payload (testdata/slack) with the
// clicking user, the button and its value put in.
func (s *slackAPI) click(team, user, action, value string) string {
	s.t.Helper()
	raw, err := os.ReadFile("testdata/slack/block_actions.json")
	if err != nil {
		s.t.Fatal(err)
	}
	var p map[string]any
	if err := json.Unmarshal(raw, &p); err != nil {
		s.t.Fatal(err)
	}
	p["user"].(map[string]any)["id"], p["user"].(map[string]any)["team_id"] = user, team
	p["team"].(map[string]any)["id"] = team
	p["response_url"] = s.slack.srv.URL + "/actions/T3MDE/1/x"
	act := p["actions"].([]any)[0].(map[string]any)
	act["action_id"], act["value"] = action, value
	b, _ := json.Marshal(p)
	return url.Values{"payload": {string(b)}}.Encode()
}

func (s *slackAPI) interact(body string) (int, []byte) {
	s.t.Helper()
	return s.signed("/v1/slack/interactions", body, time.Now(), slackSecret)
}

func (s *slackAPI) stored(id string) approvals.Approval {
	s.t.Helper()
	a, err := s.svc.Slack().Question(context.Background(), id)
	if err != nil {
		s.t.Fatal(err)
	}
	return a
}

func TestAQuestionsSlackMessageCarriesApproveWithAConfirmationRefuseAndOpenInDont(t *testing.T) {
	s := newSlackAPI(t)
	_, blocks := slackapp.Question(s.question, "https://dont.example")
	b, _ := json.Marshal(blocks)
	var got []map[string]any
	_ = json.Unmarshal(b, &got)
	actions := got[len(got)-1]["elements"].([]any)
	if len(actions) != 3 {
		t.Fatalf("buttons: %s", b)
	}
	approve := actions[0].(map[string]any)
	if approve["action_id"] != slackapp.ActionApprove || approve["confirm"] == nil || approve["value"] != slackapp.ButtonValue(s.question) {
		t.Fatalf("approve: %v", approve)
	}
	if !strings.Contains(string(b), "Deadline: "+s.question.Deadline.UTC().Format(time.RFC3339)) || !strings.Contains(string(b), "Command: make build") {
		t.Fatalf("the message does not show the deadline and the command: %s", b)
	}
	if open := actions[2].(map[string]any); !strings.HasPrefix(open["url"].(string), "https://dont.example/approvals#") {
		t.Fatalf("open in dont: %v", open)
	}
}

func TestALinkedApproversSlackApproveAnswersAsThemAndUpdatesTheMessageInPlace(t *testing.T) {
	s := newSlackAPI(t)
	status, _ := s.interact(s.click("T3MDE", "U0CA5", slackapp.ActionApprove, slackapp.ButtonValue(s.question)))
	if status != 200 {
		t.Fatalf("click: %d", status)
	}
	a := s.stored(s.question.ID)
	if a.Verdict != approvals.Approved || a.AnsweredBy != s.approver {
		t.Fatalf("the question: %s by %q, want approved by %s", a.Verdict, a.AnsweredBy, s.approver)
	}
	posts := s.slack.all()
	last := posts[len(posts)-1]
	if last["replace_original"] != true || !strings.Contains(last["text"].(string), "Approved by "+s.approver) || strings.Contains(toJSON(last), slackapp.ActionApprove) {
		t.Fatalf("the message was not replaced by its ending: %v", last)
	}
}

func TestASlackRefuseEndsTheQuestionRefusedAndSaysSo(t *testing.T) {
	s := newSlackAPI(t)
	s.interact(s.click("T3MDE", "U0CA5", slackapp.ActionRefuse, slackapp.ButtonValue(s.question)))
	if a := s.stored(s.question.ID); a.Verdict != approvals.Refused || a.AnsweredBy != s.approver {
		t.Fatalf("the question: %s by %q", a.Verdict, a.AnsweredBy)
	}
	posts := s.slack.all()
	if last := posts[len(posts)-1]; last["replace_original"] != true || !strings.Contains(last["text"].(string), "Refused by "+s.approver) {
		t.Fatalf("the ending: %v", last)
	}
}

func toJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

// The attacks (docs/security.md) run on every transport: attacktest.RunSlack
// (attack_test.go here, cli/dont, localstack/integration).

func TestALinkCodeWorksOnceAndOnlyFromAnApproverToken(t *testing.T) {
	s := newSlackAPI(t)
	code := s.linkCode(s.tokens["approver"])
	if r := s.command("T3MDE", "U0EVE", "link "+code); !strings.HasPrefix(r["text"].(string), "Linked") {
		t.Fatalf("first use: %v", r)
	}
	if r := s.command("T3MDE", "U0MAL", "link "+code); !strings.HasPrefix(r["text"].(string), "Not linked") {
		t.Fatalf("a code used twice linked: %v", r)
	}
	if r := s.command("T3MDE", "U0MAL", "link dontlink_guessed"); !strings.HasPrefix(r["text"].(string), "Not linked") {
		t.Fatalf("a guessed code linked: %v", r)
	}
	for _, role := range []string{"harness", "admin"} {
		if r := s.call(s.tokens[role], "approvals.slack-link", nil); r.status != http.StatusForbidden || r.code() != "forbidden" {
			t.Fatalf("a %s token made a link code: %d %s", role, r.status, r.raw)
		}
	}
}

// fakeWebAPI stands in for Slack's Web API: chat.postMessage,
// chat.update, auth.test and conversations.history answer with the
// responses recorded from Slack's documentation (testdata/slack), and
// every call is kept. A post it lands is in the channel's history (the
// page after the recorded one) with the metadata it was posted with.
type fakeWebAPI struct {
	srv   *httptest.Server
	mu    sync.Mutex
	calls []url.Values // with "_method"
	// landed are the messages in the channel besides the recorded ones:
	// what was posted, and what another app planted.
	landed []map[string]any
	// dropAnswers and failBefore are how many next posts land with
	// their answer lost (the connection closes before it), and how many
	// fail before they reach the channel (a 500).
	dropAnswers, failBefore int
}

// slackBotID is the bot of the recorded responses (auth_test.json,
// chat_postMessage.json); slackPostTS is the ts every post gets.
const (
	slackBotID  = "B123ABC456"
	slackPostTS = "1503435956.000247"
)

func newFakeWebAPI(t *testing.T) *fakeWebAPI {
	f := &fakeWebAPI{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		method := strings.TrimPrefix(r.URL.Path, "/api/")
		_ = r.ParseForm()
		if r.Header.Get("Authorization") != "Bearer xoxb-test" && r.PostForm.Get("token") != "xoxb-test" {
			t.Errorf("%s without the bot token", method)
		}
		form := r.PostForm
		form.Set("_method", method)
		f.mu.Lock()
		f.calls = append(f.calls, form)
		var drop bool
		switch {
		case method == "chat.postMessage" && f.failBefore > 0:
			f.failBefore--
			f.mu.Unlock()
			http.Error(w, "the post failed before the channel", http.StatusInternalServerError)
			return
		case method == "chat.postMessage":
			f.landed = append(f.landed, map[string]any{"type": "message", "subtype": "bot_message", "bot_id": slackBotID,
				"text": form.Get("text"), "ts": slackPostTS, "blocks": json.RawMessage(form.Get("blocks")), "metadata": json.RawMessage(cmp.Or(form.Get("metadata"), "{}"))})
			drop = f.dropAnswers > 0
			f.dropAnswers = max(f.dropAnswers-1, 0)
		case method == "conversations.history" && form.Get("cursor") != "":
			page, _ := json.Marshal(map[string]any{"ok": true, "messages": f.landed, "has_more": false, "pin_count": 0})
			f.mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(page)
			return
		}
		f.mu.Unlock()
		if drop {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err != nil {
				t.Error(err)
				return
			}
			_ = conn.Close() // landed, but its answer never arrives
			return
		}
		b, err := os.ReadFile("testdata/slack/" + strings.ReplaceAll(method, ".", "_") + ".json")
		if err != nil {
			http.Error(w, "unknown method", http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(b)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeWebAPI) all() []url.Values {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]url.Values(nil), f.calls...)
}

// posted are the messages in the channel that this app posted for
// question id (its buttons name it).
func (f *fakeWebAPI) posted(id string) []map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []map[string]any
	for _, m := range f.landed {
		if m["bot_id"] == slackBotID && strings.Contains(string(m["blocks"].(json.RawMessage)), id) {
			out = append(out, m)
		}
	}
	return out
}

func TestAQuestionIsPostedToSlackAndUpdatedInPlaceWhenItEndsElsewhere(t *testing.T) {
	s := newSlackAPI(t)
	web := newFakeWebAPI(t)
	s.svc.HooksConfig = service.HooksConfig{Store: s.store, Sender: slackapp.Sender{
		Client: slackapp.NewClient("xoxb-test", web.srv.URL+"/api/", nil), Messages: s.store, PublicURL: "https://dont.example"}}
	if r := s.confirmed(s.tokens["admin"], "hooks.add", map[string]any{"url": "slack-app:C0CA5", "events": []string{"approval.asked", "approval.ended"}}); r.status != 200 {
		t.Fatalf("hooks add: %d %s", r.status, r.raw)
	}
	deliver := func() {
		res, err := s.svc.Hooks.Deliver(context.Background(), 10)
		if err != nil || res.Attempted != res.Delivered {
			l, _ := s.svc.Hooks.List(context.Background())
			t.Fatalf("deliver: %+v %v %s", res, err, toJSON(l))
		}
	}
	for i, end := range []struct {
		name string
		end  func(id string)
		want string
	}{
		{"refused at the CLI or page", func(id string) {
			if _, _, err := s.svc.Escalations.Refuse(context.Background(), id, "not now", "tok:person"); err != nil {
				t.Fatal(err)
			}
		}, "Refused by tok:person: not now"},
		{"cancelled by its requester", func(id string) {
			if _, _, err := s.svc.Escalations.Cancel(context.Background(), id, "gave up", "tok:agent"); err != nil {
				t.Fatal(err)
			}
		}, "Cancelled by tok:agent: gave up"},
	} {
		q := s.ask("e"+strconv.Itoa(i), "make build")
		deliver()
		calls := web.all()
		post := calls[len(calls)-1]
		if post.Get("_method") != "chat.postMessage" || post.Get("channel") != "C0CA5" || !strings.Contains(post.Get("blocks"), slackapp.ButtonValue(q)) {
			t.Fatalf("%s: the question was not posted with its buttons: %v", end.name, post)
		}
		end.end(q.ID)
		deliver()
		calls = web.all()
		update := calls[len(calls)-1]
		if update.Get("_method") != "chat.update" || update.Get("ts") != "1503435956.000247" || update.Get("channel") != "C0CA5" ||
			!strings.Contains(update.Get("blocks"), end.want) || strings.Contains(update.Get("blocks"), slackapp.ActionApprove) {
			t.Fatalf("%s: the message was not updated in place to say %q: %v", end.name, end.want, update)
		}
	}
}

// postingToSlack wires the Slack app's sender to web and adds the hook
// that posts questions to channel C0CA5; its deliver runs one delivery
// pass a minute after the last (past any retry's backoff) and returns
// how many attempts were delivered.
func (s *slackAPI) postingToSlack(web *fakeWebAPI) (deliver func() service.DeliverResult) {
	s.t.Helper()
	s.svc.HooksConfig = service.HooksConfig{Store: s.store, Sender: slackapp.Sender{
		Client: slackapp.NewClient("xoxb-test", web.srv.URL+"/api/", nil), Messages: s.store, PublicURL: "https://dont.example"}}
	if r := s.confirmed(s.tokens["admin"], "hooks.add", map[string]any{"url": "slack-app:C0CA5", "events": []string{"approval.asked", "approval.ended"}}); r.status != 200 {
		s.t.Fatalf("hooks add: %d %s", r.status, r.raw)
	}
	return func() service.DeliverResult {
		s.t.Helper()
		s.now.Add(int64(time.Minute))
		res, err := s.svc.Hooks.Deliver(context.Background(), 10)
		if err != nil {
			s.t.Fatal(err)
		}
		return res
	}
}

// A question's post is recorded as begun before it is made, and the
// message carries the question's id: a retry finds a post whose answer
// was lost in the channel's history instead of posting again, and posts
// again only when the first never reached the channel.
func TestAQuestionWhosePostsAnswerWasLostIsInSlackOnce(t *testing.T) {
	for _, tc := range []struct {
		name                    string
		dropAnswers, failBefore int
	}{
		{"the post landed and its answer was lost", 1, 0},
		{"the post failed before the channel", 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSlackAPI(t)
			web := newFakeWebAPI(t)
			deliver := s.postingToSlack(web)
			web.mu.Lock()
			web.dropAnswers, web.failBefore = tc.dropAnswers, tc.failBefore
			web.mu.Unlock()
			q := s.ask("lost", "make build")
			if res := deliver(); res.Attempted != 1 || res.Delivered != 0 {
				t.Fatalf("the first attempt: %+v, want one attempt that failed", res)
			}
			if res := deliver(); res.Attempted != 1 || res.Delivered != 1 {
				t.Fatalf("the retry: %+v, want it delivered", res)
			}
			if got := web.posted(q.ID); len(got) != 1 {
				t.Fatalf("the question is in the channel %d times, want once", len(got))
			}
			if _, _, err := s.svc.Escalations.Refuse(context.Background(), q.ID, "not now", "tok:person"); err != nil {
				t.Fatal(err)
			}
			if res := deliver(); res.Delivered != 1 {
				t.Fatalf("the ending: %+v", res)
			}
			calls := web.all()
			if update := calls[len(calls)-1]; update.Get("_method") != "chat.update" || update.Get("ts") != slackPostTS {
				t.Fatalf("the ending did not update the one message in place: %v", update)
			}
		})
	}
}

// Only a message of this app's own bot stands for a question's post: a
// message another app (or a user's token) put in the channel with the
// question's metadata does not keep the real question from being posted.
func TestAMessageAnotherAppPlantsWithAQuestionsMetadataDoesNotStandInForItsPost(t *testing.T) {
	s := newSlackAPI(t)
	web := newFakeWebAPI(t)
	deliver := s.postingToSlack(web)
	q := s.ask("planted", "make build")
	web.mu.Lock()
	web.failBefore = 1
	web.landed = append(web.landed, map[string]any{"type": "message", "subtype": "bot_message", "bot_id": "B0AGENT", "text": "Approve?",
		"ts": "1503435999.000001", "metadata": json.RawMessage(`{"event_type":"dont_question","event_payload":{"approval_id":"` + q.ID + `"}}`)})
	web.mu.Unlock()
	if res := deliver(); res.Delivered != 0 {
		t.Fatalf("the first attempt: %+v, want it failed", res)
	}
	if res := deliver(); res.Delivered != 1 {
		t.Fatalf("the retry: %+v", res)
	}
	if got := web.posted(q.ID); len(got) != 1 {
		t.Fatalf("the question was posted %d times, want once beside the planted message", len(got))
	}
	if _, _, err := s.svc.Escalations.Refuse(context.Background(), q.ID, "not now", "tok:person"); err != nil {
		t.Fatal(err)
	}
	deliver()
	calls := web.all()
	if update := calls[len(calls)-1]; update.Get("_method") != "chat.update" || update.Get("ts") != slackPostTS {
		t.Fatalf("the ending went to another message than the app's own: %v", update)
	}
}
