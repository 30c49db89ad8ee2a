package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/lazyfs"
	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/store"
	"github.com/dont-cli/dont/internal/store/sqlite"
)

// powerLossRun is what a run of power losses saw.
type powerLossRun struct {
	rounds, acked, lost, indeterminate int
	dropped                            lazyfs.Stats // summed over the rounds
}

// Cut the power under dont serve and embedded CLI processes writing to
// one project, again and again: the project's .dont/ is on a lazy file
// system (internal/lazyfs) that, at each cut, drops every write not yet
// fsynced. After each cut every acknowledged conclude (a 2xx answer over
// HTTP, exit 0 from the CLI) is in the store, the store opens, and
// dont doctor --strict (SQLite's quick_check and the invariants) passes.
func TestAcknowledgedWritesSurviveAPowerLoss(t *testing.T) {
	t.Parallel()
	rounds, perRound := 5, 60
	if testing.Short() {
		rounds, perRound = 2, 20
	}
	run := cutPowerRepeatedly(t, nil, rounds, perRound)
	if run.lost > 0 {
		t.Errorf("%d of %d acknowledged writes lost across %d power losses", run.lost, run.acked, run.rounds)
	}
	if run.dropped.DroppedWrites == 0 {
		t.Errorf("the power losses dropped no unsynced write (%+v): the test cut nothing", run.dropped)
	}
	t.Logf("%d power losses under %d acknowledged concludes (%d more cut in flight): %d lost; the cuts undid %d unsynced writes in %d files; doctor --strict passed after each",
		run.rounds, run.acked, run.indeterminate, run.lost, run.dropped.DroppedWrites, run.dropped.DroppedFiles)
}

// The same power loss with the store at synchronous=NORMAL (a test
// build's DONT_FAULT_SYNCHRONOUS) loses acknowledged writes: the test
// catches a store that acknowledges before its WAL is synced. The store
// still opens and passes doctor (NORMAL loses commits, never consistency).
func TestAPowerLossUnderSynchronousNormalLosesAcknowledgedWrites(t *testing.T) {
	t.Parallel()
	// Few enough writes that no checkpoint (which syncs the WAL) runs.
	run := cutPowerRepeatedly(t, []string{"DONT_FAULT_SYNCHRONOUS=NORMAL"}, 1, 20)
	if run.lost == 0 {
		t.Fatalf("no acknowledged write of %d was lost under synchronous=NORMAL: the power-loss test cannot see a loss", run.acked)
	}
	t.Logf("synchronous=NORMAL: %d of %d acknowledged concludes lost at one power loss", run.lost, run.acked)
}

