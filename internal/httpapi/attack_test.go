package httpapi_test

import (
	"context"
	"testing"

	"github.com/dont-cli/dont/internal/attacktest"
	"github.com/dont-cli/dont/internal/service"
)

// The trust boundary's attacks against the in-process handler.
func TestTheTrustBoundaryOverHTTP(t *testing.T) {
	a := newAPI(t)
	a.svc.Approvals = service.Approvals{Store: a.store}
	attacktest.Run(t, attacktest.Target{
		Post: func(t *testing.T, token, tool string, body []byte, headers map[string]string) attacktest.Reply {
			var h []string
			for k, v := range headers {
				h = append(h, k, v)
			}
			r := a.do("POST", "/v1/tools/"+tool, token, body, h...)
			return attacktest.Reply{Status: r.status, Env: r.env, Raw: string(r.raw)}
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
