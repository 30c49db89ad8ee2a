// Command coldstart measures the CLI's cold start: `dont show <id>` against
// a Go hello-world binary, interleaved in one run, and prints a table of
// medians. Run it through bench/run.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"time"
)

func main() {
	runs := flag.Int("runs", 30, "runs of each binary")
	flag.Parse()
	dir, err := os.MkdirTemp("", "dont-coldstart")
	check(err)
	defer os.RemoveAll(dir)

	hello := filepath.Join(dir, "hello")
	check(os.WriteFile(filepath.Join(dir, "hello.go"), []byte("package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"hello\") }\n"), 0o644))
	build(hello, filepath.Join(dir, "hello.go"))
	dont := filepath.Join(dir, "dont")
	build(dont, "./cli/dont")
	floor := filepath.Join(dir, "sqlitefloor")
	build(floor, "./bench/coldstart/sqlitefloor")

	proj := filepath.Join(dir, "proj")
	check(os.Mkdir(proj, 0o755))
	run(proj, dont, "init")
	var env struct {
		Data struct{ ID string } `json:"data"`
	}
	check(json.Unmarshal(run(proj, dont, "conclude", "water boils at 100 C at sea level"), &env))

	db := filepath.Join(proj, ".dont", "dont.db")
	var helloT, floorT, helpT, dontT []time.Duration
	for i := 0; i < *runs+3; i++ {
		h := timed(proj, hello)
		f := timed(proj, floor, db, env.Data.ID)
		p := timed(proj, dont, "--help")
		d := timed(proj, dont, "show", env.Data.ID, "--json")
		if i >= 3 { // the first runs warm the page cache
			helloT, floorT, helpT, dontT = append(helloT, h), append(floorT, f), append(helpT, p), append(dontT, d)
		}
	}
	mh, md := median(helloT), median(dontT)
	fmt.Printf("| binary | runs | median | p90 | × hello |\n|---|---|---|---|---|\n")
	for _, row := range []struct {
		name string
		t    []time.Duration
	}{{"go hello-world", helloT}, {"sqlite floor: open + the 2 queries show runs", floorT}, {"dont --help (no store)", helpT}, {"dont show <id> --json", dontT}} {
		fmt.Printf("| %s | %d | %s | %s | %.2f |\n", row.name, len(row.t), ms(median(row.t)), ms(pct(row.t, 90)), float64(median(row.t))/float64(mh))
	}
	fmt.Printf("\ncold start ratio (median dont show / median hello): %.2fx (target <= 2.5x; absolute target 50 ms: %s)\n", float64(md)/float64(mh), ms(md))
}

func build(out, pkg string) {
	c := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", out, pkg)
	c.Stderr = os.Stderr
	check(c.Run())
}

func run(dir, bin string, args ...string) []byte {
	c := exec.Command(bin, args...)
	c.Dir = dir
	out, err := c.Output()
	check(err)
	return out
}

func timed(dir, bin string, args ...string) time.Duration {
	start := time.Now()
	run(dir, bin, args...)
	return time.Since(start)
}

func median(d []time.Duration) time.Duration { return pct(d, 50) }

func pct(d []time.Duration, p int) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[(len(s)-1)*p/100]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000) }

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "coldstart:", err)
		os.Exit(1)
	}
}
