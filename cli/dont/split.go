package main

import (
	"context"
	"strings"

	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/spawn"
	"github.com/dont-cli/dont/internal/tools"
)

// # Two builds of one command
//
// Go initialises every package a binary links, on every start, and the
// network's packages (net/http, crypto/tls and x509, the MCP SDK, the
// AWS signer) are most of what a `dont show` spent beyond its SQLite
// floor (docs/design.md §12, "The CLI is two builds"). So this package
// builds twice. Without tags it is the whole CLI, every command in one
// binary (`go install ./cli/dont`). With -tags light (light.go) it
// leaves out the files that link the network — serve, mcp, spawns run,
// direct mode's provider, the API client, webhook delivery — and hands
// any run that needs them to that whole build, installed beside it as
// dont-net, by exec'ing it with the same arguments before doing anything
// else (needsNet). README.md installs the pair.

const (
	// dontNetName is the whole build's file name, beside the light dont.
	dontNetName = "dont-net"
	// deliveryPass is the whole build's hidden command that delivers
	// what a light run's write made due (remote.go).
	deliveryPass = "__deliver"
	// envHandedOffBy carries the light build's revision to dont-net,
	// which refuses a run from another revision (dont-net-mismatch).
	envHandedOffBy = "DONT_HANDED_OFF_BY"
)

// buildRevision is the VCS revision the binary was built from, with
// "+modified" for a tree with changes; "" when it was built outside one.
func buildRevision() string {
	b := readBuildInfo()
	if b.Revision == "" {
		return ""
	}
	if b.Modified {
		return b.Revision + "+modified"
	}
	return b.Revision
}

// apiCaller is what the verbs call the API at --endpoint through
// (internal/client, in remote.go; the light build has none).
type apiCaller interface {
	CallConfirmed(ctx context.Context, tool string, args map[string]any, confirmed bool) (envelope.Envelope, error)
	Get(ctx context.Context, path string) (envelope.Envelope, error)
}

// netCommands are the commands only the whole build runs: they serve, or
// run agents against a server (and `hooks` delivers webhooks); the
// completion scripts and `completions` read every command's flags.
var netCommands = map[string]bool{"serve": true, "mcp": true, "hooks": true, "completion": true, "completions": true, "login": true, deliveryPass: true, "__complete": true, "__completeNoDesc": true}

// needsNet reports whether the run of argv, which invokes tool
// (invokedTool), needs what the light build leaves out: an API endpoint
// (--endpoint, DONT_ENDPOINT), a command of netCommands or `spawns run`
// (also as the subject of help), or direct mode's provider (--direct, or
// a spawning verb with no harness signal: spawn.DetectMode). When in
// doubt it says yes: the whole build runs every command, so handing a
// run over is never wrong, only slower.
func needsNet(argv []string, tool string, getenv func(string) string, stdoutTTY bool) bool {
	if getenv("DONT_ENDPOINT") != "" {
		return true
	}
	harness := false
	for _, arg := range argv {
		if arg == "--" {
			break
		}
		switch {
		case arg == "--endpoint" || strings.HasPrefix(arg, "--endpoint="),
			arg == "--direct" || strings.HasPrefix(arg, "--direct="):
			return true
		case arg == "--harness" || arg == "--harness=true":
			harness = true
		}
	}
	words := commandWords(argv)
	if len(words) > 0 && words[0] == "help" {
		words = words[1:]
	}
	if len(words) == 0 {
		return false
	}
	if netCommands[words[0]] || len(words) > 1 && words[0] == "spawns" && words[1] == "run" {
		return true
	}
	t, ok := tools.Lookup(tool)
	return ok && hasParam(t, "mode") &&
		spawn.DetectMode(spawn.Signals{Harness: harness, HarnessEnv: getenv("DONT_HARNESS"), StdoutTTY: stdoutTTY}) == spawn.ModeDirect
}

// commandWords are the first three words of argv that name a command: what
// comes before the first flag that is not one of the root's.
func commandWords(argv []string) []string {
	var words []string
	for i := 0; i < len(argv) && len(words) < 3; i++ {
		arg := argv[i]
		switch {
		case rootBoolFlags[arg]:
		case rootValueFlags[arg]:
			i++
		case strings.HasPrefix(arg, "-"):
			return words
		default:
			words = append(words, arg)
		}
	}
	return words
}
