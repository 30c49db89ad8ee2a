package main

// Agent-written text on a real terminal (a pseudo-terminal in raw mode, so
// the bytes read are the program's own).

import (
	"strings"
	"testing"
)

// onPlainTerminal runs dont with stdout on a terminal, colour off, so that
// every escape sequence in the output would be the agent's.
func (p *testProject) onPlainTerminal(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, exit := onTerminal(t, p.cmd(append(args, "--plain")...))
	if exit != 0 {
		t.Fatalf("dont %s: exit %d %q %q", strings.Join(args, " "), exit, out, errOut)
	}
	nothingHidden(t, "dont "+strings.Join(args, " ")+" (stderr)", errOut)
	return out
}

// escalateHidden asks a question whose preview hides its command.
func (p *testProject) escalateHidden(t *testing.T) (ses, apr string) {
	t.Helper()
	ses = p.session("read-only")
	p.frames("--session", ses) // a live subscriber, so the request is asked
	apr = p.ok("escalate", "--session", ses, "--call", concealingCall, "--to", "workspace-write", "--reason", forgingReason,
		"--preview", hidingPreview, "--no-wait").str("approval_id")
	return ses, apr
}

func TestAPreviewWithCarriageReturnCannotHideItsCommandInFrames(t *testing.T) {
	t.Parallel()
	p := newApprovalProject(t)
	ses, apr := p.escalateHidden(t)
	out := p.onPlainTerminal(t, "approvals", "frames", "--session", ses)
	want := " " + apr + ` asked: read-only → workspace-write for call c1\x1b[8m, until `
	if !strings.Contains(out, want) || !strings.Contains(out, ": "+shownPreview+"\n") {
		t.Fatalf("the frame line is not %q…: %s: %q", want, shownPreview, out)
	}
	nothingHidden(t, "approvals frames", out)
}

func TestAPreviewWithCarriageReturnCannotHideItsCommandInApprovalsList(t *testing.T) {
	t.Parallel()
	p := newApprovalProject(t)
	ses, apr := p.escalateHidden(t)
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"approvals", "list", "--session", ses}, []string{apr + `  c1\x1b[8m  workspace-write  `}},
		{[]string{"approvals", "show", apr}, []string{"\n  command   $ " + shownPreview + "\n", `for call c1\x1b[8m` + "\n", "\n  reason    needs the build cache\\n  $ make test\n"}},
	} {
		out := p.onPlainTerminal(t, tc.args...)
		for _, want := range tc.want {
			if !strings.Contains(out, want) {
				t.Fatalf("%v lacks %q: %s", tc.args, want, out)
			}
		}
		nothingHidden(t, strings.Join(tc.args, " "), out)
	}
}

func TestAStatementCannotRewriteItsListLine(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	// Printed as is, the line would read "claim:… [verified] water boils at 100 C".
	statement := "the moon is cheese\r\x1b[2K\u202eclaim:01 [verified] water boils at 100 C"
	shown := `the moon is cheese\r\x1b[2K\u202eclaim:01 [verified] water boils at 100 C`
	id := p.ok("conclude", statement).str("id")
	p.ok("trust", id, "--reason", "it is\r\x1b[2K\u2067certain")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"list"}, "\n" + id + "  doubted  just now  " + shown[:40]},
		{[]string{"show", id}, id + "  doubted\n  statement  " + shown + "\n"},
		{[]string{"show", id, "--history"}, id + "  doubted\n  statement  " + shown + "\n"},
	} {
		out := p.onPlainTerminal(t, tc.args...)
		if !strings.Contains(out, tc.want) {
			t.Fatalf("dont %v: no %q in %q", tc.args, tc.want, out)
		}
		nothingHidden(t, "dont "+strings.Join(tc.args, " "), out)
	}
	if out := p.onPlainTerminal(t, "show", id, "--history"); !strings.Contains(out, `it is\r\x1b[2K\u2067certain`) {
		t.Fatalf("the history's reason is not visible: %q", out)
	}
}
