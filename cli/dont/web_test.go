package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
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

// screenshots regenerates the page's pictures in docs/img:
// go test ./cli/dont/ -run TestWebPage -screenshots
var screenshots = flag.Bool("screenshots", false, "write the approvals page's screenshots to docs/img")

// browser is one headless Chromium with the approvals page open.
type browser struct {
	ctx    context.Context
	cancel func()
}

func chromiumPath(t *testing.T) string {
	if testing.Short() {
		// Each page test starts a browser: together they would take the
		// README's test command past its two minutes. .ci/run runs them
		// all in its Chromium step, uncached, where a skip fails CI.
		t.Skip("the approvals page in Chromium: not under -short (.ci/run's Chromium step runs it)")
	}
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

// needsChromium is the first line of every test that opens a browser: it
// skips (under -short, or without Chromium outside CI) before the test
// builds its project, server and tokens, which would otherwise be made
// only to be thrown away (TestEveryBrowserTestSkipsBeforeItsSetup).
func needsChromium(t *testing.T) {
	t.Helper()
	chromiumPath(t)
}

// window is the size of the browser's viewport; phone emulates a phone's
// screen (touch, mobile viewport).
type window struct {
	width, height int
	phone         bool
	// trustAnyCert accepts the test's self-signed certificate.
	trustAnyCert bool
}

var desktop = window{width: 1100, height: 900}

// newBrowser starts one headless Chromium with a tab of the given size.
func newBrowser(t *testing.T, w window) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.WindowSize(w.width, w.height),
		chromedp.UserDataDir(t.TempDir()),
	)
	if w.trustAnyCert {
		opts = append(opts, chromedp.Flag("ignore-certificate-errors", true))
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(alloc)
	b := &browser{ctx: ctx, cancel: func() { cancelCtx(); cancelAlloc() }}
	t.Cleanup(b.cancel)
	// The first Run starts the browser and must use the tab's own context,
	// or the browser would live only as long as a timeout's context.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool]("true")); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	emulate := []chromedp.EmulateViewportOption{chromedp.EmulateScale(1)}
	if w.phone {
		emulate = append(emulate, chromedp.EmulateMobile, chromedp.EmulateTouch)
	}
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(int64(w.width), int64(w.height), emulate...)); err != nil {
		t.Fatalf("set the viewport: %v", err)
	}
	return b
}

// openPage opens the approvals page with a token, on a desktop-sized
// window, and waits until the page has read the inbox once.
func openPage(t *testing.T, endpoint, token string) *browser {
	t.Helper()
	b := newBrowser(t, desktop)
	b.open(t, endpoint+"/approvals", token)
	return b
}

// open loads url and signs in with token, as a person fills in the form:
// navigation completes before the page's polling begins.
func (b *browser) open(t *testing.T, url, token string) {
	t.Helper()
	b.signIn(t, url, token)
	b.waitText(t, "#status", "Signed in as")
}

// signIn loads url and submits token, without waiting for the inbox.
func (b *browser) signIn(t *testing.T, url, token string) {
	t.Helper()
	nav, cancelNav := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancelNav()
	if _, err := chromedp.Run(nav, chromedp.Navigate(url)); err != nil {
		t.Fatalf("open %s: %v", url, err)
	}
	fill := fmt.Sprintf(`document.getElementById("token").value = %q; document.querySelector("#connect button").click(); true`, token)
	if _, err := chromedp.Run(nav, chromedp.Evaluate[bool](fill)); err != nil {
		t.Fatalf("sign in: %v", err)
	}
}

// eval runs js in the page and returns its value.
func eval[T any](t *testing.T, b *browser, js string) T {
	t.Helper()
	return evalWithin[T](t, b, js, 10*time.Second)
}

// evalWithin is eval with a time limit of its own.
func evalWithin[T any](t *testing.T, b *browser, js string, limit time.Duration) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, limit)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

// text is what an element shows (innerText: hidden elements show nothing).
func (b *browser) text(t *testing.T, sel string) string {
	t.Helper()
	return eval[string](t, b, fmt.Sprintf(`(() => { const el = document.querySelector(%q); return el ? el.innerText : ""; })()`, sel))
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
	return eval[int](t, b, fmt.Sprintf("document.querySelectorAll(%q).length", sel))
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
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	_, err := chromedp.Run(ctx, chromedp.Click(sel))
	return err
}

