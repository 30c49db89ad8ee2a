package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"
	"unicode/utf16"

	"github.com/chromedp/chromedp"
	"github.com/dont-cli/dont/internal/visible"
)

// browser is one headless Chromium with the approvals page open.
type browser struct {
	ctx    context.Context
	cancel func()
}

func chromiumPath(t *testing.T) string {
	for _, p := range []string{os.Getenv("DONT_CHROMIUM"), "/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"} {
		if p != "" {
			if _, err := os.Stat(p); err == nil {
				return p
			}
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("no Chromium found; .ci/run installs Debian's chromium")
	}
	t.Skip("no Chromium on this machine (apt-get install chromium); CI installs it and fails instead of skipping")
	return ""
}

// openPage opens the approvals page for a session with an approver token.
// The page is loaded first and then started, as a person would fill in the
// form: navigation completes before the page's long-poll begins.
func openPage(t *testing.T, endpoint, session, token string) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
		chromedp.UserDataDir(t.TempDir()),
	)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(alloc)
	b := &browser{ctx: ctx, cancel: func() { cancelCtx(); cancelAlloc() }}
	t.Cleanup(b.cancel)
	// The first Run starts the browser and must use the tab's own context,
	// or the browser would live only as long as a timeout's context.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool]("true")); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	nav, cancelNav := context.WithTimeout(ctx, 30*time.Second)
	defer cancelNav()
	if _, err := chromedp.Run(nav, chromedp.Navigate(endpoint+"/approvals")); err != nil {
		t.Fatalf("open %s/approvals: %v", endpoint, err)
	}
	fill := fmt.Sprintf(`document.getElementById("session").value = %q; document.getElementById("token").value = %q;
		document.querySelector("#connect button").click(); true`, session, token)
	if _, err := chromedp.Run(nav, chromedp.Evaluate[bool](fill)); err != nil {
		t.Fatalf("start watching: %v", err)
	}
	b.waitText(t, "#status", "Watching")
	return b
}

func (b *browser) text(t *testing.T, sel string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Text(sel))
	if err != nil {
		t.Fatalf("read %s: %v", sel, err)
	}
	return s
}

