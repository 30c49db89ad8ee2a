package main

import (
	"regexp"
	"strconv"
	"strings"
)

// The measurements every generated table and chart is made from. They are
// read from the markdown tables bench/coldstart, bench/lifecycles and
// bench/serveload print — by column name, not position, and with any
// unit or emphasis around a number ignored — so a column those commands
// add or move does not break the report; a figure that is missing is
// shown as "—" and its goal as not measured.

// The goals (docs/design.md §10, the same as bench/coldstart's and
// bench/serveload's constants).
const (
	goalColdRatio     = 1.6 // dont show wall time / the SQLite floor's, at most
	goalColdRSSMB     = 20  // dont show max RSS, at most (bench/coldstart: one binary links every transport)
	goalInProcRatio   = 0.8 // in-process lifecycles/s / the floor's, at least
	goalServeRatio    = 0.7 // dont serve lifecycles/s / the floor server's, at least
	goalServeP99Ms    = 20  // dont serve callback p99, at most
	goalServeRSSMB    = 40  // dont serve max RSS, at most
	goalServeThrottle = 0   // 429s at that load
)

// coldRow is one binary of bench/coldstart.
type coldRow struct {
	Name                 string
	WallMs, P90Ms, CPUMs float64
	RSSMB                float64
	Faults               float64
}

type coldStart struct {
	Rows        []coldRow
	Floor, Show *coldRow // the SQLite floor and `dont show <id> --json`
	// FloorStartup and ShowStartup are the two built with -tags
	// startuponly: their start-up alone (nil in an older output).
	FloorStartup, ShowStartup *coldRow
	Raw                       string // the command's output, as printed
}

// startupBound is dont's start-up plus the floor's work after its own
// start-up, in ms: the least a `dont show` linking what dont links can
// take (bench/coldstart); -1 when the run has no start-up rows.
func (c coldStart) startupBound() float64 {
	if c.Floor == nil || c.FloorStartup == nil || c.ShowStartup == nil || c.FloorStartup.WallMs < 0 || c.ShowStartup.WallMs < 0 {
		return -1
	}
	return c.ShowStartup.WallMs + c.Floor.WallMs - c.FloorStartup.WallMs
}

// lifeRow is one benchmark of bench/lifecycles (medians of its rounds).
type lifeRow struct {
	Name                  string // e.g. SpawnLifecycle, SpawnLifecycleInterleaved/callers=16
	Rounds                int
	Floor, Dont           float64 // lifecycles/s
	FloorCPUus, DontCPUus float64
	Ratio                 float64 // median of the rounds' dont/floor
}

type lifecycles struct {
	Rows []lifeRow
	Raw  string
}

// serveRow is one server and mode of bench/serveload (medians of its rounds).
type serveRow struct {
	Server                   string // floor, dont serve, baseline
	Keys                     bool
	Sync                     string  // SQLite's synchronous setting: FULL (dont's), NORMAL
	Rate                     float64 // lifecycles/s
	Ratio                    float64 // dont / floor, the median of the rounds' ratios; -1 when not printed
	AssumeP50, AssumeP99     float64 // ms
	CallbackP50, CallbackP99 float64 // ms
	Throttled                float64
	CPUus, RSSMB             float64
}

// serveMode is one configuration bench/serveload ran both servers in.
type serveMode struct {
	Keys bool
	Sync string
}

type serveLoad struct {
	Rows []serveRow
	// FullCost is each server's lifecycles/s at synchronous=FULL over its
	// own at NORMAL, the median of the rounds (-1: not measured).
	FullCostFloor, FullCostDont float64
	Raw                         string
}

// row is the server's row at synchronous=FULL, the setting dont runs with.
func (s serveLoad) row(server string, keys bool) *serveRow {
	return s.rowAt(server, serveMode{Keys: keys, Sync: syncFull})
}

