package tools

import (
	"strconv"
	"strings"

	"github.com/dont-cli/dont/internal/service"
)

// The parameters of a paginated read (docs/design.md, "Paginated reads").
var (
	limitParam = Param{Name: "limit", Type: Integer, Description: "at most this many per page (default " +
		strconv.Itoa(service.DefaultPageLimit) + ", at most " + strconv.Itoa(service.MaxPageLimit) + ")"}
	// deliveriesLimitParam is hooks.deliveries' limit: a page holds up to
	// this many deliveries and as many attempts.
	deliveriesLimitParam = Param{Name: "limit", Type: Integer, Description: "at most this many deliveries and this many attempts per page (default " +
		strconv.Itoa(service.DefaultPageLimit) + ", at most " + strconv.Itoa(service.MaxPageLimit) + ")"}
	cursorParam = Param{Name: "cursor", Type: String, Description: "the next_cursor of the page before (from the same listing)"}
)

// page is the page a call's limit and cursor ask for.
func page(a Args) service.Page {
	return service.Page{Limit: a.Int("limit"), Cursor: a.Str("cursor")}
}

// Paged reports whether a tool's reads come in pages (it takes a cursor).
func (t *Tool) Paged() bool {
	for _, p := range t.Params {
		if p.Name == cursorParam.Name {
			return true
		}
	}
	return false
}

// moreHint is the hint of a page with more after it: the command that
// reads the next page. argv is the command as the CLI spells it.
func moreHint(argv, cursor string) []string {
	if cursor == "" {
		return nil
	}
	return []string{"more: " + argv + " --cursor " + cursor}
}

// NextCursor is the next_cursor of a paginated tool's output ("" on the
// last page, or for any other output).
func NextCursor(o Output) string {
	switch d := o.Data.(type) {
	case service.EntityList:
		return d.NextCursor
	case service.SpawnList:
		return d.NextCursor
	case service.EntityView:
		return d.NextCursor
	case service.HookDeliveries:
		return d.NextCursor
	}
	return ""
}

// AppendPage adds the items of the next page, next, to o, which then
// names next's cursor; the hint naming the page after is replaced by
// next's own. It reports false for an output that is no page.
func AppendPage(o *Output, next Output) bool {
	switch d := o.Data.(type) {
	case service.EntityList:
		n, ok := next.Data.(service.EntityList)
		if !ok {
			return false
		}
		d.Entities = append(d.Entities, n.Entities...)
		d.Count, d.NextCursor = len(d.Entities), n.NextCursor
		o.Data = d
	case service.SpawnList:
		n, ok := next.Data.(service.SpawnList)
		if !ok {
			return false
		}
		d.Spawns = append(d.Spawns, n.Spawns...)
		d.Count, d.NextCursor = len(d.Spawns), n.NextCursor
		o.Data = d
	case service.EntityView:
		n, ok := next.Data.(service.EntityView)
		if !ok {
			return false
		}
		d.History = append(d.History, n.History...)
		d.NextCursor = n.NextCursor
		o.Data = d
	case service.HookDeliveries:
		n, ok := next.Data.(service.HookDeliveries)
		if !ok {
			return false
		}
		d.Deliveries = append(d.Deliveries, n.Deliveries...)
		d.Attempts = append(d.Attempts, n.Attempts...)
		d.NextCursor = n.NextCursor
		o.Data = d
	default:
		return false
	}
	hints := o.Hints[:0]
	for _, h := range o.Hints {
		if !strings.HasPrefix(h, "more: ") {
			hints = append(hints, h)
		}
	}
	o.Hints = append(hints, next.Hints...)
	o.Warnings = append(o.Warnings, next.Warnings...)
	return true
}

// limitFlag is the --limit of the call, for the hint naming the next page.
func limitFlag(a Args) string {
	if a["limit"] == nil {
		return ""
	}
	return " --limit " + strconv.Itoa(a.Int("limit"))
}
