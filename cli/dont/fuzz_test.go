package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// FuzzCommandLine: any command line run against an embedded project exits
// with a documented code and prints nothing or exactly one JSON envelope
// on stdout (or help text, exit 0); a failure envelope carries
// remediation; nothing panics and nothing is an internal error (an unknown
// command once was: testdata/fuzz keeps it). serve, init and remote endpoints are left
// out (they listen, create projects or reach the network).
func FuzzCommandLine(f *testing.F) {
	for _, s := range []string{"", "list", "conclude\x00water boils at 100 C", "conclude\x00x\x00--confidence\x002", "conclude\x00x\x00--depends-on\x00claim:01HX05A9K8VP0000000000000A",
		"show\x00claim:01HX05A9K8VP0000000000000A\x00--history", "trust\x00claim:nope\x00--reason\x00maybe", "dismiss\x00claim:01HX05A9K8VP0000000000000A\x00--evidence\x00not a uri",
		"assume\x00term:01HX05A9K8VP0000000000000A", "guess\x00why?\x00--n\x0021", "guess\x00why?\x00--temperature\x00-1", "answer\x00spawn:x\x00--candidate\x00",
		"spawns\x00--pending\x00--all", "sweep\x00--limit\x00-3", "lock\x00claim:01HX05A9K8VP0000000000000A", "tokens\x00create\x00--role\x00root",
		"doctor\x00--strict", "--json\x00list\x00--status\x00bogus", "define\x00ex:Widget\x00--doc\x00a widget", "list\x00--bogus", "nope", "--help"} {
		f.Add(s)
	}
	var dir string
	f.Fuzz(func(t *testing.T, line string) {
		if dir == "" {
			dir = t.TempDir()
			if code := newApp(strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{}, fuzzEnv(dir)).run(context.Background(), []string{"init"}); code != 0 {
				t.Fatalf("init: exit %d", code)
			}
		}
		argv := strings.Split(line, "\x00")
		if line == "" {
			argv = nil
		}
		for _, a := range argv {
			if strings.Contains(a, "endpoint") {
				return
			}
		}
		probe := newApp(nil, &bytes.Buffer{}, &bytes.Buffer{}, fuzzEnv(dir))
		if c, _, err := probe.rootCommand().Find(argv); err == nil && (c.Name() == "serve" || c.Name() == "init" || c.Name() == "mcp") {
			return
		}
		var out, errOut bytes.Buffer
		code := newApp(strings.NewReader(""), &out, &errOut, fuzzEnv(dir)).run(context.Background(), argv)
		if code < 0 || code > 3 {
			t.Fatalf("dont %q: exit %d\n%s%s", argv, code, out.String(), errOut.String())
		}
		if out.Len() == 0 {
			return
		}
		if out.Bytes()[0] != '{' { // help or a completion script, on request
			if code != 0 {
				t.Fatalf("dont %q: text on stdout with exit %d: %q", argv, code, out.String())
			}
			return
		}
		var env struct {
			OK   bool `json:"ok"`
			Data struct {
				Remediation []any `json:"remediation"`
			} `json:"data"`
		}
		dec := json.NewDecoder(&out)
		if err := dec.Decode(&env); err != nil || dec.More() {
			t.Fatalf("dont %q: stdout is not one envelope: %q", argv, out.String())
		}
		if !env.OK && len(env.Data.Remediation) == 0 {
			t.Fatalf("dont %q: failure without remediation: %q", argv, out.String())
		}
		if env.OK != (code == 0) {
			t.Fatalf("dont %q: ok=%v but exit %d", argv, env.OK, code)
		}
	})
}

func fuzzEnv(dir string) func(string) string {
	return func(k string) string {
		switch k {
		case "DONT_PROJECT_DIR":
			return dir
		case "DONT_HARNESS":
			return "1"
		}
		return ""
	}
}
