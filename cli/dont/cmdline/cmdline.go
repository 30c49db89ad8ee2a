// Package cmdline holds the CLI's scanners of its command line and its
// words for it: which tool a command line plainly invokes (so that a run
// builds only that command), the deprecated skip flags' optional values,
// and a parameter the service names in its API spelling written as the
// CLI's flag.
package cmdline

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/dont-cli/dont/internal/confirm"
	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/tools"
)

// RootBoolFlags and RootValueFlags are the flags the root command and its
// persistent flags define (cli/dont), as InvokedTool reads them.
var (
	RootBoolFlags  = map[string]bool{"--json": true, "--direct": true, "--harness": true, "--plain": true, "--yes": true, "-y": true, "--no-input": true, "--refresh": true}
	RootValueFlags = map[string]bool{"--endpoint": true, "--profile": true}
)

// InvokedTool is the tool args plainly invoke — "show", "spawns.cancel" —
// or "" when that is not certain: another command, a flag before the
// command that the root does not define, a group whose subcommand is not
// the next word. Then the whole tree is made, as it always was.
func InvokedTool(args []string) string {
	for i := 0; i < len(args); i++ {
		arg := args[i]
		switch {
		case RootBoolFlags[arg]:
			continue
		case RootValueFlags[arg]:
			i++
			continue
		case strings.HasPrefix(arg, "--endpoint="), strings.HasPrefix(arg, "--profile="):
			continue
		case strings.HasPrefix(arg, "-"):
			return ""
		}
		t, ok := tools.Lookup(arg)
		if i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
			if sub, ok := tools.Lookup(arg + "." + args[i+1]); ok {
				return sub.Name
			}
		}
		if !ok || HasSubTools(arg) {
			return ""
		}
		return t.Name
	}
	return ""
}

// HasSubTools reports whether word is also a group of tools ("spawns").
func HasSubTools(word string) bool {
	for _, name := range tools.Names() {
		if strings.HasPrefix(name, word+".") {
			return true
		}
	}
	return false
}

// JoinSkipValues lets `--skip_confirmation false` mean the flag's value, as
// the deprecated flags took an optional value: a following true/false
// literal is joined to the flag before cobra parses it.
func JoinSkipValues(argv []string) []string {
	out := make([]string, 0, len(argv))
	for i := 0; i < len(argv); i++ {
		arg := argv[i]
		out = append(out, arg)
		if arg == "--" {
			return append(out, argv[i+1:]...)
		}
		if (arg == "--"+confirm.SkipParam || arg == "--"+confirm.AutoSkipParam) && i+1 < len(argv) {
			if _, err := strconv.ParseBool(argv[i+1]); err == nil {
				out[len(out)-1] = arg + "=" + argv[i+1]
				i++
			}
		}
	}
	return out
}

// apiParam is a parameter named in an error message the way the service
// names it: its API spelling in backticks (`request_id`). HTTP and MCP
// callers read it so; the CLI names it as its flag (--request-id). Only
// an error message needs it: compiled on first use, not at every start.
var apiParam = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile("`([a-z][a-z0-9_]*)`") })

// FlagNamed is msg with each parameter the service named in backticks
// written as the CLI's flag for it.
func FlagNamed(msg string) string {
	if !strings.Contains(msg, "`") {
		return msg
	}
	return apiParam().ReplaceAllStringFunc(msg, func(m string) string {
		return "--" + strings.ReplaceAll(strings.Trim(m, "`"), "_", "-")
	})
}

// WithFlagNames is env with its error message naming flags, for a person
// or program at the CLI; any other envelope is returned as it is.
func WithFlagNames(env envelope.Envelope) envelope.Envelope {
	if env.OK || !strings.Contains(string(env.Data), "`") {
		return env
	}
	var e errs.Error
	if json.Unmarshal(env.Data, &e) != nil {
		return env
	}
	e.Message = FlagNamed(e.Message)
	if b, err := json.Marshal(&e); err == nil {
		env.Data = b
	}
	return env
}
