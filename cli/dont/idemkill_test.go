package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"reflect"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/store"
	"github.com/dont-cli/dont/internal/store/sqlite"
)

// keyedOp is one keyed write: retried with its key until it is answered.
type keyedOp struct {
	key, tool string
	args      map[string]any
	statement string // a conclude's: how its claims are counted
	// first is the data of the first 2xx answer; every later answer to the
	// key must be the same.
	first map[string]any
	// cut counts the attempts a kill cut before their answer.
	cut int
}

// SIGKILL `dont serve` again and again while keyed conclude and define
// requests run with every commit held open a moment
// (DONT_FAULT_COMMIT_DELAY, so that each kill lands inside a write), and
// retry every request whose answer was lost with its Idempotency-Key after
// the restart: every key is applied exactly once (one claim per
// statement), no retry is refused as "in progress", and every answer to a
// key (the first, the retries, a final replay) is the same response.
func TestKeyedWritesApplyExactlyOnceAcrossSIGKILLsOfServe(t *testing.T) {
	t.Parallel()
	kills, workers := 30, 6
	if testing.Short() {
		kills, workers = 6, 4
	}
	p := newProject(t)
	token := p.token("harness")
	client := &http.Client{Timeout: 20 * time.Second}
	defer client.CloseIdleConnections()
	type answer struct {
		status   int
		replayed bool
		data     map[string]any
	}
	call := func(endpoint string, op *keyedOp) (answer, bool) {
		body, _ := json.Marshal(map[string]any{"args": op.args})
		req, _ := http.NewRequest(http.MethodPost, endpoint+"/v1/tools/"+op.tool, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", op.key)
		resp, err := client.Do(req)
		if err != nil {
			return answer{}, false // the server died: the outcome is unknown
		}
		defer resp.Body.Close()
		var env struct {
			Data map[string]any `json:"data"`
		}
		if json.NewDecoder(resp.Body).Decode(&env) != nil {
			return answer{}, false // cut mid-body
		}
		return answer{status: resp.StatusCode, replayed: resp.Header.Get("Idempotent-Replayed") == "true", data: env.Data}, true
	}

	var mu sync.Mutex
	var ops [][]*keyedOp // per worker, in order
	next := make([]int, workers)
	for w := 0; w < workers; w++ {
		ops = append(ops, nil)
	}
	newOp := func(w, i int) *keyedOp {
		op := &keyedOp{key: fmt.Sprintf("key-%d-%d", w, i)}
		if i%2 == 0 {
			op.tool, op.statement = "conclude", fmt.Sprintf("keyed claim %d/%d", w, i)
			op.args = map[string]any{"statement": op.statement}
		} else {
			op.tool = "define"
			op.args = map[string]any{"curie": fmt.Sprintf("ex:K%dx%d", w, i), "doc": "a keyed term"}
		}
		return op
	}
	// record checks an answer to op against the first one.
	record := func(op *keyedOp, a answer) {
		mu.Lock()
		defer mu.Unlock()
		if a.status/100 != 2 {
			t.Errorf("%s %v (key %s): status %d %v — a retry must apply the call once or replay it", op.tool, op.args, op.key, a.status, a.data["code"])
			return
		}
		if op.first == nil {
			op.first = a.data
			return
		}
		if !reflect.DeepEqual(op.first, a.data) {
			t.Errorf("key %s answered %v, then %v", op.key, op.first, a.data)
		}
		if !a.replayed {
			t.Errorf("key %s answered again without Idempotent-Replayed", op.key)
		}
	}

	acked := 0
	for round := 0; round <= kills; round++ {
		last := round == kills
		srv := p.serve(t, "DONT_FAULT_COMMIT_DELAY=15ms")
		var roundAcks atomic.Int64
		enough := make(chan struct{})
		var once sync.Once
		var stop atomic.Bool
		var wg sync.WaitGroup
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for !stop.Load() {
					mu.Lock()
					if next[w] == len(ops[w]) {
						ops[w] = append(ops[w], newOp(w, next[w]))
					}
					op := ops[w][next[w]]
					mu.Unlock()
					a, ok := call(srv.endpoint, op)
					if !ok {
						mu.Lock()
						op.cut++
						mu.Unlock()
						return // killed: op is retried, with its key, after the restart
					}
					record(op, a)
					mu.Lock()
					next[w]++
					mu.Unlock()
					if roundAcks.Add(1) >= 6 {
						once.Do(func() { close(enough) })
					}
				}
			}()
		}
		select {
		case <-enough:
		case <-time.After(60 * time.Second):
			t.Fatal("the keyed load made no progress")
		}
		if last {
			stop.Store(true)
			wg.Wait()
			// Every key once more: each replays its first answer.
			for _, list := range ops {
				for _, op := range list {
					if op.first == nil {
						continue // created at the stop, never sent
					}
					a, ok := call(srv.endpoint, op)
					if !ok {
						t.Fatalf("replay of %s failed", op.key)
					}
					record(op, a)
				}
			}
			srv.cmd.Process.Signal(syscall.SIGTERM)
			srv.cmd.Wait()
			break
		}
		if err := srv.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		srv.cmd.Wait()
		stop.Store(true)
		wg.Wait()
		acked += int(roundAcks.Load())
	}

	// Count the claims by statement, in the store itself.
	st, err := sqlite.Open(filepath.Join(p.dir, ".dont", "dont.db"))
	if err != nil {
		t.Fatal(err)
	}
	claims, err := st.ListEntities(context.Background(), store.EntityFilter{Kind: ledger.KindClaim})
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	byStatement := map[string]int{}
	for _, c := range claims {
		byStatement[c.Statement]++
	}
	keys, retried := 0, 0
	for _, list := range ops {
		for _, op := range list {
			if op.first == nil {
				continue
			}
			keys++
			if op.cut > 0 {
				retried++
			}
			if op.statement != "" && byStatement[op.statement] != 1 {
				t.Errorf("key %s (%q) applied %d times", op.key, op.statement, byStatement[op.statement])
			}
		}
	}
	if len(claims) != keysOf(ops, "conclude") {
		t.Errorf("%d claims for %d keyed concludes", len(claims), keysOf(ops, "conclude"))
	}
	t.Logf("%d SIGKILLs under %d keyed conclude/define requests (%d acknowledged before a kill, %d cut by a kill and retried with their key): claims counted by statement",
		kills, keys, acked, retried)
}

// keysOf counts the answered keys of one tool.
func keysOf(ops [][]*keyedOp, tool string) int {
	n := 0
	for _, list := range ops {
		for _, op := range list {
			if op.tool == tool && op.first != nil {
				n++
			}
		}
	}
	return n
}
