package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// acked is a write that got a 200: it must survive the crash.
type acked struct {
	entity, requestID, event string
}

// SIGKILL `dont serve` in the middle of a load run of full spawn
// lifecycles, restart it on the same SQLite file: every request that got a
// 200 is still there, and dont doctor --strict finds nothing.
func TestSIGKILLMidLoadLosesNoAcknowledgedWrite(t *testing.T) {
	t.Parallel()
	p := newProject(t, "DONT_SPAWN_TIMEOUT=500ms")
	token := p.token("harness")
	srv := p.serve(t)
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	defer client.CloseIdleConnections()
	call := func(endpoint, tool string, args map[string]any) (map[string]any, bool) {
		if args == nil { // "args" is an object: null is refused
			args = map[string]any{}
		}
		body, _ := json.Marshal(map[string]any{"args": args})
		req, _ := http.NewRequest(http.MethodPost, endpoint+"/v1/tools/"+tool, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return nil, false
		}
		defer resp.Body.Close()
		var env struct {
			Data map[string]any `json:"data"`
		}
		if json.NewDecoder(resp.Body).Decode(&env) != nil || resp.StatusCode != 200 {
			return nil, false
		}
		return env.Data, true
	}

	var mu sync.Mutex
	var acks []acked
	var stopped atomic.Bool
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stopped.Load(); i++ {
				d, ok := call(srv.endpoint, "conclude", map[string]any{"statement": fmt.Sprintf("claim %d/%d", w, i)})
				if !ok {
					return
				}
				id := d["id"].(string)
				mu.Lock()
				acks = append(acks, acked{entity: id, event: "concluded"})
				mu.Unlock()
				d, ok = call(srv.endpoint, "assume", map[string]any{"id": id, "mode": "harness"})
				if !ok {
					return
				}
				rid := d["request_id"].(string)
				mu.Lock()
				acks = append(acks, acked{entity: id, requestID: rid, event: "spawn_requested"})
				mu.Unlock()
				if i%3 == 2 {
					continue // left to time out
				}
				d, ok = call(srv.endpoint, "dismiss", map[string]any{"id": id, "evidence": []any{"https://example.org/x"}, "request_id": rid})
				if !ok {
					return
				}
				if res, _ := d["resolution"].(map[string]any); res["applied"] == true {
					mu.Lock()
					acks = append(acks, acked{entity: id, requestID: rid, event: "spawn_resolved"})
					mu.Unlock()
				}
			}
		}()
	}
	time.Sleep(1500 * time.Millisecond)
	if err := srv.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	srv.cmd.Wait()
	stopped.Store(true)
	wg.Wait()
	if len(acks) < 50 {
		t.Fatalf("only %d acknowledged writes before the kill: the load was too light to mean anything", len(acks))
	}

	restarted := p.serve(t)
	history := map[string][]any{}
	for _, a := range acks {
		h, ok := history[a.entity]
		if !ok {
			d, ok := call(restarted.endpoint, "show", map[string]any{"id": a.entity, "history": true})
			if !ok {
				t.Fatalf("acknowledged entity %s is gone after the restart", a.entity)
			}
			h, _ = d["history"].([]any)
			history[a.entity] = h
		}
		found := false
		for _, ev := range h {
			e := ev.(map[string]any)
			found = found || (e["kind"] == a.event && (a.requestID == "" || e["request_id"] == a.requestID))
		}
		if !found {
			t.Fatalf("acknowledged %s of %s (%s) was lost by the crash", a.event, a.entity, a.requestID)
		}
	}
	restarted.cmd.Process.Signal(syscall.SIGTERM)
	restarted.cmd.Wait()
	r := p.ok("doctor", "--strict")
	t.Logf("%d acknowledged writes on %d entities survived SIGKILL; doctor after restart: %v", len(acks), len(history), r.data())
}
