package main

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// loginsFilePath is where the test person's stored logins are.
func (p *testProject) loginsFilePath() string {
	return filepath.Join(p.personHome(), ".config", "dont", "logins.json")
}

// login runs `dont login` with the token on stdin.
func (p *testProject) login(t *testing.T, token string, args ...string) result {
	t.Helper()
	return p.runIn(t, nil, strings.NewReader(token+"\n"), append([]string{"login"}, args...)...)
}

// elsewhere is a folder with no project: a verb run there reaches a
// project only through an endpoint.
func elsewhere(t *testing.T) string { return t.TempDir() }

// The "done when": a person logs in once and then, with no
// environment variables, sees who they are and lists the server's
// entities from a folder that holds no project.
func TestLoginThenWhoamiThenARemoteListNeedNoEnvironment(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	id := p.ok("conclude", "the login reaches the server's project").str("id")
	harness := p.token("harness")
	srv := p.serve(t)

	r := p.login(t, harness, srv.endpoint)
	if r.exit != 0 || r.env["envelope_kind"] != "login" || r.str("profile") != "default" {
		t.Fatalf("login: exit %d %s %s", r.exit, r.stdout, r.stderr)
	}
	if strings.Contains(r.stdout, harness) {
		t.Fatalf("login printed the token: %s", r.stdout)
	}
	file, err := os.Stat(p.loginsFilePath())
	if err != nil || file.Mode().Perm() != 0o600 {
		t.Fatalf("logins file: %v mode %v, want 0600", err, file.Mode())
	}
	if dir, err := os.Stat(filepath.Dir(p.loginsFilePath())); err != nil || dir.Mode().Perm() != 0o700 {
		t.Fatalf("logins folder: %v mode %v, want 0700", err, dir.Mode())
	}

	away := elsewhere(t)
	who := p.runAt(t, away, "whoami")
	if who.exit != 0 || who.str("role") != "harness" || !strings.HasPrefix(who.str("principal"), "tok:") {
		t.Fatalf("whoami after login: exit %d %s", who.exit, who.stdout)
	}
	list := p.runAt(t, away, "list")
	if list.exit != 0 || !strings.Contains(list.stdout, id) {
		t.Fatalf("remote list after login: exit %d %s", list.exit, list.stdout)
	}

	if r := p.runAt(t, away, "logout"); r.exit != 0 || r.data()["logged_out"] != true {
		t.Fatalf("logout: exit %d %s", r.exit, r.stdout)
	}
	if r := p.runAt(t, away, "list"); r.exit == 0 || strings.Contains(r.stdout, id) {
		t.Fatalf("list after logout still reached the server: %s", r.stdout)
	}
}

// The attack: an agent sets DONT_ENDPOINT (or --endpoint) to a listener
// of its own, hoping the CLI sends it the token the person stored for
// their server. A stored token goes only to the endpoint stored with it.
func TestAnAgentThatSetsDontEndpointToItsOwnListenerReceivesNoStoredToken(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	harness := p.token("harness")
	srv := p.serve(t)
	if r := p.login(t, harness, srv.endpoint); r.exit != 0 {
		t.Fatalf("login: exit %d %s", r.exit, r.stdout)
	}
	var mu sync.Mutex
	var seen []string
	real, err := url.Parse(srv.endpoint)
	if err != nil {
		t.Fatal(err)
	}
	relay := httputil.NewSingleHostReverseProxy(real)
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		relay.ServeHTTP(w, r) // the agent relays, to look like the server
	}))
	defer agent.Close()

	p.runIn(t, []string{"DONT_ENDPOINT=" + agent.URL}, nil, "list")
	p.runIn(t, nil, nil, "list", "--endpoint", agent.URL)
	p.runIn(t, []string{"DONT_ENDPOINT=" + agent.URL, "DONT_HARNESS=1"}, nil, "whoami")
	mu.Lock()
	defer mu.Unlock()
	calls := 0
	for _, req := range seen {
		if strings.HasPrefix(req, "POST /v1/tools/") {
			calls++
		}
		if strings.Contains(req, "Bearer") || strings.Contains(req, harness) {
			t.Fatalf("the agent's listener received a credential: %q", req)
		}
	}
	if calls != 3 {
		t.Fatalf("the agent's listener saw %d tool calls, want 3 (the test proves nothing otherwise): %q", calls, seen)
	}
}