func (s serveLoad) rowAt(server string, m serveMode) *serveRow {
	for i := range s.Rows {
		if s.Rows[i].Server == server && s.Rows[i].Keys == m.Keys && s.Rows[i].Sync == m.Sync {
			return &s.Rows[i]
		}
	}
	return nil
}

// ratio is dont / floor in mode m: the rounds' median ratio that
// bench/serveload printed, else the ratio of the medians; -1 if either
// server is missing.
func (s serveLoad) ratio(m serveMode) float64 {
	f, d := s.rowAt("floor", m), s.rowAt("dont serve", m)
	switch {
	case d != nil && d.Ratio >= 0:
		return d.Ratio
	case f != nil && d != nil:
		return safeDiv(d.Rate, f.Rate)
	}
	return -1
}

const (
	syncFull   = "FULL"
	syncNormal = "NORMAL"
)

// table is a markdown table: its header's column names (lower case) and
// its rows' cells.
type table struct {
	cols []string
	rows [][]string
}

func (t table) col(names ...string) int {
	for _, n := range names {
		for i, c := range t.cols {
			if c == n {
				return i
			}
		}
	}
	for _, n := range names { // then a column whose name starts so
		for i, c := range t.cols {
			if strings.HasPrefix(c, n) {
				return i
			}
		}
	}
	return -1
}

func (t table) cell(row []string, i int) string {
	if i < 0 || i >= len(row) {
		return ""
	}
	return row[i]
}

func cells(line string) []string {
	line = strings.TrimSpace(line)
	line = strings.TrimPrefix(strings.TrimSuffix(line, "|"), "|")
	parts := strings.Split(line, "|")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

var ruleRe = regexp.MustCompile(`^\|?(\s*:?-+:?\s*\|)+\s*(:?-+:?\s*)?$`)

// tables finds the markdown tables of a command's output.
func tables(out string) []table {
	lines := strings.Split(out, "\n")
	var ts []table
	for i := 0; i+1 < len(lines); i++ {
		if !strings.HasPrefix(strings.TrimSpace(lines[i]), "|") || !ruleRe.MatchString(strings.TrimSpace(lines[i+1])) {
			continue
		}
		t := table{}
		for _, c := range cells(lines[i]) {
			t.cols = append(t.cols, strings.ToLower(c))
		}
		j := i + 2
		for ; j < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[j]), "|"); j++ {
			t.rows = append(t.rows, cells(lines[j]))
		}
		ts = append(ts, t)
		i = j - 1
	}
	return ts
}

var numRe = regexp.MustCompile(`-?[0-9][0-9,]*(\.[0-9]+)?`)

// num is the first number in a cell ("1,234", "4.07 ms", "**0.93×**"), or -1.
func num(s string) float64 {
	m := numRe.FindString(s)
	if m == "" {
		return -1
	}
	v, err := strconv.ParseFloat(strings.ReplaceAll(m, ",", ""), 64)
	if err != nil {
		return -1
	}
	return v
}

// parseColdStart reads bench/coldstart's table.
func parseColdStart(out string) coldStart {
	c := coldStart{Raw: out}
	for _, t := range tables(out) {
		name, wall := t.col("binary"), t.col("median")
		if name < 0 || wall < 0 {
			continue
		}
		p90, cpu, rss, flt := t.col("p90"), t.col("cpu (median)", "cpu"), t.col("max rss (median)", "max rss"), t.col("page faults (median)", "page faults")
		for _, r := range t.rows {
			c.Rows = append(c.Rows, coldRow{Name: t.cell(r, name), WallMs: num(t.cell(r, wall)), P90Ms: num(t.cell(r, p90)),
				CPUMs: num(t.cell(r, cpu)), RSSMB: num(t.cell(r, rss)), Faults: num(t.cell(r, flt))})
		}
		break
	}
	for i := range c.Rows {
		n := c.Rows[i].Name
		switch {
		case strings.Contains(n, "start-up only"):
			if strings.Contains(n, "floor") {
				c.FloorStartup = &c.Rows[i]
			} else {
				c.ShowStartup = &c.Rows[i]
			}
		case c.Floor == nil && strings.Contains(n, "floor"):
			c.Floor = &c.Rows[i]
		case c.Show == nil && strings.HasPrefix(n, "dont show") && !strings.Contains(n, "("):
			c.Show = &c.Rows[i]
		}
	}
	return c
}

