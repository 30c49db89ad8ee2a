package dynamo_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/idempotency"
	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/spawn"
	"github.com/dont-cli/dont/internal/store/dynamo"
	"github.com/dont-cli/dont/internal/tools"
)

// A callback token's keyed resolution keeps its response on the
// resolution's own put: one conditional put, no record item and no
// write after it (a lifecycle of 7 write units, docs/aws-cost.md), read
// back byte for byte. A response that would not read back unchanged is
// remembered as before, after the commit.
func TestACallbacksKeyRidesOnTheResolutionItCommits(t *testing.T) {
	needServer(t)
	for _, c := range []struct {
		name   string
		body   string
		rides  bool
		writes float64
	}{
		{"compact with a line end and HTML characters", `{"ok":true,"data":{"note":"<a> & <b>"}}` + "\n", true, 4},
		{"not compact", "{ \"ok\": true }\n", false, 4},
	} {
		t.Run(c.name, func(t *testing.T) {
			counter := newCounter()
			st := dynamo.New(newClient(nil, counter), table, "ride-"+randomName())
			now := t0
			svc := service.New(service.Deps{ToolNames: tools.Names(), Store: st, Confirmations: st, Tokens: st, SpawnTimeout: time.Hour, Clock: func() time.Time { return now }})
			res, err := svc.Ledger.Conclude(ctx, service.ConcludeInput{Statement: "a callback's key rides on its resolution"})
			if err != nil {
				t.Fatal(err)
			}
			r, _, err := svc.Spawns.Request(ctx, service.SpawnInput{Kind: spawn.Assume, EntityID: res.ID, Mode: spawn.ModeHarness})
			if err != nil {
				t.Fatal(err)
			}
			rid := requestOf(t, r).RequestID
			name := idempotency.Scope("", rid, res.ID, "dismiss") + "/k1"
			key := &idempotency.Pending{Name: name, Fingerprint: "fp1", MayDefer: true, Clock: func() time.Time { return now },
				Respond: func(any, []envelope.Warning) (int, []byte, bool) { return 200, []byte(c.body), true }}
			counter.Reset()
			out, _, err := svc.Spawns.Resolve(ctx, service.TransitionInput{Action: ledger.Verify, EntityID: res.ID,
				Evidence: []string{"https://example.org/e"}, RequestID: rid, Key: key})
			if err != nil || out.Resolution == nil {
				t.Fatalf("the callback: %v", err)
			}
			_, _, sent := key.Sent()
			if sent != c.rides {
				t.Fatalf("committed with the resolution: %v, want %v", sent, c.rides)
			}
			if got := counter.Total().WriteUnits; got != c.writes {
				t.Fatalf("the resolution wrote %.1f units, want %.1f: its put, its pending entry leaving, the claim's status entry moving (2)", got, c.writes)
			}
			rec, err := st.Lookup(ctx, name, now)
			if !c.rides {
				if err != nil || rec != nil {
					t.Fatalf("a response not kept on the resolution was found: %+v %v", rec, err)
				}
				return
			}
			if err != nil || rec == nil || !rec.Done || rec.Status != 200 || rec.Fingerprint != "fp1" || !bytes.Equal(rec.Body, []byte(c.body)) {
				t.Fatalf("the record read back: %+v %v", rec, err)
			}
			if other, err := st.Lookup(ctx, name+"-other", now); err != nil || other != nil {
				t.Fatalf("another key of the same callback found a record: %+v %v", other, err)
			}
			if rec, err := st.Lookup(ctx, name, now.Add(idempotency.Window+time.Second)); err != nil || rec != nil {
				t.Fatalf("a record past the window: %+v %v", rec, err)
			}
		})
	}
}