// The attack: an agent that can read the person's files (same OS user)
// would answer its own questions with an approver's or admin's stored
// token. dont login stores only harness tokens.
func TestLoginRefusesToStoreAnApproverOrAdminToken(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	srv := p.serve(t)
	for _, role := range []string{"approver", "admin"} {
		r := p.login(t, p.mintToken(role, role), srv.endpoint)
		if r.exit != 1 || r.data()["code"] != "login-token-too-powerful" || len(r.data()["remediation"].([]any)) == 0 {
			t.Fatalf("login with a %s token: exit %d %s", role, r.exit, r.stdout)
		}
		if _, err := os.Stat(p.loginsFilePath()); !os.IsNotExist(err) {
			t.Fatalf("a %s token was stored: %v", role, err)
		}
	}
}

// The attack: an agent sets DONT_PROFILE (a path, or a name the person
// never stored) to make the CLI read a login file of its own or fall back
// to another login. A profile is only a key among the stored logins; an
// unknown one is refused and nothing is sent.
func TestAnAgentThatSetsDontProfileOnlyChoosesAmongTheStoredLogins(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	harness := p.token("harness")
	srv := p.serve(t)
	if r := p.login(t, harness, srv.endpoint, "--profile", "work"); r.exit != 0 {
		t.Fatalf("login --profile work: exit %d %s", r.exit, r.stdout)
	}
	planted := filepath.Join(p.dir, "logins.json")
	if err := os.WriteFile(planted, []byte(`{"profiles":{"default":{"endpoint":"http://127.0.0.1:1","token":"x"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	away := elsewhere(t)
	for _, profile := range []string{"nosuch", planted, "../../" + filepath.Base(p.dir) + "/logins"} {
		c := p.cmd("list")
		c.Dir = away
		r := p.runCmd(t, c, []string{"DONT_PROFILE=" + profile}, nil)
		if r.exit != 2 || r.data()["code"] != "profile-unknown" || !strings.Contains(r.stdout, "work") {
			t.Fatalf("DONT_PROFILE=%s: exit %d %s", profile, r.exit, r.stdout)
		}
	}
	c := p.cmd("whoami")
	c.Dir = away
	if r := p.runCmd(t, c, []string{"DONT_PROFILE=work"}, nil); r.exit != 0 || r.str("role") != "harness" {
		t.Fatalf("DONT_PROFILE=work: exit %d %s", r.exit, r.stdout)
	}
}

// The attack: an agent that cannot read the person's logins file (a
// sandbox hides it) makes it a link to a file of its own, or a file the
// group may write, naming its own endpoint. Such a file decides nothing:
// the run fails (logins-not-private) and nothing is sent.
func TestALoginsFileOthersCanWriteOrALinkIsNotUsed(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	harness := p.token("harness")
	srv := p.serve(t)
	if r := p.login(t, harness, srv.endpoint); r.exit != 0 {
		t.Fatalf("login: exit %d %s", r.exit, r.stdout)
	}
	file := p.loginsFilePath()
	away := elsewhere(t)
	if err := os.Chmod(file, 0o620); err != nil {
		t.Fatal(err)
	}
	if r := p.runAt(t, away, "list"); r.exit != 3 || r.data()["code"] != "logins-not-private" {
		t.Fatalf("a group-writable logins file: exit %d %s", r.exit, r.stdout)
	}
	planted := filepath.Join(p.dir, "planted.json")
	raw, _ := os.ReadFile(file)
	if err := os.WriteFile(planted, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	os.Remove(file)
	if err := os.Symlink(planted, file); err != nil {
		t.Fatal(err)
	}
	if r := p.runAt(t, away, "list"); r.exit != 3 || r.data()["code"] != "logins-not-private" {
		t.Fatalf("a logins file that is a link: exit %d %s", r.exit, r.stdout)
	}
}

// A stored login does not take over an embedded project: inside one (a
// .dont/ here or above) commands keep using its own store, so a person's
// `dont approvals watch` there is not sent to a server with the harness
// token; --profile (or DONT_PROFILE) names the login to go remote.
func TestAStoredLoginDoesNotTakeOverAnEmbeddedProject(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	remote := p.ok("conclude", "a claim on the server's project").str("id")
	harness := p.token("harness")
	srv := p.serve(t)
	if r := p.login(t, harness, srv.endpoint); r.exit != 0 {
		t.Fatalf("login: exit %d %s", r.exit, r.stdout)
	}
	q := newProject(t, "DONT_TEST_PERSON_HOME="+p.personHomeDir(t))
	local := q.ok("conclude", "a claim of the embedded project here").str("id")
	if r := q.ok("list"); !strings.Contains(r.stdout, local) || strings.Contains(r.stdout, remote) {
		t.Fatalf("list inside an embedded project after a login went remote: %s", r.stdout)
	}
	if r := q.ok("--profile", "default", "list"); !strings.Contains(r.stdout, remote) || strings.Contains(r.stdout, local) {
		t.Fatalf("list --profile default inside the project did not go remote: %s", r.stdout)
	}
}
