package main

import (
	"context"
	"encoding/json"
	"maps"

	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/service"
	"github.com/dont-cli/dont/internal/tools"
)

// walksPages reports whether the CLI reads every page of a paginated call
// itself: a person who runs `dont list` expects every claim, so without
// --limit and --cursor the CLI reads page after page (MaxPageLimit at a
// time, each one response of the API) and prints them as one listing.
// With either flag it prints the one page asked for, and its hint names
// the command for the next (docs/design.md, "Paginated reads").
func walksPages(t *tools.Tool, args map[string]any) bool {
	if !t.Paged() || args["limit"] != nil || args["cursor"] != nil {
		return false
	}
	switch t.Name {
	case "show":
		history, _ := args["history"].(bool)
		return history
	case "spawns.manage":
		return args["op"] == "list"
	}
	return true
}

// pageArgs are the arguments of the walk's page after cursor ("": the first).
func pageArgs(args map[string]any, cursor string) map[string]any {
	out := maps.Clone(args)
	out["limit"] = float64(service.MaxPageLimit)
	if cursor != "" {
		out["cursor"] = cursor
	}
	return out
}

// walkEmbedded reads the pages after first through call and adds them to it.
func walkEmbedded(first tools.Output, args map[string]any, call func(map[string]any) (tools.Output, error)) (tools.Output, error) {
	for c := tools.NextCursor(first); c != ""; c = tools.NextCursor(first) {
		next, err := call(pageArgs(args, c))
		if err != nil {
			return next, err
		}
		if !tools.AppendPage(&first, next) {
			break
		}
	}
	return first, nil
}

// walkRemote reads every page of a call to the API: the envelope of the
// listing, or the first failure's envelope.
func walkRemote(ctx context.Context, args map[string]any, call func(context.Context, map[string]any) (envelope.Envelope, error)) (out tools.Output, failed *envelope.Envelope, err error) {
	for cursor, first := "", true; first || cursor != ""; first = false {
		env, err := call(ctx, pageArgs(args, cursor))
		if err != nil {
			return out, nil, err
		}
		if !env.OK {
			return out, &env, nil
		}
		page, ok := decodePage(env)
		if !ok {
			return out, &env, nil
		}
		if first {
			out = page
		} else if !tools.AppendPage(&out, page) {
			break
		}
		cursor = tools.NextCursor(out)
	}
	return out, nil, nil
}

// decodePage is the typed output of a page the API sent.
func decodePage(env envelope.Envelope) (tools.Output, bool) {
	out := tools.Output{Kind: env.Kind, Hints: env.Hints, Warnings: env.Warnings}
	var err error
	switch env.Kind {
	case envelope.KindList:
		var l service.EntityList
		err = json.Unmarshal(env.Data, &l)
		out.Data = l
	case envelope.KindSpawns:
		var l service.SpawnList
		err = json.Unmarshal(env.Data, &l)
		out.Data = l
	case string(ledger.KindClaim), string(ledger.KindTerm):
		var v service.EntityView
		err = json.Unmarshal(env.Data, &v)
		out.Data = v
	case envelope.KindHookDeliveries:
		var d service.HookDeliveries
		err = json.Unmarshal(env.Data, &d)
		out.Data = d
	default:
		return out, false
	}
	return out, err == nil
}
