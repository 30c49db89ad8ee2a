package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/dont-cli/dont/internal/linearize"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// timeoutLag issues n spawns against a real `dont serve` (2 s expiry,
// sweeper every second), waits without sending a request (every request
// would sweep first), then reads each spawn_timeout event: lag is
// timed_out_at − expires_at.
func timeoutLag(n int) ([]float64, error) {
	dir, err := os.MkdirTemp("", "dont-timeoutlag")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "dont")
	if out, err := exec.Command("go", "build", "-o", bin, "./cli/dont").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("build: %v %s", err, out)
	}
	env := append(os.Environ(), "DONT_PROJECT_DIR="+dir, "DONT_SPAWN_TIMEOUT=2s")
	run := func(args ...string) (map[string]any, error) {
		c := exec.Command(bin, args...)
		c.Env = env
		out, err := c.Output()
		if err != nil {
			return nil, fmt.Errorf("dont %v: %v %s", args, err, out)
		}
		var e struct{ Data map[string]any }
		return e.Data, json.Unmarshal(out, &e)
	}
	if _, err := run("init", "--no-passphrase"); err != nil {
		return nil, err
	}
	// dont tokens create asks for the person's passphrase at a terminal;
	// the benchmark owns the project and writes the token into its store.
	tok, err := linearize.MintTokens(filepath.Join(dir, ".dont", "dont.db"), "harness")
	if err != nil {
		return nil, err
	}
	srv := exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--rate", "-1", "--sweep-interval", "1s")
	srv.Env = env
	stdout, _ := srv.StdoutPipe()
	if err := srv.Start(); err != nil {
		return nil, err
	}
	defer func() { srv.Process.Signal(os.Interrupt); srv.Wait() }()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		return nil, err
	}
	var l struct{ Listening string }
	if err := json.Unmarshal([]byte(line), &l); err != nil {
		return nil, err
	}
	call := func(tool string, args map[string]any) (map[string]any, error) {
		if args == nil { // "args" is an object: null is refused
			args = map[string]any{}
		}
		body, _ := json.Marshal(map[string]any{"args": args})
		req, _ := http.NewRequest(http.MethodPost, l.Listening+"/v1/tools/"+tool, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tok["harness"])
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		var e struct {
			OK   bool           `json:"ok"`
			Data map[string]any `json:"data"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&e); err != nil || !e.OK {
			return nil, fmt.Errorf("%s: %v %v", tool, err, e.Data)
		}
		return e.Data, nil
	}
	var entities []string
	for i := 0; i < n; i++ { // conclude first: these calls sweep nothing yet
		d, err := call("conclude", map[string]any{"statement": fmt.Sprintf("lag claim %d", i)})
		if err != nil {
			return nil, err
		}
		entities = append(entities, d["id"].(string))
	}
	start := time.Now()
	for i, id := range entities { // spread the expiries over about a second
		if _, err := call("assume", map[string]any{"id": id, "mode": "harness"}); err != nil {
			return nil, err
		}
		if d := time.Until(start.Add(time.Duration(i+1) * time.Second / time.Duration(n))); d > 0 {
			time.Sleep(d)
		}
	}
	time.Sleep(time.Until(start.Add(5 * time.Second)))
	var lags []float64
	for _, id := range entities {
		d, err := call("show", map[string]any{"id": id, "history": true})
		if err != nil {
			return nil, err
		}
		hist, _ := d["history"].([]any)
		for _, h := range hist {
			ev := h.(map[string]any)
			if ev["kind"] != "spawn_timeout" {
				continue
			}
			det, _ := ev["detail"].(map[string]any)
			exp, err1 := time.Parse(time.RFC3339Nano, fmt.Sprint(det["expires_at"]))
			at, err2 := time.Parse(time.RFC3339Nano, fmt.Sprint(det["timed_out_at"]))
			if err1 == nil && err2 == nil {
				lags = append(lags, float64(at.Sub(exp).Microseconds())/1000)
			}
		}
	}
	if len(lags) == 0 {
		return nil, fmt.Errorf("no spawn_timeout events were recorded")
	}
	return lags, nil
}