// answer clicks a card's button, then confirms (the page's confirmation step).
func (b *browser) answer(card, verb string) error {
	if err := b.click(card + " button." + verb); err != nil {
		return err
	}
	return b.click(card + " button.confirm-" + verb)
}

// keys types keys into the page as a person would.
func (b *browser) keys(t *testing.T, keys string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.KeyEvent(keys)); err != nil {
		t.Fatalf("type %q: %v", keys, err)
	}
}

// screenshot writes the viewport to docs/img/name when -screenshots is given.
func (b *browser) screenshot(t *testing.T, name string) {
	t.Helper()
	if !*screenshots {
		return
	}
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if err := os.WriteFile(filepath.Join("..", "..", "docs", "img", name), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// Two browser clients and one CLI client answer the same request: the first
// answer wins, the others see the verdict, and both pages dismiss the
// question when it ends.
func TestWebPageTwoBrowsersAndTheCLIAnswerOneRequestFirstAnswerWins(t *testing.T) {
	needsChromium(t)
	t.Parallel() // a browser test mostly waits: run them side by side
	p := newApprovalProject(t)
	approver, harness := p.token("approver"), p.token("harness")
	srv := p.serve(t)
	remote := []string{"DONT_ENDPOINT=" + srv.endpoint}
	ses := p.session("read-only")
	a, b := openPage(t, srv.endpoint, approver), openPage(t, srv.endpoint, approver)

	apr := p.runEnv(append(remote, "DONT_TOKEN="+harness), "escalate", "--session", ses, "--call", "build-1", "--to", "workspace-write",
		"--reason", "the build writes outside the workspace", "--no-wait", "--", "make", "install").str("approval_id")
	if !strings.HasPrefix(apr, "apr:") {
		t.Fatal("escalate --no-wait returned no approval id")
	}
	card := `.request[data-request="` + apr + `"]`
	for _, br := range []*browser{a, b} {
		br.waitCount(t, card, 1)
		if txt := br.text(t, card); !strings.Contains(txt, "make install") || !strings.Contains(txt, "workspace-write") || !strings.Contains(txt, " s") {
			t.Fatalf("the question lacks the preview, target or countdown: %q", txt)
		}
		if err := br.click(card + " button." + map[*browser]string{a: "approve", b: "refuse"}[br]); err != nil {
			t.Fatal(err)
		}
	}

	var wg sync.WaitGroup
	var cli result
	wg.Add(3)
	go func() { defer wg.Done(); a.click(card + " button.confirm-approve") }()
	go func() { defer wg.Done(); b.click(card + " button.confirm-refuse") }()
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
		br.waitText(t, `#endings li[data-request="`+apr+`"]`, verdict)
		if strings.Contains(br.text(t, "#log"), "your answer decided") {
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

// The page bounds its own pending state: at the deadline the question
// goes away on the page's own clock, even when it can no longer hear the
// server, and a confirmation left open then sends nothing. (The server's
// timeout among the endings: TestWebPageShowsEveryEndingWithItsReason.)
func TestWebPageDismissesTheQuestionAtTheDeadlineOnItsOwnClock(t *testing.T) {
	needsChromium(t)
	t.Parallel() // a browser test mostly waits: run them side by side
	p := newApprovalProject(t)
	approver, harness := p.token("approver"), p.token("harness")
	srv := p.serve(t, "DONT_APPROVAL_TIMEOUT=8s") // room for the clicks before it, on a loaded machine
	ses := p.session("workspace-write")
	a := openPage(t, srv.endpoint, approver)
	apr := p.runEnv([]string{"DONT_ENDPOINT=" + srv.endpoint, "DONT_TOKEN=" + harness}, "escalate", "--session", ses, "--call", "c9",
		"--to", "danger-full-access", "--reason", "needs /etc", "--no-wait", "--", "cp", "x", "/etc/").str("approval_id")
	card := `.request[data-request="` + apr + `"]`
	a.waitCount(t, card, 1)
	if err := a.click(card + " button.approve"); err != nil { // the confirmation opens, and is left open
		t.Fatal(err)
	}
	a.waitCount(t, card+" button.confirm-approve", 1)
	srv.cmd.Process.Kill() // the page hears nothing more from the server
	a.waitCount(t, card, 0)
	a.waitText(t, `#log li[data-request="`+apr+`"]`, "call c9 of cli test: its deadline passed (this page's clock)")
	if got := p.ok("approvals", "show", apr).data()["verdict"]; got != "timed-out" {
		t.Fatalf("verdict %v, want timed-out", got)
	}
}

// An agent's preview cannot hide its command on the page: the card shows
// the preview, the reason and the call id with their control and bidi
// characters made visible, as the CLI shows them.
func TestAPreviewWithCarriageReturnCannotHideItsCommandOnTheApprovalsPage(t *testing.T) {
	needsChromium(t)
	t.Parallel() // a browser test mostly waits: run them side by side
	p := newApprovalProject(t)
	approver, harness := p.token("approver"), p.token("harness")
	srv := p.serve(t)
	ses := p.session("read-only")
	a := openPage(t, srv.endpoint, approver)
	apr := p.runEnv([]string{"DONT_ENDPOINT=" + srv.endpoint, "DONT_TOKEN=" + harness}, "escalate", "--session", ses, "--call", concealingCall,
		"--to", "workspace-write", "--reason", forgingReason, "--preview", hidingPreview, "--no-wait").str("approval_id")
	card := `.request[data-request="` + apr + `"]`
	a.waitCount(t, card, 1)
	for _, c := range []struct{ sel, want string }{
		{" .preview", shownPreview},
		{" .reason", `needs the build cache\n  $ make test`},
		{" .call", `c1\x1b[8m`},
	} {
		got := eval[string](t, a, fmt.Sprintf("document.querySelector(%q).textContent", card+c.sel))
		if got != c.want {
			t.Errorf("%s shows %q, want %q", c.sel, got, c.want)
		}
	}
	if err := a.answer(card, "refuse"); err != nil {
		t.Fatal(err)
	}
	a.waitCount(t, card, 0)
	// The ending repeats the call id, made visible too.
	if got := eval[string](t, a, fmt.Sprintf(`document.querySelector('#endings li[data-request=%q] .call').textContent`, apr)); got != `c1\x1b[8m` {
		t.Errorf("the ending shows the call as %q", got)
	}

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
	needsChromium(t)
	t.Parallel() // a browser test mostly waits: run them side by side
	p := newApprovalProject(t)
	approver := p.token("approver")
	srv := p.serve(t)
	a := openPage(t, srv.endpoint, approver)

	var want []int
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if !utf16.IsSurrogate(r) && visible.Hidden(r) {
			want = append(want, int(r))
		}
	}
	got := eval[[]int](t, a, `(() => { const out = [];
		for (let cp = 0; cp <= 0x10ffff; cp++) if ((cp < 0xd800 || cp > 0xdfff) && hidden(String.fromCodePoint(cp))) out.push(cp);
		return out; })()`)
	if !slices.Equal(got, want) {
		onlyPage, onlyGo := difference(got, want), difference(want, got)
		t.Errorf("the page hides %d code points, package visible %d; only the page: %U; only Go: %U", len(got), len(want), onlyPage, onlyGo)
	}

	// Letters of several scripts too (Cyrillic and Greek look-alikes, scripts
	// written together, a letter of no script), for mixed-script words.
	alphabet := []rune("\\nrtxuU a\n\r\t\x00\x1b\x7f\u0085\u009b\u00ad\u034f\u061c\u200b\u200d\u200e\u202e\u2028\u2066\u3164\ufe0f\ufeff\ufffd\U0001f600\U000e0041é日" +
		"p\u0430\u03bf\u0301カ한ㄅ\U0001d400\U00010300")
	rng := rand.New(rand.NewPCG(12, 7))
	inputs := []string{hidingPreview, forgingReason, concealingCall, `grep 'a\|b' C:\dir\`, "", "curl https://p\u0430ypal.com | sh", `x\\u0430bc`}
	for range 3000 {
		s := make([]rune, rng.IntN(10))
		for i := range s {
			s[i] = alphabet[rng.IntN(len(alphabet))]
		}
		inputs = append(inputs, string(s))
	}
	raw, _ := json.Marshal(inputs)
	rendered := eval[[]string](t, a, string(raw)+".map(visible)")
	if len(rendered) != len(inputs) {
		t.Fatalf("visible() on the page: %d results for %d strings", len(rendered), len(inputs))
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
