// Package render is the CLI's human output: what a person at a terminal
// reads instead of the JSON envelope. Every envelope kind has a rendering
// (kinds.go): lists are tables with aligned columns, times are local with a
// relative age ("in 23 h", "3 min ago") from an injected clock, counts have
// correct plurals, verdicts and endings are said in words. Warnings and
// hints go to stderr. Every string taken from an envelope's data is shown
// through internal/visible: as far as this package knows an agent wrote
// it, so it can neither move the cursor nor hide what the person reads.
// The JSON envelope keeps the exact bytes; this is presentation only.
package render

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/visible"
	"github.com/mattn/go-runewidth"
)

// Options say how to render for one person.
type Options struct {
	// Now is the clock relative ages are measured from.
	Now time.Time
	// Location is the person's time zone (nil: UTC).
	Location *time.Location
	// Width is the terminal's width in columns (0: 100). A table's last
	// column is cut to fit it.
	Width int
	// Color styles stdout; ErrColor styles stderr (NO_COLOR, --plain,
	// TERM=dumb and a stream that is not a terminal turn them off).
	Color, ErrColor bool
}

func (o Options) width() int {
	if o.Width <= 0 {
		return 100
	}
	return max(o.Width, 40)
}

func (o Options) loc() *time.Location {
	if o.Location == nil {
		return time.UTC
	}
	return o.Location
}

// Envelope prints a success envelope for a person: its data on out, its
// warnings and hints on errOut.
func Envelope(out, errOut io.Writer, env envelope.Envelope, o Options) {
	if !env.OK {
		var e errs.Error
		if json.Unmarshal(env.Data, &e) != nil || e.Code == "" {
			e = errs.Error{Code: errs.Internal, Message: "an error envelope without a code"}
		}
		Notes(errOut, env.Warnings, nil, o)
		Error(errOut, &e, o)
		return
	}
	var d map[string]any
	_ = json.Unmarshal(env.Data, &d)
	p := &printer{w: out, o: o, st: Palette{On: o.Color}}
	renderer, ok := kinds[env.Kind]
	if !ok {
		renderer = generic
	}
	renderer(p, doc(d))
	Notes(errOut, env.Warnings, env.Hints, o)
}

// Notes prints warnings and hints on stderr.
func Notes(errOut io.Writer, warnings []envelope.Warning, hints []string, o Options) {
	st := Palette{On: o.ErrColor}
	for _, w := range warnings {
		fmt.Fprintf(errOut, "%s %s: %s\n", st.Yellow("warning:"), visible.Line(string(w.Code)), visible.Line(w.Message))
	}
	for _, h := range hints {
		fmt.Fprintf(errOut, "%s %s\n", st.Dim("hint:"), visible.Line(h))
	}
}

// Error prints a failure for a person on w (stderr): the code and message,
// then each remediation step as a command to run.
func Error(w io.Writer, e *errs.Error, o Options) {
	st := Palette{On: o.ErrColor}
	fmt.Fprintf(w, "%s %s: %s\n", st.Red("error:"), visible.Line(string(e.Code)), visible.Line(e.Message))
	for _, s := range e.Remediation {
		fmt.Fprintf(w, "  try: %s  — %s\n", visible.Line(s.Command), visible.Line(s.Description))
	}
}

// printer writes one rendering.
type printer struct {
	w  io.Writer
	o  Options
	st Palette
}

func (p *printer) line(format string, args ...any) { fmt.Fprintf(p.w, format+"\n", args...) }

// fields prints label/value pairs with the values aligned, indented by
// two spaces; an empty value leaves its line out.
func (p *printer) fields(pairs ...string) {
	width := 0
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i+1] != "" {
			width = max(width, Width(pairs[i]))
		}
	}
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i+1] == "" {
			continue
		}
		p.line("  %s%s  %s", pairs[i], strings.Repeat(" ", width-Width(pairs[i])), pairs[i+1])
	}
}

// cell is one table cell: its text (already visible) and its style.
type cell struct {
	text  string
	style func(string) string
}

func c(s string) cell { return cell{text: s} }

// table prints rows under a header with aligned columns, two spaces apart.
// Alignment counts the terminal columns of the plain text (Width: a CJK
// character takes two), so styling never shifts a column; the last
// column is cut to the terminal's width.
func (p *printer) table(indent string, header []string, rows [][]cell) {
	p.grid(indent, header, rows, true)
}

// tableWhole is table without the cut: for a column a person must read
// whole (a reason, evidence), which the terminal wraps instead.
func (p *printer) tableWhole(indent string, header []string, rows [][]cell) {
	p.grid(indent, header, rows, false)
}

func (p *printer) grid(indent string, header []string, rows [][]cell, cutLast bool) {
	widths := make([]int, len(header))
	for i, h := range header {
		widths[i] = Width(h)
	}
	for _, r := range rows {
		for i, x := range r {
			widths[i] = max(widths[i], Width(x.text))
		}
	}
	last := len(header) - 1
	used := Width(indent)
	for i := 0; i < last; i++ {
		used += widths[i] + 2
	}
	room := max(p.o.width()-used, 12)
	emit := func(r []cell) {
		var b strings.Builder
		b.WriteString(indent)
		for i, x := range r {
			text := x.text
			if i == last && cutLast {
				text = cut(text, room)
			}
			styled := text
			if x.style != nil {
				styled = x.style(text)
			}
			b.WriteString(styled)
			if i < last {
				b.WriteString(strings.Repeat(" ", widths[i]-Width(text)+2))
			}
		}
		p.line("%s", strings.TrimRight(b.String(), " "))
	}
	head := make([]cell, len(header))
	for i, h := range header {
		head[i] = cell{text: h, style: p.st.Dim}
	}
	emit(head)
	for _, r := range rows {
		emit(r)
	}
}

