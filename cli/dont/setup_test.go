package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/dont-cli/dont/internal/service"
)

// Set-up in this process. A test's set-up (the claims it needs, the tokens
// a server's callers hold) goes through the same service calls the
// commands make (tools: conclude is Ledger.Conclude, tokens create is
// Credentials.CreateKeyed), on the project's dont.db, without a dont
// process each: about 320 processes of a -short run. Tests whose subject
// is the command run the binary (TestAnAgentCannotMintATokenAtTheEmbeddedCLIWithoutThePassphrase
// mints at the terminal with mintTokenAtTerminal; conclude's own tests run
// it), and TestInProcessSetUpIsWhatTheCommandsWrite holds the two equal.

// withService calls use with the service a dont command would build over
// p's store, in this process.
func (p *testProject) withService(use func(svc *service.Service) error) {
	p.t.Helper()
	_, st := p.openStore("set-up")
	defer st.Close()
	// What the embedded CLI's service has (app.embedded): doctor's, with
	// the tokens and the hooks a write notifies.
	deps := p.inProcessDeps(st)
	deps.Tokens, deps.HooksConfig = st, service.HooksConfig{Store: st}
	svc := service.New(deps)
	svc.Approvals = service.Approvals{Store: st}
	if err := use(svc); err != nil {
		p.t.Fatalf("set-up: %v", err)
	}
}

// seedClaims concludes each statement as `dont conclude` would and
// returns the claims' ids in order.
func (p *testProject) seedClaims(statements ...string) []string {
	p.t.Helper()
	var ids []string
	p.withService(func(svc *service.Service) error {
		for _, s := range statements {
			v, err := svc.Ledger.Conclude(context.Background(), service.ConcludeInput{Statement: s})
			if err != nil {
				return err
			}
			ids = append(ids, v.ID)
		}
		return nil
	})
	return ids
}

// mintToken mints a token of role for the test's callers, as `dont tokens
// create` does once the person has typed the passphrase (mintTokenAtTerminal
// types it); it sets the passphrase first, as minting at the terminal did,
// since tests go on to type it.
func (p *testProject) mintToken(role, name string) string {
	p.t.Helper()
	p.setPassphrase()
	var secret string
	p.withService(func(svc *service.Service) error {
		v, err := svc.Credentials.Create(context.Background(), role, name)
		secret = v.Secret
		return err
	})
	return secret
}

// varying are an event's id and time, which differ between any two writes.
var varying = regexp.MustCompile(`"(at|id)":"[^"]*"`)

// The in-process set-up writes what the commands write: a claim seeded
// here reads back as one `dont conclude` made (but for its id and times),
// and a token minted here is listed as one minted at the terminal is.
func TestInProcessSetUpIsWhatTheCommandsWrite(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	byCommand := p.ok("conclude", "water boils at 100 C at sea level").str("id")
	seeded := p.seedClaims("water boils at 100 C at sea level")[0]
	shown := func(id string) string {
		d := p.ok("show", id, "--history").data()
		for _, k := range []string{"id", "created_at", "updated_at"} {
			delete(d, k)
		}
		b, _ := json.Marshal(d)
		return varying.ReplaceAllString(strings.ReplaceAll(string(b), id, "<id>"), "")
	}
	if a, b := shown(byCommand), shown(seeded); a != b || !strings.Contains(a, "unverified") {
		t.Fatalf("a seeded claim differs from a concluded one:\n%s\n%s", b, a)
	}

	p.mintTokenAtTerminal("harness", "agent")
	p.mintToken("harness", "agent")
	var listed []string
	for _, tok := range p.ok("tokens", "list").data()["tokens"].([]any) {
		m := tok.(map[string]any)
		listed = append(listed, fmt.Sprint(m["role"], " ", m["name"], " ", m["revoked_at"]))
	}
	if len(listed) != 2 || listed[0] != listed[1] || !strings.HasPrefix(listed[0], "harness agent") {
		t.Fatalf("tokens: %q", listed)
	}
}

// inProcess runs `dont args...` in this process with p's environment, as
// main does but for the process itself (signals, a broken pipe's exit):
// newApp over buffers, the environment the binary would get. The test
// binary is built without the faulthooks tag, so only commands that use
// no fault hook and no person's file run here (help does not).
func (p *testProject) inProcess(args ...string) rawResult {
	p.t.Helper()
	env := map[string]string{}
	for _, kv := range p.cmd().Env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	var out, errb bytes.Buffer
	code := newApp(strings.NewReader(""), &out, &errb, func(k string) string { return env[k] }).run(context.Background(), args)
	return rawResult{stdout: out.String(), stderr: errb.String(), exit: code}
}
