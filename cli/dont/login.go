package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/personal"
	"github.com/dont-cli/dont/internal/project"
	"github.com/dont-cli/dont/internal/tools"
	"github.com/spf13/cobra"
)

// # Stored logins
//
// `dont login` keeps an endpoint and a harness token per profile in the
// person's config folder (internal/personal: found from the user database,
// never from $HOME), so that verbs reach a `dont serve` without
// DONT_ENDPOINT and DONT_TOKEN. The agent runs as the same OS user and
// sets its own environment, so (docs/security.md, "Stored logins"):
//   - a stored token goes only to the endpoint stored with it: when
//     --endpoint or DONT_ENDPOINT name another one, no stored token is sent
//     (storedToken);
//   - only a harness token is stored: one with the approver or admin role
//     would let an agent that reads the file answer its own questions
//     (login-token-too-powerful);
//   - DONT_PROFILE and --profile only choose among the stored profiles: a
//     name is a key in the one file, never a path, and an unknown one is
//     refused rather than falling back to another (profile-unknown).

const (
	// envProfile chooses the stored login, like --profile.
	envProfile = "DONT_PROFILE"
	// defaultProfile is the profile used when none is named.
	defaultProfile = "default"
)

// The codes stored logins return (internal/present has their exit codes).
const (
	loginTokenTooPowerful errs.Code = "login-token-too-powerful"
	loginNotVerified      errs.Code = "login-not-verified"
	loginInsecure         errs.Code = "login-insecure-endpoint"
	profileUnknown        errs.Code = "profile-unknown"
	loginsNotPrivate      errs.Code = "logins-not-private"
)

// storedLogin is one profile: where its verbs go and the token they carry.
type storedLogin struct {
	Endpoint  string `json:"endpoint"`
	Token     string `json:"token"`
	Principal string `json:"principal,omitempty"`
}

// loginsFile is the person's logins, by profile name.
type loginsFile struct {
	Profiles map[string]storedLogin `json:"profiles"`
}

// loginState is what this run read of the stored logins, once.
type loginState struct {
	read    bool
	profile string // the profile named (flag or DONT_PROFILE), or ""
	login   storedLogin
	err     error
}

