//go:build light

package main

import (
	"os"
	"slices"
	"strings"

	"github.com/dont-cli/dont/internal/tools"
)

// mayUseStoredLogin reports, before anything runs, whether a run of argv
// may send its verbs to a stored login: no endpoint is named, the command
// is a tool's, and a profile is named or the logins file exists. The
// light build hands such a run to dont-net (light.go).
func (a *app) mayUseStoredLogin(argv []string) bool {
	if a.getenv("DONT_ENDPOINT") != "" {
		return false
	}
	words := commandWords(argv)
	if len(words) == 0 || words[0] == "help" {
		return false
	}
	if _, ok := tools.Lookup(words[0]); !ok && !hasSubTools(words[0]) {
		return false
	}
	if a.getenv(envProfile) != "" || slices.ContainsFunc(argv, func(s string) bool { return s == "--profile" || strings.HasPrefix(s, "--profile=") }) {
		return true
	}
	if a.inEmbeddedProject() {
		return false // the default login is not used in a project (login.go, loggedIn)
	}
	path, err := a.loginsPath()
	if err != nil {
		return false
	}
	_, err = os.Stat(path)
	return err == nil
}
