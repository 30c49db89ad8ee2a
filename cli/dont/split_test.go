package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// What the light build hands to dont-net (split.go): every run that may
// need the network, and nothing a `dont show` or a ledger verb needs.
func TestTheLightBuildHandsOverExactlyTheRunsThatNeedTheNetwork(t *testing.T) {
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	none := env()
	for _, c := range []struct {
		argv   []string
		getenv func(string) string
		tty    bool
		want   bool
	}{
		{[]string{"show", "claim:01J"}, none, false, false},
		{[]string{"--json", "show", "claim:01J"}, none, true, false},
		{[]string{"list"}, none, true, false},
		{[]string{"conclude", "x"}, none, true, false},
		{[]string{"spawns", "--pending"}, none, false, false},
		{[]string{"spawns", "cancel", "spawn:01J"}, none, false, false},
		{[]string{"approvals", "watch"}, none, true, false},
		{[]string{"--help"}, none, true, false},
		{[]string{"help", "show"}, none, true, false},
		{nil, none, true, false},
		// a harness signal keeps a spawning verb embedded
		{[]string{"assume", "claim:01J"}, none, false, false},
		{[]string{"assume", "claim:01J", "--harness"}, none, true, false},
		{[]string{"assume", "claim:01J"}, env("DONT_HARNESS", "1"), true, false},
		// direct mode: a person at a terminal, or --direct
		{[]string{"assume", "claim:01J"}, none, true, true},
		{[]string{"guess", "what?"}, none, true, true},
		{[]string{"assume", "claim:01J", "--direct"}, none, false, true},
		{[]string{"assume", "claim:01J", "--harness=false"}, none, true, true},
		// an endpoint, by flag or environment, on any command
		{[]string{"show", "claim:01J", "--endpoint", "http://127.0.0.1:1"}, none, false, true},
		{[]string{"--endpoint=http://127.0.0.1:1", "list"}, none, false, true},
		{[]string{"list"}, env("DONT_ENDPOINT", "http://127.0.0.1:1"), false, true},
		// dont hook asks the embedded store, or the endpoint it is given
		{[]string{"hook", "claude-code"}, none, false, false},
		{[]string{"hook", "codex"}, env("DONT_ENDPOINT", "http://127.0.0.1:1"), false, true},
		{[]string{"harness", "install", "codex"}, none, true, false},
		// the commands only the whole build has
		{[]string{"serve"}, none, false, true},
		{[]string{"serve", "--help"}, none, false, true},
		{[]string{"help", "serve"}, none, false, true},
		{[]string{"mcp"}, none, false, true},
		// dont login verifies the token at the endpoint; logout and an
		// embedded whoami touch no network (a stored login is
		// mayUseStoredLogin's, TestLoginThenWhoamiThenARemoteListNeedNoEnvironment)
		{[]string{"login", "http://127.0.0.1:1"}, none, true, true},
		{[]string{"--profile", "work", "login", "http://127.0.0.1:1"}, none, true, true},
		{[]string{"logout"}, none, true, false},
		{[]string{"whoami"}, none, true, false},
		{[]string{"--json", "mcp"}, none, false, true},
		{[]string{"spawns", "run", "--watch"}, none, false, true},
		{[]string{"help", "spawns", "run"}, none, false, true},
		{[]string{"hooks", "list"}, none, false, true},
		{[]string{"completions", "bash"}, none, false, true},
		{[]string{"completion", "bash"}, none, false, true},
		{[]string{"__complete", "sh"}, none, false, true},
		{[]string{deliveryPass}, none, false, true},
		// after --, nothing is a flag
		{[]string{"conclude", "--", "--endpoint"}, none, false, false},
	} {
		if got := needsNet(c.argv, invokedTool(c.argv), c.getenv, c.tty); got != c.want {
			t.Errorf("needsNet(%q, tty %v) = %v, want %v", c.argv, c.tty, got, c.want)
		}
	}
}

// Both builds show a person the same commands: the light one defines
// every command dont-net has, and hands the runs of its own to it.
func TestTheLightBuildListsWhatTheWholeOneLists(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"spawns", "--help"}, {"approvals", "--help"}, {"help"}, {"serve", "--help"}, {"spawns", "run", "--help"}, {"mcp", "--help"}} {
		var outs [2]string
		for i, bin := range []string{binary, netBinary} {
			out, err := exec.Command(bin, args...).CombinedOutput()
			if err != nil {
				t.Fatalf("%s %s: %v\n%s", filepath.Base(bin), strings.Join(args, " "), err, out)
			}
			outs[i] = string(out)
		}
		if outs[0] != outs[1] {
			t.Errorf("dont %s differs between the builds:\nlight:\n%s\nwhole:\n%s", strings.Join(args, " "), outs[0], outs[1])
		}
	}
}