var profileName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`) })

// loginsPath is the file of the person's stored logins, beside the
// person's config.
func (a *app) loginsPath() (string, error) {
	dirs, err := a.personalDirs()
	if err != nil {
		return "", errs.E(errs.ConfigInvalid, "cannot find your home folder in the user database: "+err.Error()).Wrap(err)
	}
	return filepath.Join(filepath.Dir(dirs.ConfigPath()), "logins.json"), nil
}

// namedProfile is the profile --profile or DONT_PROFILE names, or "".
func (a *app) namedProfile() string {
	if a.profile != "" {
		return a.profile
	}
	return a.getenv(envProfile)
}

// readLogins reads the person's logins file; a missing file holds none.
// A file another user could have written decides nothing.
func (a *app) readLogins() (loginsFile, string, error) {
	var lf loginsFile
	path, err := a.loginsPath()
	if err != nil {
		return lf, "", err
	}
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return lf, path, nil
	}
	if err == nil {
		err = personal.CheckOwned(path)
	}
	if err == nil {
		err = personal.CheckOwned(filepath.Dir(path))
	}
	if err != nil {
		return lf, path, errs.E(loginsNotPrivate, "your stored logins at "+path+" are not used: "+err.Error()).Wrap(err)
	}
	if err := json.Unmarshal(raw, &lf); err != nil {
		return lf, path, errs.E(errs.ConfigInvalid, "cannot read "+path+": "+err.Error()).Wrap(err)
	}
	return lf, path, nil
}

// loggedIn is the stored login this run uses: the named profile (which
// must exist) or the default one (which may not: then none). The default
// login is not used inside an embedded project (a .dont/ here or above,
// or DONT_PROJECT_DIR): there commands keep using the project's own
// store, and --profile or DONT_PROFILE names a login to go remote.
// (TestAStoredLoginDoesNotTakeOverAnEmbeddedProject)
func (a *app) loggedIn() (storedLogin, error) {
	if a.logins.read {
		return a.logins.login, a.logins.err
	}
	a.logins.read = true
	name := a.namedProfile()
	if name == "" && a.inEmbeddedProject() {
		return a.logins.login, nil // a project here is the default: its own store, not the login's server
	}
	if name == "" {
		lf, _, err := a.readLogins()
		a.logins.login, a.logins.err = lf.Profiles[defaultProfile], err
		return a.logins.login, a.logins.err
	}
	a.logins.profile = name
	lf, path, err := a.readLogins()
	if err == nil {
		if l, ok := lf.Profiles[name]; ok && profileName().MatchString(name) {
			a.logins.login = l
		} else {
			err = a.unknownProfile(name, path, lf)
		}
	}
	a.logins.err = err
	return a.logins.login, err
}

func (a *app) unknownProfile(name, path string, lf loginsFile) error {
	var names []string
	for n := range lf.Profiles {
		names = append(names, n)
	}
	slices.Sort(names)
	stored := "none"
	if len(names) > 0 {
		stored = strings.Join(names, ", ")
	}
	return errs.E(profileUnknown, "no stored login named "+quote(name)+" (stored in "+path+": "+stored+"); nothing was sent",
		errs.Step{Command: "dont login --profile <name> <endpoint>", Description: "store a login under that name, at your own terminal"},
		errs.Step{Command: "unset " + envProfile, Description: "or use the default login"}).
		Unmet("the profile is one of the stored logins")
}

// sameEndpoint reports whether two endpoint URLs name one API.
func sameEndpoint(x, y string) bool {
	return strings.TrimRight(x, "/") == strings.TrimRight(y, "/")
}

// storedToken is the token verbs send to ep: DONT_TOKEN when set (as
// always); else the stored login's token, but only when ep is the
// endpoint stored with it — an endpoint named by --endpoint or
// DONT_ENDPOINT, which an agent sets, never receives a stored token.
func (a *app) storedToken(ep string) string {
	if tok := a.getenv("DONT_TOKEN"); tok != "" {
		return tok
	}
	l, err := a.loggedIn()
	if err != nil || l.Endpoint == "" || !sameEndpoint(l.Endpoint, ep) {
		return ""
	}
	return l.Token
}

// loginEndpoint is the stored login's endpoint when neither --endpoint
// nor DONT_ENDPOINT names one; a named profile that is not stored, or a
// logins file that is not the person's, fails the run (loginProblem).
func (a *app) loginEndpoint() string {
	l, err := a.loggedIn()
	if err != nil {
		return ""
	}
	return l.Endpoint
}

// loginProblem is the error that keeps this run from its stored login,
// when the run would have used one.
func (a *app) loginProblem() error {
	if a.endpoint != "" || a.getenv("DONT_ENDPOINT") != "" {
		return nil
	}
	_, err := a.loggedIn()
	return err
}

// loginCommands are `dont login` and `dont logout`.
func (a *app) loginCommands(root *cobra.Command) {
	root.PersistentFlags().StringVar(&a.profile, "profile", "", "use this stored login (default $"+envProfile+", else \"default\"; see dont login)")
	root.AddCommand(&cobra.Command{
		Use:   "login [endpoint]",
		Short: "Store an endpoint and a harness token for this profile (token read with echo off, or from stdin).",
		Long: "Store an endpoint and a harness token in your config folder (0600), under --profile or $" + envProfile + " (default \"default\").\n" +
			"Verbs then go to that endpoint with no DONT_ENDPOINT or DONT_TOKEN. The token is read at a prompt with echo off,\n" +
			"or from stdin when it is not a terminal; never from a flag. Only a harness token is stored: an approver's or\n" +
			"admin's would let an agent that reads the file answer its own questions (docs/security.md, \"Stored logins\").\n\n" +
			"  dont login https://dont.example.com\n  dont tokens create --role harness --json | jq -r .data.token | dont login --profile ci http://127.0.0.1:8700",
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, argv []string) error {
			ep := a.endpoint
			if len(argv) == 1 {
				ep = argv[0]
			}
			if ep == "" {
				return errs.E(errs.Usage, "dont login needs the endpoint of a dont API",
					errs.Step{Command: "dont login http://127.0.0.1:8700", Description: "the address dont serve printed"})
			}
			return a.login(c.Context(), ep)
		},
	})
	root.AddCommand(&cobra.Command{
		Use:   "logout",
		Short: "Forget the stored login of this profile (--profile or $" + envProfile + ", default \"default\").",
		Args:  a.argCount(0),
		RunE:  func(*cobra.Command, []string) error { return a.logout() },
	})
}

// login verifies the token against ep (whoami) and stores it.
func (a *app) login(ctx context.Context, ep string) error {
	name := a.namedProfile()
	if name == "" {
		name = defaultProfile
	}
	if !profileName().MatchString(name) {
		return errs.E(errs.Usage, "a profile name is lower-case letters, digits, - and _ (up to 63): "+quote(name),
			errs.Step{Command: "dont login --profile work " + ep, Description: "name it plainly"}).Unmet("profile name matches [a-z0-9][a-z0-9_-]*")
	}
	if err := checkLoginEndpoint(ep); err != nil {
		return err
	}
	token, err := a.readToken(ctx, ep)
	if err != nil {
		return err
	}
	env, err := a.apiClient(ep, token).CallConfirmed(ctx, "whoami", map[string]any{}, false)
	if err != nil {
		return err
	}
	var who struct {
		Principal string   `json:"principal"`
		Roles     []string `json:"roles"`
	}
	if !env.OK || json.Unmarshal(env.Data, &who) != nil || who.Principal == "" {
		e := errs.E(loginNotVerified, "the API at "+ep+" did not say who this token is; nothing was stored")
		if fe := envelope.ErrorOf(env); fe != nil && !env.OK {
			e.Message = "the API at " + ep + " refused the token (" + fe.Error() + "); nothing was stored"
		}
		return e
	}
	if slices.ContainsFunc(who.Roles, func(r string) bool { return r != "harness" }) {
		return errs.E(loginTokenTooPowerful, "this token has the role(s) "+strings.Join(who.Roles, ", ")+
			"; dont login stores only harness tokens, since an agent that can read your files could use it to answer its own questions; nothing was stored",
			errs.Step{Command: "dont tokens create --role harness --name <agent>", Description: "store a harness token instead (an admin creates it)"},
			errs.Step{Command: "DONT_ENDPOINT=" + ep + " DONT_TOKEN=<approver token> dont approvals watch --session <session>", Description: "keep approver and admin tokens in your own shell's environment, or answer in the approvals page"}).
			Unmet("a harness token")
	}
	lf, path, err := a.readLogins()
	if err != nil && !errs.Is(err, loginsNotPrivate) && !errs.Is(err, errs.ConfigInvalid) {
		return err
	}
	if lf.Profiles == nil {
		lf.Profiles = map[string]storedLogin{}
	}
	lf.Profiles[name] = storedLogin{Endpoint: strings.TrimRight(ep, "/"), Token: token, Principal: who.Principal}
	if err := writeLogins(path, lf); err != nil {
		return err
	}
	a.emit(tools.Output{Kind: envelope.KindLogin, Data: map[string]any{"profile": name, "endpoint": strings.TrimRight(ep, "/"), "principal": who.Principal, "roles": who.Roles, "file": path},
		Hints: []string{"dont whoami  # see who your verbs run as", "dont logout  # forget it"}})
	return nil
}

// checkLoginEndpoint refuses an endpoint a token would cross a network
// in clear to: https, or http to a loopback address only.
func checkLoginEndpoint(ep string) error {
	u, err := url.Parse(ep)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return errs.E(errs.Usage, "not an http(s) URL: "+quote(ep),
			errs.Step{Command: "dont login http://127.0.0.1:8700", Description: "the address dont serve printed"})
	}
	if u.Scheme == "http" {
		host := u.Hostname()
		if ip := net.ParseIP(host); (ip == nil || !ip.IsLoopback()) && host != "localhost" {
			return errs.E(loginInsecure, "a token is sent over http only to a loopback address, not to "+host+"; nothing was stored",
				errs.Step{Command: "dont login https://" + u.Host + u.Path, Description: "use the API's https address"}).Unmet("https, or http to loopback")
		}
	}
	return nil
}

// readToken reads the token: at a prompt with echo off when stdin is a
// terminal, else the first line of stdin. Never a flag: ps shows those.
func (a *app) readToken(ctx context.Context, ep string) (string, error) {
	var line string
	if f, ok := a.stdin.(*os.File); ok && isTerminal(f) {
		fmt.Fprintf(a.stderr, "harness token for %s (not shown): ", ep)
		raw, err := readSecret(ctx, f)
		if err != nil {
			return "", err
		}
		line = string(raw)
	} else {
		s, err := bufio.NewReader(io.LimitReader(a.stdin, 4096)).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return "", errs.E(errs.Usage, "cannot read the token from stdin").Wrap(err)
		}
		line = s
	}
	token := strings.TrimSpace(line)
	if token == "" {
		return "", errs.E(errs.Usage, "no token given; nothing was stored",
			errs.Step{Command: "dont login " + ep, Description: "at your terminal: paste the harness token at the prompt"},
			errs.Step{Command: "dont login " + ep + " < token-file", Description: "or give it on stdin"})
	}
	return token, nil
}

// writeLogins writes the logins file atomically, 0600 in a 0700 folder.
func writeLogins(path string, lf loginsFile) error {
	raw, err := json.MarshalIndent(lf, "", "  ")
	if err != nil {
		return errs.E(errs.Internal, "cannot encode the logins").Wrap(err)
	}
	if err := personal.WriteFile(path, append(raw, '\n')); err != nil {
		return errs.E(errs.StoreError, "cannot write "+path+": "+err.Error()).Wrap(err)
	}
	return nil
}

// logout forgets the profile's stored login.
func (a *app) logout() error {
	name := a.namedProfile()
	if name == "" {
		name = defaultProfile
	}
	lf, path, err := a.readLogins()
	if err != nil && !errs.Is(err, loginsNotPrivate) {
		return err
	}
	_, had := lf.Profiles[name]
	if had {
		delete(lf.Profiles, name)
		if err := writeLogins(path, lf); err != nil {
			return err
		}
	}
	a.emit(tools.Output{Kind: envelope.KindLogin, Data: map[string]any{"profile": name, "logged_out": had, "file": path}})
	return nil
}

// inEmbeddedProject reports whether the run finds a project of its own
// (a .dont/ from the working directory up, or DONT_PROJECT_DIR) — one
// that opens, or one that is refused, but not none.
func (a *app) inEmbeddedProject() bool {
	wd, _ := os.Getwd()
	_, err := project.Find(wd, a.getenv("DONT_PROJECT_DIR"))
	return !errs.Is(err, errs.NotInitialised)
}
