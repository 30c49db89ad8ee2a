package httpapi_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/dont-cli/dont/internal/approvals"
	"github.com/dont-cli/dont/internal/attacktest"
	"github.com/dont-cli/dont/internal/auth"
	"github.com/dont-cli/dont/internal/httpapi"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/webauthnrp"
)

// attackBurst is the per-token burst the attack suite's server runs with,
// at a rate that refills nothing during the run.
const attackBurst = 100

// lookedUp counts the presented tokens that reach the backend, which reads
// the token store for each.
type lookedUp struct {
	httpapi.Backend
	n atomic.Int64
}

func (b *lookedUp) Authenticate(ctx context.Context, presented string) (auth.Principal, httpapi.Project, error) {
	b.n.Add(1)
	return b.Backend.Authenticate(ctx, presented)
}

// The trust boundary's attacks against the in-process handler.
func TestTheTrustBoundaryOverHTTP(t *testing.T) {
	var backend *lookedUp
	a := newAPI(t, func(o *httpapi.Options) {
		backend = &lookedUp{Backend: o.Backend}
		o.Backend, o.RatePerSecond, o.Burst = backend, 0.001, attackBurst
	})
	a.svc.Approvals = service.Approvals{Store: a.store}
	attacktest.Run(t, attacktest.Target{
		Post: func(t *testing.T, token, tool string, body []byte, headers map[string]string) attacktest.Reply {
			var h []string
			for k, v := range headers {
				h = append(h, k, v)
			}
			r := a.do("POST", "/v1/tools/"+tool, token, body, h...)
			return attacktest.Reply{Status: r.status, Env: r.env, Raw: string(r.raw), Header: r.header}
		},
		Token: func(t *testing.T, role string) string {
			res, err := a.svc.Credentials.Create(context.Background(), role, role)
			if err != nil {
				t.Fatal(err)
			}
			return res.Secret
		},
		TokenBurst: attackBurst,
		Lookups:    backend.n.Load,
	})
}

// The passkey attacks against the in-process handler, its project
// approving danger-full-access only with a passkey.
func TestThePasskeyBoundaryOverHTTP(t *testing.T) {
	a := newAPI(t)
	a.svc.Approvals = service.Approvals{Store: a.store, PasskeyRequiredFrom: approvals.DangerFullAccess}
	a.svc.PasskeyRP = webauthnrp.New
	attacktest.RunPasskeys(t, attacktest.Target{
		Post: func(t *testing.T, token, tool string, body []byte, headers map[string]string) attacktest.Reply {
			var h []string
			for k, v := range headers {
				h = append(h, k, v)
			}
			r := a.do("POST", "/v1/tools/"+tool, token, body, h...)
			return attacktest.Reply{Status: r.status, Env: r.env, Raw: string(r.raw), Header: r.header}
		},
		Token: func(t *testing.T, role string) string {
			res, err := a.svc.Credentials.Create(context.Background(), role, role)
			if err != nil {
				t.Fatal(err)
			}
			return res.Secret
		},
	})
}

// The Slack app's attacks against the in-process handler, with a fake
// Slack behind response_url.
func TestTheSlackBoundaryOverHTTP(t *testing.T) {
	fake := newFakeSlack(t)
	a := newAPI(t, func(o *httpapi.Options) {
		o.Slack = &httpapi.SlackOptions{SigningSecret: slackSecret, PublicURL: "https://dont.example", ResponseURLPrefix: fake.srv.URL + "/"}
	})
	attacktest.RunSlack(t, attacktest.SlackTarget{
		Target: attacktest.Target{
			Post: func(t *testing.T, token, tool string, body []byte, headers map[string]string) attacktest.Reply {
				var h []string
				for k, v := range headers {
					h = append(h, k, v)
				}
				r := a.do("POST", "/v1/tools/"+tool, token, body, h...)
				return attacktest.Reply{Status: r.status, Env: r.env, Raw: string(r.raw), Header: r.header}
			},
			Token: func(t *testing.T, role string) string {
				res, err := a.svc.Credentials.Create(context.Background(), role, role)
				if err != nil {
					t.Fatal(err)
				}
				return res.Secret
			},
		},
		SigningSecret: slackSecret,
		PostSlack:     attacktest.PostSlackTo(a.srv.URL),
		ResponseURL:   fake.srv.URL + "/actions/T3MDE/1/x",
		Told:          fake.all,
	})
}