// A light dont without dont-net beside it refuses what needs the network
// with an envelope that says what to build, and changes nothing.
func TestALightDontWithoutDontNetSaysWhatToBuildAndChangesNothing(t *testing.T) {
	dir := t.TempDir()
	alone := filepath.Join(dir, "dont")
	b, err := os.ReadFile(binary)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(alone, b, 0o755); err != nil {
		t.Fatal(err)
	}
	p := newProject(t)
	claim := p.ok("conclude", "water boils at 100 C at sea level").str("id")
	before := p.ok("list").stdout
	for _, args := range [][]string{{"serve"}, {"mcp"}, {"conclude", "y", "--endpoint", "http://127.0.0.1:1"}, {"assume", claim, "--direct"}, {"hooks", "list"}} {
		c := p.cmd(args...)
		c.Path, c.Args[0] = alone, alone
		r := p.runCmd(t, c, nil, nil)
		if r.exit != 3 || r.str("code") != "dont-net-missing" {
			t.Fatalf("dont %s alone: exit %d, code %q, want 3 dont-net-missing\n%s%s", strings.Join(args, " "), r.exit, r.str("code"), r.stdout, r.stderr)
		}
		steps, _ := r.data()["remediation"].([]any)
		if len(steps) == 0 || !strings.Contains(steps[0].(map[string]any)["command"].(string), filepath.Join(dir, dontNetName)) {
			t.Errorf("dont %s alone: remediation %v does not build %s", strings.Join(args, " "), steps, filepath.Join(dir, dontNetName))
		}
	}
	if after := p.ok("list").stdout; withoutRequestIDs(after) != withoutRequestIDs(before) {
		t.Errorf("the refused runs changed the ledger:\n%s\n%s", before, after)
	}
	// What needs no network still runs alone.
	c := p.cmd("show", claim)
	c.Path, c.Args[0] = alone, alone
	if r := p.runCmd(t, c, nil, nil); r.exit != 0 || r.str("id") != claim {
		t.Fatalf("show alone: exit %d\n%s%s", r.exit, r.stdout, r.stderr)
	}
}

// An agent's write is delivered to the project's webhooks by the light
// build's pass (dont-net's hidden delivery pass), as the whole build's
// own pass delivers it: a harness signal changes nothing (the loopback
// receiver is allowed in the person's config: a harness-signalled process
// ignores DONT_HOOKS_ALLOW_PRIVATE, docs/security.md#person-settings).
func TestAnAgentsWriteIsDeliveredByTheLightBuildsPass(t *testing.T) {
	p := newProject(t)
	p.writePersonConfig(t, "[hooks]\nallow_private = [\"127.0.0.1/32\"]\n")
	rcv := newHookReceiver(t)
	p.addHook(t, rcv, "spawn.requested")
	claim := p.ok("conclude", "water boils at 100 C at sea level").str("id")
	r := p.runEnv([]string{"DONT_HARNESS=1"}, "assume", claim)
	if r.exit != 0 {
		t.Fatalf("assume: exit %d\n%s%s", r.exit, r.stdout, r.stderr)
	}
	got := rcv.next(t, "spawn.requested", time.Second) // before the command exited
	if d := got["data"].(map[string]any); d["request_id"] != r.str("request_id") {
		t.Fatalf("payload %v", got)
	}
}

// The hidden delivery pass gives an agent nothing a write does not: it
// takes no arguments, prints nothing, and delivers only what is due —
// while `hooks deliver`, a person's, stays refused to it.
func TestAnAgentRunningTheHiddenDeliveryPassGainsNothing(t *testing.T) {
	p := newProject(t, allowLoopback)
	agent := []string{"DONT_HARNESS=1"}
	if r := p.runEnv(agent, deliveryPass, "--limit", "1000"); r.exit != 2 || r.str("code") != "usage" {
		t.Errorf("%s with a flag: exit %d, code %q, want a usage error", deliveryPass, r.exit, r.str("code"))
	}
	if r := p.runEnv(agent, deliveryPass, "hook:01J"); r.exit != 2 {
		t.Errorf("%s with an argument: exit %d, want 2", deliveryPass, r.exit)
	}
	var out, errb bytes.Buffer
	c := p.cmd(deliveryPass)
	c.Env = append(c.Env, agent...)
	c.Stdout, c.Stderr = &out, &errb
	if err := c.Run(); err != nil || out.Len() != 0 || errb.Len() != 0 {
		t.Errorf("%s: %v, printed %q %q; want exit 0 and nothing", deliveryPass, err, out.String(), errb.String())
	}
	if r := p.runEnv(agent, "hooks", "deliver"); r.exit == 0 {
		t.Errorf("hooks deliver under a harness signal: exit 0, want a refusal\n%s", r.stdout)
	}
}

// dont-net refuses a run handed over by a light dont of another build:
// the pair must be the one built together.
func TestDontNetRefusesARunHandedOverByAnotherBuild(t *testing.T) {
	p := newProject(t)
	claim := p.ok("conclude", "water boils at 100 C at sea level").str("id")
	before := p.ok("list").stdout
	c := p.cmd("conclude", "handed over by another build")
	c.Path, c.Args[0] = netBinary, netBinary
	r := p.runCmd(t, c, []string{envHandedOffBy + "=0123456789abcdef0123456789abcdef01234567"}, nil)
	if r.exit != 3 || r.str("code") != "dont-net-mismatch" {
		t.Fatalf("exit %d, code %q, want 3 dont-net-mismatch\n%s%s", r.exit, r.str("code"), r.stdout, r.stderr)
	}
	if steps, _ := r.data()["remediation"].([]any); len(steps) == 0 || !strings.Contains(steps[0].(map[string]any)["command"].(string), filepath.Dir(netBinary)) {
		t.Errorf("remediation %v does not rebuild the pair in %s", r.data()["remediation"], filepath.Dir(netBinary))
	}
	if after := p.ok("list").stdout; withoutRequestIDs(after) != withoutRequestIDs(before) {
		t.Errorf("the refused run changed the ledger:\n%s\n%s", before, after)
	}
	// Handed over by its own pair (hooks run in dont-net), a run goes through.
	p.ok("hooks", "list")
	if r := p.ok("show", claim); r.str("id") != claim {
		t.Fatalf("show: %s", r.stdout)
	}
}
