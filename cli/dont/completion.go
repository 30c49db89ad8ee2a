package main

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/tools"
	"github.com/spf13/cobra"
)

// isCompletion reports whether args run a completion: the script
// (`completion`, and its old name `completions`) or cobra's hidden
// __complete, which the scripts call at each TAB. Both read every
// command's flags, so the whole tree is built for them (buildFor).
func isCompletion(args []string) bool {
	return len(args) > 0 && (args[0] == "completion" || args[0] == "completions" || strings.HasPrefix(args[0], "__complete"))
}

// completeTimeout bounds the store or API read behind one TAB: a shell
// waits for it.
const completeTimeout = 2 * time.Second

// idLister is where the ids a positional argument takes are read: the
// read-only tool that lists them, its arguments, and the ids' prefixes.
type idLister struct {
	tool     string
	args     map[string]any
	prefixes []string
}

// listerFor is the lister of the ids tool t's positional p takes, or
// false when p is free text (a statement, a question, a CURIE).
func listerFor(t *tools.Tool, p tools.Param) (idLister, bool) {
	group, _, _ := strings.Cut(t.Name, ".")
	switch {
	case p.Name == "request_id":
		return idLister{tool: "spawns", args: map[string]any{"pending": true}, prefixes: []string{"spawn:"}}, true
	case p.Name != "id":
		return idLister{}, false
	case group == "approvals":
		return idLister{tool: "approvals.list", args: map[string]any{"pending": true}, prefixes: []string{"apr:"}}, true
	case group == "sessions":
		return idLister{tool: "sessions.list", prefixes: []string{"ses:"}}, true
	case group == "hooks":
		return idLister{tool: "hooks.list", prefixes: []string{"hook:"}}, true
	case group == "confirmations":
		return idLister{tool: "confirmations.list", prefixes: []string{"conf:"}}, true
	case group == "tokens":
		return idLister{tool: "tokens.list", prefixes: []string{"tok:"}}, true
	}
	return idLister{tool: "list", prefixes: []string{"claim:", "term:"}}, true
}

// addCompletions makes TAB suggest what each tool command takes: the ids
// of its positional argument, read from the project's store (or the API
// the verbs go to), and the values of every flag with a fixed set —
// statuses, roles, tiers, formats.
func (a *app) addCompletions(c *cobra.Command) {
	for _, sub := range c.Commands() {
		a.addCompletions(sub)
	}
	name := strings.ReplaceAll(strings.TrimPrefix(c.CommandPath(), c.Root().Name()+" "), " ", ".")
	t, ok := tools.Lookup(name)
	if !ok || c == c.Root() {
		return
	}
	var positional []tools.Param
	for _, p := range t.Params {
		if p.Positional {
			positional = append(positional, p)
			continue
		}
		if len(p.Enum) == 0 || p.Internal {
			continue
		}
		values := p.Enum
		c.RegisterFlagCompletionFunc(strings.ReplaceAll(p.Name, "_", "-"), func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) { //nolint:errcheck // a flag registered twice keeps its first
			return values, cobra.ShellCompDirectiveNoFileComp
		})
	}
	c.ValidArgsFunction = func(c *cobra.Command, argv []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(argv) >= len(positional) {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		l, ok := listerFor(t, positional[len(argv)])
		if !ok {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return a.listIDs(c.Context(), l, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

// listIDs runs the lister and gives the ids it returned that start with
// prefix, in the order listed. A failure (no project, no token) suggests
// nothing: a TAB prints no error.
func (a *app) listIDs(ctx context.Context, l idLister, prefix string) []string {
	t, ok := tools.Lookup(l.tool)
	if !ok {
		return nil
	}
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithTimeout(ctx, completeTimeout)
	defer cancel()
	one, release, err := a.caller(t)
	if err != nil {
		return nil
	}
	defer release()
	args := map[string]any{}
	for k, v := range l.args {
		args[k] = v
	}
	env, _ := one(service.WithPrincipal(ctx, a.principal()), args)
	if !env.OK {
		return nil
	}
	var data any
	if json.Unmarshal(env.Data, &data) != nil {
		return nil
	}
	var ids []string
	collectIDs(data, l.prefixes, &ids)
	var out []string
	for _, id := range ids {
		if strings.HasPrefix(id, prefix) && !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

// collectIDs appends every string in v that starts with one of prefixes
// and is an id's whole value (under a key ending in "id").
func collectIDs(v any, prefixes []string, ids *[]string) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if s, ok := x.(string); ok && (k == "id" || strings.HasSuffix(k, "_id")) {
				for _, p := range prefixes {
					if strings.HasPrefix(s, p) {
						*ids = append(*ids, s)
					}
				}
				continue
			}
			collectIDs(x, prefixes, ids)
		}
	case []any:
		for _, x := range v {
			collectIDs(x, prefixes, ids)
		}
	}
}