func (b *browser) waitText(t *testing.T, sel, want string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !strings.Contains(b.text(t, sel), want) {
		if time.Now().After(deadline) {
			t.Fatalf("%s never showed %q: %q", sel, want, b.text(t, sel))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (b *browser) count(t *testing.T, sel string) int {
	t.Helper()
	n, err := chromedp.Run(b.ctx, chromedp.Evaluate[int](fmt.Sprintf("document.querySelectorAll(%q).length", sel)))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func (b *browser) waitCount(t *testing.T, sel string, want int) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for b.count(t, sel) != want {
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d elements, want %d", sel, b.count(t, sel), want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (b *browser) click(sel string) error {
	_, err := chromedp.Run(b.ctx, chromedp.Click(sel))
	return err
}

// Two browser clients and one CLI client answer the same request: the first
// answer wins, the others see the verdict, and both pages dismiss the
// dialog when the ending frame arrives.
func TestWebPageTwoBrowsersAndTheCLIAnswerOneRequestFirstAnswerWins(t *testing.T) {
	p := newApprovalProject(t)
	approver, harness := p.token("approver"), p.token("harness")
	srv := p.serve(t)
	remote := []string{"DONT_ENDPOINT=" + srv.endpoint}
	ses := p.session("read-only")
	a, b := openPage(t, srv.endpoint, ses, approver), openPage(t, srv.endpoint, ses, approver)

	apr := p.runEnv(append(remote, "DONT_TOKEN="+harness), "escalate", "--session", ses, "--call", "build-1", "--to", "workspace-write",
		"--reason", "the build writes outside the workspace", "--no-wait", "--", "make", "install").str("approval_id")
	if !strings.HasPrefix(apr, "apr:") {
		t.Fatal("escalate --no-wait returned no approval id")
	}
	card := `.request[data-request="` + apr + `"]`
	for _, br := range []*browser{a, b} {
		br.waitCount(t, card, 1)
		if txt := br.text(t, card); !strings.Contains(txt, "make install") || !strings.Contains(txt, "workspace-write") || !strings.Contains(txt, " s") {
			t.Fatalf("the dialog lacks the preview, target or countdown: %q", txt)
		}
	}

	var wg sync.WaitGroup
	var cli result
	wg.Add(3)
	go func() { defer wg.Done(); a.click(card + " button.approve") }()
	go func() { defer wg.Done(); b.click(card + " button.refuse") }()
	go func() {
		defer wg.Done()
		cli = p.runEnv(append(remote, "DONT_TOKEN="+approver), "approvals", "refuse", apr, "--reason", "not today", "--yes")
	}()
	wg.Wait()

	final := p.ok("approvals", "show", apr).data()
	verdict := final["verdict"].(string)
	if verdict != "approved" && verdict != "refused" {
		t.Fatalf("verdict %q", verdict)
	}
	a.waitCount(t, card, 0)
	b.waitCount(t, card, 0)
	decided := 0
	for _, br := range []*browser{a, b} {
		br.waitText(t, "#log", "ended: "+verdict)
		log := br.text(t, "#log")
		if strings.Contains(log, "your answer decided") {
			decided++
		}
	}
	if cli.exit != 0 {
		t.Fatalf("the CLI's answer failed: exit %d %s", cli.exit, cli.stdout)
	}
	if cli.data()["applied"] == true {
		decided++
	}
	if decided != 1 {
		t.Fatalf("%d clients decided the request, want exactly one (verdict %s, cli %s)", decided, verdict, cli.stdout)
	}
	if cli.data()["verdict"] != verdict {
		t.Fatalf("the CLI was told %v, the store says %s", cli.data()["verdict"], verdict)
	}
}

// The page bounds its own pending state: at the deadline the dialog goes
// away on the page's clock, so a late click is never sent.
func TestWebPageDismissesTheDialogAtTheDeadline(t *testing.T) {
	p := newApprovalProject(t)
	approver, harness := p.token("approver"), p.token("harness")
	srv := p.serve(t, "DONT_APPROVAL_TIMEOUT=3s")
	ses := p.session("workspace-write")
	a := openPage(t, srv.endpoint, ses, approver)
	apr := p.runEnv([]string{"DONT_ENDPOINT=" + srv.endpoint, "DONT_TOKEN=" + harness}, "escalate", "--session", ses, "--call", "c9",
		"--to", "danger-full-access", "--reason", "needs /etc", "--no-wait", "--", "cp", "x", "/etc/").str("approval_id")
	card := `.request[data-request="` + apr + `"]`
	a.waitCount(t, card, 1)
	a.waitCount(t, card, 0)
	a.waitText(t, "#log", apr)
	if got := p.ok("approvals", "show", apr).data()["verdict"]; got != "timed-out" {
		t.Fatalf("verdict %v, want timed-out", got)
	}
}

// An agent's preview cannot hide its command on the page: the card shows
// the preview, the reason and the call id with their control and bidi
// characters made visible, as the CLI shows them.
func TestAPreviewWithCarriageReturnCannotHideItsCommandOnTheApprovalsPage(t *testing.T) {
	p := newApprovalProject(t)
	approver, harness := p.token("approver"), p.token("harness")
	srv := p.serve(t)
	ses := p.session("read-only")
	a := openPage(t, srv.endpoint, ses, approver)
	apr := p.runEnv([]string{"DONT_ENDPOINT=" + srv.endpoint, "DONT_TOKEN=" + harness}, "escalate", "--session", ses, "--call", concealingCall,
		"--to", "workspace-write", "--reason", forgingReason, "--preview", hidingPreview, "--no-wait").str("approval_id")
	card := `.request[data-request="` + apr + `"]`
	a.waitCount(t, card, 1)
	for _, c := range []struct{ sel, want string }{
		{" .preview", shownPreview},
		{" .reason", `needs the build cache\n  $ make test`},
		{" .call", `c1\x1b[8m`},
	} {
		got, err := chromedp.Run(a.ctx, chromedp.Evaluate[string](fmt.Sprintf("document.querySelector(%q).textContent", card+c.sel)))
		if err != nil || got != c.want {
			t.Errorf("%s shows %q (%v), want %q", c.sel, got, err, c.want)
		}
	}
	if err := a.click(card + " button.refuse"); err != nil {
		t.Fatal(err)
	}
	a.waitCount(t, card, 0)

	// The page never turns text into HTML.
	resp, err := http.Get(srv.endpoint + "/approvals")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, sink := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "DOMParser"} {
		if strings.Contains(string(page), sink) {
			t.Errorf("the approvals page uses %s", sink)
		}
	}
}

// The page's visible() is package visible's Line, reimplemented in
// JavaScript: the same characters are hidden, and the same strings render
// the same, across every code point and a few thousand mixed strings.
func TestThePagesEscapingIsPackageVisible(t *testing.T) {
	p := newApprovalProject(t)
	approver := p.token("approver")
	srv := p.serve(t)
	a := openPage(t, srv.endpoint, p.session("read-only"), approver)

	var want []int
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if !utf16.IsSurrogate(r) && visible.Hidden(r) {
			want = append(want, int(r))
		}
	}
	got, err := chromedp.Run(a.ctx, chromedp.Evaluate[[]int](`(() => { const out = [];
		for (let cp = 0; cp <= 0x10ffff; cp++) if ((cp < 0xd800 || cp > 0xdfff) && hidden(String.fromCodePoint(cp))) out.push(cp);
		return out; })()`))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		onlyPage, onlyGo := difference(got, want), difference(want, got)
		t.Errorf("the page hides %d code points, package visible %d; only the page: %U; only Go: %U", len(got), len(want), onlyPage, onlyGo)
	}

	alphabet := []rune("\\nrtxuU a\n\r\t\x00\x1b\x7f\u0085\u009b\u00ad\u034f\u061c\u200b\u200d\u200e\u202e\u2028\u2066\u3164\ufe0f\ufeff\ufffd\U0001f600\U000e0041é日")
	rng := rand.New(rand.NewPCG(12, 7))
	inputs := []string{hidingPreview, forgingReason, concealingCall, `grep 'a\|b' C:\dir\`, ""}
	for range 3000 {
		s := make([]rune, rng.IntN(10))
		for i := range s {
			s[i] = alphabet[rng.IntN(len(alphabet))]
		}
		inputs = append(inputs, string(s))
	}
	raw, _ := json.Marshal(inputs)
	rendered, err := chromedp.Run(a.ctx, chromedp.Evaluate[[]string](string(raw)+".map(visible)"))
	if err != nil || len(rendered) != len(inputs) {
		t.Fatalf("visible() on the page: %v (%d results)", err, len(rendered))
	}
	for i, s := range inputs {
		if rendered[i] != visible.Line(s) {
			t.Errorf("the page renders %q as %q, package visible as %q", s, rendered[i], visible.Line(s))
		}
	}
}

// difference is what a has and b lacks (both sorted).
func difference(a, b []int) []rune {
	var out []rune
	for _, x := range a {
		if _, found := slices.BinarySearch(b, x); !found {
			out = append(out, rune(x))
		}
	}
	return out
}