// cutPowerRepeatedly runs rounds of: mount the project's .dont/ lazily,
// start dont serve on it (env added), conclude from HTTP workers and an
// embedded CLI worker until perRound answers came back, SIGKILL the
// server, cut the power, then check every acknowledged statement so far.
func cutPowerRepeatedly(t *testing.T, env []string, rounds, perRound int) powerLossRun {
	p := newProject(t, env...)
	token := p.token("harness")
	dotDont := filepath.Join(p.dir, ".dont")
	backing := filepath.Join(t.TempDir(), "backing")
	client := &http.Client{Timeout: 20 * time.Second}
	defer client.CloseIdleConnections()
	conclude := func(endpoint, statement string) bool {
		body, _ := json.Marshal(map[string]any{"args": map[string]any{"statement": statement}})
		req, _ := http.NewRequest(http.MethodPost, endpoint+"/v1/tools/conclude", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return false // the server died: unknown
		}
		defer resp.Body.Close()
		var env struct {
			Data struct{ ID string } `json:"data"`
		}
		return json.NewDecoder(resp.Body).Decode(&env) == nil && resp.StatusCode/100 == 2 && env.Data.ID != ""
	}

	var run powerLossRun
	acked := map[string]bool{}
	for round := 0; round < rounds; round++ {
		// The project's files move to the backing folder and are seen
		// through the lazy mount in their old place.
		if err := os.Rename(dotDont, backing); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(dotDont, 0o700); err != nil {
			t.Fatal(err)
		}
		l, err := lazyfs.Mount(dotDont, backing)
		if err != nil {
			t.Fatalf("the power-loss test needs its lazy file system: %v", err)
		}
		mounted := true
		t.Cleanup(func() {
			if mounted {
				l.Unmount()
			}
		})
		srv := p.serve(t, env...)
		var mu sync.Mutex
		var answered atomic.Int64
		enough := make(chan struct{})
		var once sync.Once
		var stop atomic.Bool
		var wg sync.WaitGroup
		note := func(statement string, ok bool) {
			mu.Lock()
			defer mu.Unlock()
			if !ok {
				run.indeterminate++
				return
			}
			acked[statement] = true
			run.acked++
			if answered.Add(1) >= int64(perRound) {
				once.Do(func() { close(enough) })
			}
		}
		for w := 0; w < 3; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; !stop.Load(); i++ {
					statement := fmt.Sprintf("round %d, HTTP worker %d, write %d", round, w, i)
					ok := conclude(srv.endpoint, statement)
					note(statement, ok)
					if !ok {
						return
					}
				}
			}()
		}
		var cli *exec.Cmd // the embedded CLI process running, guarded by mu
		wg.Add(1)
		go func() { // an embedded CLI process at a time, beside the server
			defer wg.Done()
			for i := 0; ; i++ {
				statement := fmt.Sprintf("round %d, CLI write %d", round, i)
				c := p.cmd("conclude", statement)
				var out bytes.Buffer
				c.Stdout = &out
				mu.Lock()
				if stop.Load() {
					mu.Unlock()
					return
				}
				err := c.Start()
				cli = c
				mu.Unlock()
				if err != nil {
					t.Error(err)
					return
				}
				err = c.Wait()
				var env struct {
					Data struct{ ID string } `json:"data"`
				}
				note(statement, err == nil && json.Unmarshal(out.Bytes(), &env) == nil && env.Data.ID != "")
			}
		}()
		select {
		case <-enough:
		case <-time.After(120 * time.Second):
			t.Fatal("the writers made no progress on the lazy file system")
		}
		// The power goes: every process writing the project stops at once
		// (a CLI that closed the store cleanly would checkpoint, and so
		// sync, everything before the cut).
		mu.Lock()
		stop.Store(true)
		if err := srv.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		if cli != nil {
			cli.Process.Signal(syscall.SIGKILL) //nolint:errcheck // it may have ended
		}
		mu.Unlock()
		srv.cmd.Wait()
		wg.Wait()
		st, err := l.PowerLoss()
		mounted = false
		if err != nil {
			t.Fatalf("power loss: %v", err)
		}
		run.dropped.DroppedFiles += st.DroppedFiles
		run.dropped.DroppedWrites += st.DroppedWrites
		run.rounds++
		if err := os.Remove(dotDont); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(backing, dotDont); err != nil {
			t.Fatal(err)
		}

		if r := p.run("doctor", "--strict"); r.exit != 0 {
			p.corrupted = true
			t.Fatalf("after power loss %d, doctor --strict: exit %d %s", round+1, r.exit, r.stdout)
		}
		stored := storedStatements(t, p)
		run.lost = 0
		for statement := range acked {
			if !stored[statement] {
				run.lost++
			}
		}
	}
	return run
}

// storedStatements reads the claims' statements from the project's store.
func storedStatements(t *testing.T, p *testProject) map[string]bool {
	t.Helper()
	st, err := sqlite.Open(filepath.Join(p.dir, ".dont", "dont.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	claims, err := st.ListEntities(context.Background(), store.EntityFilter{Kind: ledger.KindClaim})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, c := range claims {
		out[c.Statement] = true
	}
	return out
}