// cut shortens s to n columns, ending with "…" when it was longer.
func cut(s string, n int) string { return columns.Truncate(s, n, "…") }

// columns measures text as a terminal lays it out: East Asian wide and
// fullwidth characters take two columns, combining marks none. Ambiguous
// characters count as narrow whatever the locale, so a rendering is the
// same everywhere (its tests included).
var columns = &runewidth.Condition{EastAsianWidth: false, StrictEmojiNeutral: true}

// Width is the number of terminal columns s takes.
func Width(s string) int { return columns.StringWidth(s) }

// doc is an envelope's data as decoded JSON.
type doc map[string]any

// s is a string field for a person: on one line, hidden characters shown.
func (d doc) s(k string) string {
	switch v := d[k].(type) {
	case nil:
		return ""
	case string:
		return visible.Line(v)
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	default:
		return visible.Line(fmt.Sprint(v))
	}
}

// text is a multi-line string field: newlines and tabs kept.
func (d doc) text(k string) string { v, _ := d[k].(string); return visible.Text(v) }

func (d doc) n(k string) int {
	f, _ := d[k].(float64)
	return int(f)
}

func (d doc) b(k string) bool { v, _ := d[k].(bool); return v }

func (d doc) has(k string) bool { _, ok := d[k]; return ok && d[k] != nil }

func (d doc) m(k string) doc { v, _ := d[k].(map[string]any); return doc(v) }

func (d doc) list(k string) []doc {
	l, _ := d[k].([]any)
	out := make([]doc, 0, len(l))
	for _, x := range l {
		if m, ok := x.(map[string]any); ok {
			out = append(out, doc(m))
		}
	}
	return out
}

// strs is a list of strings, each on one line, hidden characters shown.
func (d doc) strs(k string) []string {
	l, _ := d[k].([]any)
	out := make([]string, 0, len(l))
	for _, x := range l {
		out = append(out, visible.Line(fmt.Sprint(x)))
	}
	return out
}

func (d doc) time(k string) (time.Time, bool) {
	s, _ := d[k].(string)
	t, err := time.Parse(time.RFC3339Nano, s)
	return t, err == nil && s != ""
}

// at is a time field as local time to the second with its relative age:
// "2026-12-01 11:03:05 (3 min ago)".
func (p *printer) at(d doc, k string) string {
	t, ok := d.time(k)
	if !ok {
		return d.s(k)
	}
	return p.clock(t) + " (" + p.age(t) + ")"
}

// clock is t in the person's zone, to the second, always 19 columns wide.
func (p *printer) clock(t time.Time) string { return t.In(p.o.loc()).Format("2006-01-02 15:04:05") }

// age says how far t is from now: "just now", "3 min ago", "in 23 h".
func (p *printer) age(t time.Time) string {
	d := t.Sub(p.o.Now)
	if d > -time.Second && d < time.Second {
		return "just now"
	}
	s := span(d.Abs())
	if d > 0 {
		return "in " + s
	}
	return s + " ago"
}

// span is a duration in the largest unit that fits, rounded down:
// "42 s", "3 min", "23 h", "6 d".
func span(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%d s", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%d min", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h", int(d/time.Hour))
	}
	return fmt.Sprintf("%d d", int(d/(24*time.Hour)))
}

// Countdown is a remaining duration to the second, as a waiting person
// reads it: "1 min 52 s", "23 h 5 min", "4 s".
func Countdown(d time.Duration) string {
	d = max(d, 0).Round(time.Second)
	h, m, s := int(d/time.Hour), int(d%time.Hour/time.Minute), int(d%time.Minute/time.Second)
	switch {
	case h > 0:
		return fmt.Sprintf("%d h %d min", h, m)
	case m > 0:
		return fmt.Sprintf("%d min %d s", m, s)
	}
	return fmt.Sprintf("%d s", s)
}

// Plural is n with its noun: "1 spawn", "2 spawns", "0 entities".
func Plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// generic renders data this package has no table for: each field on its
// own line, nested values as one line of JSON, hidden characters shown.
func generic(p *printer, d doc) {
	keys := make([]string, 0, len(d))
	for k := range d {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var pairs []string
	for _, k := range keys {
		var v string
		switch x := d[k].(type) {
		case string, float64, bool, nil:
			v = orDash(d.s(k))
			if t, ok := d.time(k); ok && strings.HasSuffix(k, "_at") {
				v = p.clock(t) + " (" + p.age(t) + ")"
			}
		default:
			b, _ := json.Marshal(x)
			v = string(visible.JSON(b))
		}
		pairs = append(pairs, visible.Line(strings.ReplaceAll(k, "_", " ")), v)
	}
	p.fields(pairs...)
}

// ms is a count of milliseconds as a duration.
func ms(v float64) time.Duration {
	if math.IsNaN(v) {
		return 0
	}
	return time.Duration(v) * time.Millisecond
}
