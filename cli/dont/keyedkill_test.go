package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/confirm"
)

// recordOp is one keyed call whose whole write is one record (a hook, a
// token, a session), retried with its key until it is answered.
type recordOp struct {
	key, tool, token, idField string
	args                      map[string]any
	// id is the record the first 2xx answer named; every later answer to
	// the key must name the same one.
	id  string
	cut int
}

// SIGKILL `dont serve` while keyed hooks add, tokens create and sessions
// open requests run, each write held open inside its transaction
// (DONT_FAULT_COMMIT_DELAY): half the kills land inside a write (its
// transaction rolls back: nothing), the others once answers are flowing
// (a write may have committed with its answer lost: the complete record).
// Every request cut by a kill is retried with its key after the restart:
// it is answered 2xx — applied once, or replayed — never "in progress"
// or "outcome unknown", and each key made exactly one record.
func TestKeyedOneRecordWritesApplyExactlyOnceAcrossSIGKILLsOfServe(t *testing.T) {
	t.Parallel()
	kills := 12
	if testing.Short() {
		kills = 6
	}
	p := newProject(t)
	admin, harness := p.token("admin"), p.token("harness")
	client := &http.Client{Timeout: 20 * time.Second}
	defer client.CloseIdleConnections()
	call := func(endpoint, token, tool string, body []byte, key string) (status int, data map[string]any, replayed, ok bool) {
		req, _ := http.NewRequest(http.MethodPost, endpoint+"/v1/tools/"+tool, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(confirm.CapsHeader, confirm.CLICaps)
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, nil, false, false // the server died: the outcome is unknown
		}
		defer resp.Body.Close()
		var env struct {
			Data map[string]any `json:"data"`
		}
		if json.NewDecoder(resp.Body).Decode(&env) != nil {
			return 0, nil, false, false // cut mid-body
		}
		return resp.StatusCode, env.Data, resp.Header.Get("Idempotent-Replayed") == "true", true
	}
	send := func(endpoint string, op *recordOp) (status int, data map[string]any, replayed, ok bool) {
		body, _ := json.Marshal(map[string]any{"args": op.args, "cli_confirmed": true})
		return call(endpoint, op.token, op.tool, body, op.key)
	}
	list := func(endpoint, tool, field string) int {
		status, data, _, ok := call(endpoint, admin, tool, []byte(`{"args":{}}`), "")
		items, isList := data[field].([]any)
		if !ok || status != 200 || !isList {
			t.Fatalf("%s: %d %v", tool, status, data)
		}
		return len(items)
	}
	kinds := []struct{ tool, token, idField, list, field string }{
		{"hooks.add", admin, "hook_id", "hooks.list", "hooks"},
		{"tokens.create", admin, "id", "tokens.list", "tokens"},
		{"sessions.open", harness, "session_id", "sessions.list", "sessions"},
	}
	newOp := func(w, i int) *recordOp {
		k := kinds[w]
		op := &recordOp{key: fmt.Sprintf("rec-%d-%d", w, i), tool: k.tool, token: k.token, idField: k.idField}
		switch k.tool {
		case "hooks.add":
			op.args = map[string]any{"url": fmt.Sprintf("https://hooks.example.com/%d", i), "events": []string{"approval.asked"}}
		case "tokens.create":
			op.args = map[string]any{"role": "harness", "name": fmt.Sprintf("t%d", i)}
		default:
			op.args = map[string]any{"tier": "read-only", "name": fmt.Sprintf("s%d", i)}
		}
		return op
	}

	var mu sync.Mutex
	ops := make([][]*recordOp, len(kinds))
	next := make([]int, len(kinds))
	// record checks an answer to op: 2xx, and naming op's one record.
	record := func(op *recordOp, status int, data map[string]any, replayed bool) {
		mu.Lock()
		defer mu.Unlock()
		id, _ := data[op.idField].(string)
		switch {
		case status/100 != 2 || id == "":
			t.Errorf("%s (key %s): %d %v — a retry must apply the call once or replay it", op.tool, op.key, status, data)
		case op.id == "":
			op.id = id
		case id != op.id:
			t.Errorf("key %s answered %s, then %s", op.key, op.id, id)
		case !replayed:
			t.Errorf("key %s answered again without Idempotent-Replayed", op.key)
		}
	}
	tokensBefore := -1
	acked, killedInside := 0, 0
	for round := 0; round <= kills; round++ {
		last := round == kills
		delay := "DONT_FAULT_COMMIT_DELAY=40ms"
		if last {
			delay = "DONT_FAULT_COMMIT_DELAY=0"
		}
		srv := p.serve(t, delay)
		if tokensBefore < 0 {
			tokensBefore = list(srv.endpoint, "tokens.list", "tokens")
		}
		inside := round%2 == 0
		acks := make(chan struct{}, 64)
		var stop sync.WaitGroup
		for w := range kinds {
			stop.Add(1)
			go func() {
				defer stop.Done()
				for {
					mu.Lock()
					if next[w] == len(ops[w]) {
						ops[w] = append(ops[w], newOp(w, next[w]))
					}
					op := ops[w][next[w]]
					mu.Unlock()
					status, data, replayed, ok := send(srv.endpoint, op)
					if !ok {
						mu.Lock()
						op.cut++
						mu.Unlock()
						return // killed: op is retried, with its key, after the restart
					}
					record(op, status, data, replayed)
					mu.Lock()
					next[w]++
					done := last && next[w] >= 4
					mu.Unlock()
					select {
					case acks <- struct{}{}:
					default:
					}
					if done {
						return
					}
				}
			}()
		}
		if last {
			stop.Wait()
			// Every key once more: each replays its one record.
			for _, list := range ops {
				for _, op := range list {
					if op.id == "" {
						continue
					}
					status, data, replayed, ok := send(srv.endpoint, op)
					if !ok {
						t.Fatalf("replay of %s failed", op.key)
					}
					record(op, status, data, replayed)
				}
			}
			keys := 0
			for w, k := range kinds {
				answered := 0
				for _, op := range ops[w] {
					if op.id != "" {
						answered++
					}
				}
				keys += answered
				got := list(srv.endpoint, k.list, k.field)
				if k.tool == "tokens.create" {
					got -= tokensBefore
				}
				if got != answered {
					t.Errorf("%d records of %s for %d keys", got, k.tool, answered)
				}
			}
			srv.cmd.Process.Signal(syscall.SIGTERM)
			srv.cmd.Wait()
			retried := 0
			for _, list := range ops {
				for _, op := range list {
					if op.cut > 0 {
						retried++
					}
				}
			}
			t.Logf("%d SIGKILLs (%d inside a write) under %d keyed hooks add/tokens create/sessions open requests (%d acknowledged before a kill, %d cut by a kill and retried with their key): records counted by kind",
				kills, killedInside, keys, acked, retried)
			break
		}
		if inside {
			select {
			case <-srv.holding:
				killedInside++
			case <-time.After(60 * time.Second):
				t.Fatal("no keyed write held its transaction")
			}
		} else {
			for range 3 {
				select {
				case <-acks:
					acked++
				case <-time.After(60 * time.Second):
					t.Fatal("the keyed load made no progress")
				}
			}
		}
		if err := srv.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		srv.cmd.Wait()
		stop.Wait()
	}
}