var medianOfRe = regexp.MustCompile(`^(.*?)\s*\(median of (\d+) rounds?\)$`)

// parseLifecycles reads bench/lifecycles's table.
func parseLifecycles(out string) lifecycles {
	l := lifecycles{Raw: out}
	for _, t := range tables(out) {
		name, floor, dont := t.col("benchmark"), t.col("floor lifecycles/s"), t.col("dont lifecycles/s")
		if name < 0 || floor < 0 || dont < 0 {
			continue
		}
		fc, dc, ratio := t.col("floor cpu µs", "floor cpu"), t.col("dont cpu µs", "dont cpu"), t.col("dont/floor")
		for _, r := range t.rows {
			row := lifeRow{Name: t.cell(r, name), Floor: num(t.cell(r, floor)), Dont: num(t.cell(r, dont)),
				FloorCPUus: num(t.cell(r, fc)), DontCPUus: num(t.cell(r, dc)), Ratio: num(t.cell(r, ratio))}
			if m := medianOfRe.FindStringSubmatch(row.Name); m != nil {
				row.Name = m[1]
				row.Rounds, _ = strconv.Atoi(m[2])
			}
			if row.Ratio < 0 && row.Floor > 0 && row.Dont >= 0 {
				row.Ratio = row.Dont / row.Floor
			}
			l.Rows = append(l.Rows, row)
		}
		break
	}
	return l
}

// parseServeLoad reads bench/serveload's first table (a row per server
// and mode; a table without the synchronous column is all FULL) and its
// table of what synchronous=FULL costs.
func parseServeLoad(out string) serveLoad {
	s := serveLoad{Raw: out, FullCostFloor: -1, FullCostDont: -1}
	found := false
	for _, t := range tables(out) {
		server, keys, rate := t.col("server"), t.col("idempotency-key"), t.col("lifecycles/s")
		if !found && server >= 0 && rate >= 0 {
			found = true
			sync, ratio := t.col("synchronous"), t.col("dont / floor")
			ap50, ap99, cp50, cp99 := t.col("assume p50"), t.col("assume p99"), t.col("callback p50"), t.col("callback p99")
			thr, cpu, rss := t.col("429s"), t.col("cpu per lifecycle", "cpu"), t.col("max rss")
			for _, r := range t.rows {
				row := serveRow{Server: t.cell(r, server), Keys: strings.EqualFold(t.cell(r, keys), "yes"), Sync: strings.ToUpper(t.cell(r, sync)),
					Rate: num(t.cell(r, rate)), Ratio: num(t.cell(r, ratio)), AssumeP50: num(t.cell(r, ap50)), AssumeP99: num(t.cell(r, ap99)),
					CallbackP50: num(t.cell(r, cp50)), CallbackP99: num(t.cell(r, cp99)), Throttled: num(t.cell(r, thr)),
					CPUus: num(t.cell(r, cpu)), RSSMB: num(t.cell(r, rss))}
				if row.Sync == "" {
					row.Sync = syncFull
				}
				s.Rows = append(s.Rows, row)
			}
			continue
		}
		floor, dont := t.col("floor"), t.col("dont serve")
		if server >= 0 || floor < 0 || dont < 0 {
			continue
		}
		for _, r := range t.rows {
			if strings.HasPrefix(strings.ToLower(t.cell(r, 0)), "lifecycles/s at full / at normal") {
				s.FullCostFloor, s.FullCostDont = num(t.cell(r, floor)), num(t.cell(r, dont))
			}
		}
	}
	return s
}
