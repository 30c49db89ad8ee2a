package deployment_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dont-cli/dont/functions/internal/deployment"
	"github.com/dont-cli/dont/internal/auth"
	"github.com/dont-cli/dont/internal/httpapi"
	"github.com/dont-cli/dont/internal/idempotency"
	"github.com/dont-cli/dont/internal/rules"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/store/dynamo"
	"github.com/dont-cli/dont/internal/tools"
)

// lateBackend reads and claims keys late by a fixed offset: a retry made
// once the cut call's claim is stale.
type lateBackend struct {
	httpapi.Backend
	late time.Duration
}

func (b lateBackend) Authenticate(ctx context.Context, presented string) (auth.Principal, httpapi.Project, error) {
	p, proj, err := b.Backend.Authenticate(ctx, presented)
	proj.Idempotency = lateStore{proj.Idempotency, b.late}
	return p, proj, err
}

type lateStore struct {
	idempotency.Store
	late time.Duration
}

func (s lateStore) Claim(ctx context.Context, key, fp string, now time.Time) (*idempotency.Record, error) {
	return s.Store.Claim(ctx, key, fp, now.Add(s.late))
}

func (s lateStore) Lookup(ctx context.Context, key string, now time.Time) (*idempotency.Record, error) {
	r, err := s.Store.Lookup(ctx, key, now.Add(s.late))
	if r != nil {
		r.At = r.At.Add(-s.late)
	}
	return r, err
}

// On DynamoDB too, a keyed escalate whose function died after its
// question was asked and answered (here by the person's allow rule) is
// resumed by its retry once the claim is stale: the same question and its
// verdict, not idempotency-outcome-unknown and not a second question
// (which the ratchet would refuse).
func TestAKeyedEscalateWhoseFunctionDiesIsResumedOverTheLambdaAPI(t *testing.T) {
	needServer(t)
	set, err := rules.Load([]rules.Rule{{Name: "git-status", Decision: rules.Allow, Prefix: []string{"git", "status"}, Match: []string{"git status"}}})
	if err != nil {
		t.Fatal(err)
	}
	var now atomic.Int64
	now.Store(time.Now().UnixNano())
	backend := deployment.NewBackend(newClient(nil, nil), table, func(st *dynamo.Store) *service.Service {
		return service.New(service.Deps{ToolNames: tools.Names(), Store: st, Confirmations: st, Tokens: st, Project: st.Project(), SpawnTimeout: time.Hour, Author: "api",
			Approvals: service.Approvals{Store: st, Rules: set}, Clock: func() time.Time { return time.Unix(0, now.Load()).UTC() }})
	})
	project := "esc-dies-" + randomName()
	res, err := backend.Project(project).Service.Credentials.Create(ctx, auth.RoleHarness, "harness")
	if err != nil {
		t.Fatal(err)
	}
	h := res.Secret
	call := func(b httpapi.Backend, tool, body, key string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		httpapi.New(httpapi.Options{Backend: b, RatePerSecond: -1}).ServeHTTP(rec, keyedRequest("", h, tool, body, key))
		return rec
	}
	opened := call(backend, "sessions.open", `{"args":{"tier":"read-only"}}`, "ses-1")
	var ses struct {
		Data struct {
			SessionID string `json:"session_id"`
		} `json:"data"`
	}
	if opened.Code != 200 || json.Unmarshal(opened.Body.Bytes(), &ses) != nil {
		t.Fatalf("sessions.open: %d %s", opened.Code, opened.Body)
	}
	body := `{"args":{"session":"` + ses.Data.SessionID + `","call":"c1","to":"danger-full-access","reason":"see the tree","preview":"git status --short"}}`
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("the dying function answered")
			}
		}()
		httpapi.New(httpapi.Options{Backend: dyingBackend{backend}, RatePerSecond: -1}).
			ServeHTTP(dyingWriter{httptest.NewRecorder()}, keyedRequest("", h, "escalate", body, "esc-1"))
	}()
	again := call(lateBackend{backend, 2 * idempotency.StaleClaim}, "escalate", body, "esc-1")
	var v struct {
		Data struct {
			ApprovalID  string `json:"approval_id"`
			GrantedTier string `json:"granted_tier"`
		} `json:"data"`
	}
	if again.Code != 200 || json.Unmarshal(again.Body.Bytes(), &v) != nil || v.Data.GrantedTier != "danger-full-access" || v.Data.ApprovalID == "" {
		t.Fatalf("the retry once the claim is stale: %d %s", again.Code, again.Body)
	}
	list := call(backend, "approvals.list", `{"args":{"session":"`+ses.Data.SessionID+`"}}`, "")
	var l struct {
		Data struct {
			Approvals []any `json:"approvals"`
		} `json:"data"`
	}
	if json.Unmarshal(list.Body.Bytes(), &l) != nil || len(l.Data.Approvals) != 1 {
		t.Fatalf("the call has %d questions, want 1: %s", len(l.Data.Approvals), list.Body)
	}
}
