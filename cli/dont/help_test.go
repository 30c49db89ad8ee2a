package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/dont-cli/dont/internal/tools"
	"github.com/spf13/cobra"
)

// exampleTarget is the command an example line runs: the words after
// "dont" up to the first flag or argument that is no subcommand.
func exampleTarget(root *cobra.Command, line string) *cobra.Command {
	i := strings.LastIndex(line, "dont ") // a pipeline's last command
	if i < 0 {
		return nil
	}
	words := strings.Fields(line[i+len("dont "):])
	c, _, err := root.Find(words)
	if err != nil {
		return nil
	}
	return c
}

// Every command a person runs says what it does in one line and shows two
// examples that run that very command; every flag a call cannot do
// without says "(required)".
func TestEveryCommandHasHelpWithTwoExamples(t *testing.T) {
	t.Parallel()
	root := newApp(nil, &bytes.Buffer{}, &bytes.Buffer{}, func(string) string { return "" }).rootCommand()
	var walk func(c *cobra.Command)
	seen := 0
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		path := c.CommandPath()
		if c == root || c.HasSubCommands() && !c.HasParent() || c.Name() == "help" || c.Name() == "config" || c.Hidden {
			return
		}
		if c.HasSubCommands() {
			if _, isTool := tools.Lookup(c.Name()); !isTool { // a group, like `dont approvals`
				return
			}
		}
		seen++
		if c.Short == "" || strings.Contains(c.Short, "\n") {
			t.Errorf("%s: the summary is not one line: %q", path, c.Short)
		}
		lines := strings.Split(strings.TrimSpace(c.Example), "\n")
		if len(lines) != 2 {
			t.Errorf("%s: %d examples, want 2: %q", path, len(lines), c.Example)
			return
		}
		for _, l := range lines {
			if got := exampleTarget(root, l); got != c {
				t.Errorf("%s: the example %q does not run it", path, strings.TrimSpace(l))
			}
		}
	}
	walk(root)
	if seen < 40 {
		t.Fatalf("only %d commands checked", seen)
	}
	for _, tool := range tools.All() {
		cmd, _, err := root.Find(strings.Split(strings.ReplaceAll(tool.Name, ".", " "), " "))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range tool.Params {
			if p.Positional || p.Internal {
				continue
			}
			f := cmd.Flags().Lookup(strings.ReplaceAll(p.Name, "_", "-"))
			if f == nil {
				t.Errorf("%s: no flag for %s", cmd.CommandPath(), p.Name)
				continue
			}
			if marked := strings.HasPrefix(f.Usage, "(required) "); marked != p.Required {
				t.Errorf("%s --%s: usage %q, required %v", cmd.CommandPath(), f.Name, f.Usage, p.Required)
			}
		}
	}
}

// The help of a command whose exit code decides what to do next says
// which code means what.
func TestHelpNamesTheExitCodesWhereTheyMatter(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	for _, args := range [][]string{{"escalate"}, {"approvals", "wait"}, {"assume"}, {"doctor"}, {"approvals", "audit"}, {"approvals", "approve"}} {
		out, err := p.cmd(append(args, "--help")...).Output()
		if err != nil || !strings.Contains(string(out), "\nExit codes: 0 ") || !strings.Contains(string(out), "Examples:\n  dont ") {
			t.Errorf("dont %s --help: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	out, _ := p.cmd("assume", "--help").Output()
	if !strings.Contains(string(out), "config-missing: add --harness") {
		t.Errorf("assume --help does not say how to proceed without a provider:\n%s", out)
	}
	out, _ = p.cmd("trust", "--help").Output()
	if !strings.Contains(string(out), "dont trust = doubt it") {
		t.Errorf("trust --help does not explain the pun:\n%s", out)
	}
}
