package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// What one binary costs (issue 30): the CLI was two builds (a light
// `dont` without the network's packages, handing the rest to dont-net)
// with start-up tricks and hand-written JSON encoders around them. Each
// was removed in a commit of its own where it saved a cold `dont show`
// less than 0.5 ms; the report builds each of those commits as
// bench/coldstart builds dont and times them as -also rows of the same
// run, beside the floor.
type costStep struct {
	Name    string // the -also row's name
	Rev     string // the commit built
	Tags    string // build tags, "" for none
	Removed string // what this commit removed, for the table
}

var oneBinarySteps = []costStep{
	{"before: light build", "27c7931", "light", "— (the `dont` README.md installed: no network package; the rest handed to dont-net by execve)"},
	{"before: whole build", "27c7931", "", "— (dont-net, and what `go install` made)"},
	{"1 one binary", "7359384", "", "the light build, `needsNet`, dont-net, `__deliver`, the `dont-net-*` errors"},
	{"2 no init tricks", "f290491", "", "`internal/mainstack`, `internal/oneproc`"},
	{"3 data_version", "02fd11f", "", "the known cache's `-shm` header check (now `PRAGMA data_version`)"},
	{"4 envelope by encoding/json", "ca5743d", "", "`envelope.Marshal`'s hand-written encoder"},
	{"5 documents by encoding/json", "031f58a", "", "the SQLite store's hand-written document encoders (docjson.go)"},
	{"6 less at init", "5819d77", "", "(added) the profile-name regexp and the approvals page built on first use, not at every start"},
	{"7 start-up packages back", "d184565", "", "(added back) `internal/mainstack`, `internal/oneproc`: step 2 cost over 0.5 ms where page faults are dear"},
	{"8 no text/template evaluator", "4bfcd64", "", "(changed) agent profiles evaluated by internal/runner, not text/template: the linker drops unused methods again"},
}

// buildSteps builds each step's commit into dir, as bench/coldstart builds
// dont, and returns coldstart's -also flags; a commit this checkout does
// not have is left out (the section says so).
func buildSteps(dir string) (flags []string, missing []string) {
	for i, s := range oneBinarySteps {
		src := filepath.Join(dir, fmt.Sprintf("src%d", i))
		check(os.MkdirAll(src, 0o755))
		archive := exec.Command("sh", "-c", "git archive "+s.Rev+" | tar -x -C "+src)
		if out, err := archive.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "report: %s (%s) not built: %v %s\n", s.Name, s.Rev, err, out)
			missing = append(missing, s.Name)
			continue
		}
		bin := filepath.Join(dir, fmt.Sprintf("dont%d", i))
		args := []string{"build", "-trimpath", "-ldflags=-s -w"}
		if s.Tags != "" {
			args = append(args, "-tags", s.Tags)
		}
		b := exec.Command("go", append(args, "-o", bin, "./cli/dont")...)
		b.Dir, b.Env, b.Stderr = src, append(os.Environ(), "CGO_ENABLED=0"), os.Stderr
		check(b.Run())
		flags = append(flags, "-also", s.Name+"="+bin)
	}
	return flags, missing
}

// oneBinarySection is the table of the steps' rows of this run's cold
// start, each with its change from the row above it.
func oneBinarySection(r run) string {
	c := r.Cold
	var b strings.Builder
	b.WriteString("## What one binary costs (" + stamp(r) + ")\n\n")
	b.WriteString("Each commit of issue 30's removals built as `bench/coldstart` builds dont and timed as an `-also` row of the cold start above (same run, interleaved, medians); Δ is the change of the median wall time from the row above. " +
		"A removal stays where it cost a cold `dont show` under 0.5 ms (docs/design.md, \"One binary\").\n\n")
	b.WriteString("| build | removed | median | × floor | CPU | Δ median | max RSS | page faults |\n|---|---|---|---|---|---|---|---|\n")
	var prev *coldRow
	for _, s := range oneBinarySteps {
		var row *coldRow
		for i := range c.Rows {
			if strings.HasSuffix(c.Rows[i].Name, "("+s.Name+")") {
				row = &c.Rows[i]
			}
		}
		if row == nil {
			fmt.Fprintf(&b, "| %s (`%s`) | %s | not built in this run | | | | | |\n", s.Name, s.Rev, s.Removed)
			continue
		}
		delta := "—"
		if prev != nil {
			delta = fmt.Sprintf("%+.2f ms", row.WallMs-prev.WallMs)
		}
		ratio := "—"
		if c.Floor != nil && c.Floor.WallMs > 0 {
			ratio = fmt.Sprintf("%.2f×", row.WallMs/c.Floor.WallMs)
		}
		fmt.Fprintf(&b, "| %s (`%s`) | %s | %.2f ms | %s | %.2f ms | %s | %.1f MB | %.0f |\n", s.Name, s.Rev, s.Removed, row.WallMs, ratio, row.CPUMs, delta, row.RSSMB, row.Faults)
		prev = row
	}
	return b.String()
}
