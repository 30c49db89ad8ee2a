package sqlite_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/hooks"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/spawn"
	"github.com/dont-cli/dont/internal/store/sqlite"
	"github.com/dont-cli/dont/internal/tools"
)

// How the store grows: the bytes dont.db gains per claim, per spawn
// lifecycle (assume, then the callback), per escalation question asked,
// per spawn issued with and without a webhook delivery queued, and per Idempotency-Key record, each
// measured on a fresh file (its size after the last close's checkpoint,
// less the size before). The numbers are docs/design.md#storage-health's;
// the bounds keep them from growing unnoticed.
func TestHowTheStoreGrowsPerRecord(t *testing.T) {
	// Enough records that the per-page overhead averages out, few enough
	// for the short run (a 1000-record run gave the same numbers within
	// a few percent: docs/design.md#storage-health).
	const n = 250
	ctx := context.Background()
	claims := func(t *testing.T, svc *service.Service, n int) []string {
		var ids []string
		for i := 0; i < n; i++ {
			res, err := tools.Call(ctx, svc, "conclude", map[string]any{"statement": fmt.Sprintf("claim %d: water boils at 100 C at sea level", i)})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, res.Data.(service.EntityView).ID)
		}
		return ids
	}
	for _, c := range []struct {
		name  string
		limit int64 // bytes per record, at most
		// setup runs before the measured part; grow makes n records.
		setup func(t *testing.T, st *sqlite.Store, svc *service.Service) any
		grow  func(t *testing.T, st *sqlite.Store, svc *service.Service, state any)
	}{
		{"claim (conclude)", 2048, nil, func(t *testing.T, _ *sqlite.Store, svc *service.Service, _ any) { claims(t, svc, n) }},
		{"spawn lifecycle (assume and callback)", 8192,
			func(t *testing.T, _ *sqlite.Store, svc *service.Service) any { return claims(t, svc, n) },
			func(t *testing.T, _ *sqlite.Store, svc *service.Service, state any) {
				for _, id := range state.([]string) {
					r, err := tools.Call(ctx, svc, "assume", map[string]any{"id": id, "mode": string(spawn.ModeHarness)})
					if err != nil {
						t.Fatal(err)
					}
					var req struct {
						RequestID string `json:"request_id"`
					}
					json.Unmarshal(r.Data.(json.RawMessage), &req)
					if _, err := tools.Call(ctx, svc, "dismiss", map[string]any{"id": id, "evidence": []string{"https://example.org/boiling"}, "request_id": req.RequestID}); err != nil {
						t.Fatal(err)
					}
				}
			}},
		{"escalation question asked (approval and its frame)", 4096,
			func(t *testing.T, _ *sqlite.Store, svc *service.Service) any {
				res, err := svc.Escalations.OpenSession(ctx, service.OpenSessionInput{Tier: "read-only"})
				if err != nil {
					t.Fatal(err)
				}
				return res.ID
			},
			func(t *testing.T, _ *sqlite.Store, svc *service.Service, state any) {
				for i := 0; i < n; i++ {
					if i%50 == 0 { // an approver reads the frames, so that a question may be asked
						if _, err := svc.Escalations.Frames(ctx, service.FramesInput{SessionID: state.(string), Subscriber: "approver"}); err != nil {
							t.Fatal(err)
						}
					}
					if _, _, err := svc.Escalations.Escalate(ctx, service.EscalateInput{SessionID: state.(string), CallID: fmt.Sprint("call-", i), To: "workspace-write", Reason: "writes the build", NoWait: true}); err != nil {
						t.Fatal(err)
					}
				}
			}},
		{"spawn issued (assume)", 4096,
			func(t *testing.T, _ *sqlite.Store, svc *service.Service) any { return claims(t, svc, n) },
			func(t *testing.T, _ *sqlite.Store, svc *service.Service, state any) {
				assumeAll(t, svc, state.([]string))
			}},
		{"spawn issued with one webhook delivery queued", 8192,
			func(t *testing.T, _ *sqlite.Store, svc *service.Service) any {
				if _, err := svc.Hooks.Add(ctx, service.HookAddInput{URL: "http://127.0.0.1:9/hook", Events: []string{string(hooks.SpawnRequested)}}); err != nil {
					t.Fatal(err)
				}
				return claims(t, svc, n)
			},
			func(t *testing.T, _ *sqlite.Store, svc *service.Service, state any) {
				assumeAll(t, svc, state.([]string))
			}},
		{"Idempotency-Key record (1 KiB response)", 2048 + 1024, nil,
			func(t *testing.T, st *sqlite.Store, _ *service.Service, _ any) {
				body, now := make([]byte, 1024), time.Now()
				rand.NewChaCha8([32]byte{}).Read(body) // incompressible, as a real response's ids and hashes largely are
				for i := 0; i < n; i++ {
					key := fmt.Sprintf("key-%06d-0123456789abcdef", i)
					if err := st.Remember(ctx, key, "fingerprint-0123456789abcdef0123456789abcdef", 200, body, now); err != nil {
						t.Fatal(err)
					}
				}
			}},
	} {
		path := filepath.Join(t.TempDir(), "dont.db")
		open := func() (*sqlite.Store, *service.Service) {
			st, err := sqlite.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			loopback := hooks.AddrPolicy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}
			return st, service.New(service.Deps{ToolNames: tools.Names(), Store: st, Confirmations: st, Tokens: st, Author: "growth", SpawnTimeout: time.Hour,
				Approvals: service.Approvals{Store: st}, HooksConfig: service.HooksConfig{Store: st, Policy: loopback}})
		}
		st, err := sqlite.Create(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		st.Close()
		st, svc := open()
		var state any
		if c.setup != nil {
			state = c.setup(t, st, svc)
		}
		st.Close()
		before := fileSize(t, path)
		st, svc = open()
		c.grow(t, st, svc, state)
		st.Close()
		per := (fileSize(t, path) - before) / int64(n)
		t.Logf("%s: %d bytes each (%d records)", c.name, per, n)
		if per > c.limit {
			t.Errorf("%s: the store grows %d bytes each, more than %d", c.name, per, c.limit)
		}
	}
}

// assumeAll issues a spawn on each claim.
func assumeAll(t *testing.T, svc *service.Service, ids []string) {
	t.Helper()
	for _, id := range ids {
		if _, err := tools.Call(context.Background(), svc, "assume", map[string]any{"id": id, "mode": string(spawn.ModeHarness)}); err != nil {
			t.Fatal(err)
		}
	}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}
