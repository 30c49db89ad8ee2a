package main

import (
	"context"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// watchNotices runs in the page before its own scripts: it counts the
// page's asks for the notification permission, records the notifications
// it shows instead of showing them, counts the oscillators of its tones,
// and lets the test say whether the page is in the background
// (window.__visibility: document.visibilityState as a hidden tab has it).
const watchNotices = `(() => {
  const seen = { asks: 0, notes: [], oscillators: 0 };
  window.__seen = seen;
  const Real = window.Notification;
  class Watched {
    constructor(title, opts) { seen.notes.push({ title: title, body: (opts && opts.body) || "" }); }
    close() {}
    static get permission() { return Real.permission; }
    static requestPermission() { seen.asks++; return Real.requestPermission(); }
  }
  window.Notification = Watched;
  Object.defineProperty(document, "visibilityState", { configurable: true, get: () => window.__visibility || "visible" });
  Object.defineProperty(document, "hidden", { configurable: true, get: () => window.__visibility === "hidden" });
  const osc = AudioContext.prototype.createOscillator;
  AudioContext.prototype.createOscillator = function () { seen.oscillators++; return osc.call(this); };
})()`

// watch makes the pages b opens from now on run watchNotices; grant says
// whether the browser already grants the endpoint's notifications (as
// after the person allowed them once). (The tests call newBrowser
// themselves: .ci/run's Chromium step finds browser tests by that call.)
func (b *browser) watch(t *testing.T, endpoint string, grant bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	err := chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		if _, err := cdp.Call(ctx, tg, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: watchNotices}); err != nil {
			return err
		}
		if !grant {
			return nil
		}
		_, err := cdp.Call(ctx, tg, cdpbrowser.SetPermission, cdpbrowser.SetPermissionParams{
			Permission: &cdpbrowser.PermissionDescriptor{Name: "notifications"}, Setting: cdpbrowser.PermissionSettingGranted, Origin: endpoint})
		return err
	}))
	if err != nil {
		t.Fatalf("watch the page's notices: %v", err)
	}
}

// waitTrue waits until js is true in the page.
func (b *browser) waitTrue(t *testing.T, js, what string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !eval[bool](t, b, js) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: never true (%s)", what, js)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// openSettings unfolds the page's settings. (The selectors of the
// settings name their tag: chromedp's default search also matches text,
// and "#settings …" is text in the page's style sheet.)
func (b *browser) openSettings(t *testing.T) {
	t.Helper()
	if !eval[bool](t, b, `document.getElementById("settings").open`) {
		if err := b.click("details#settings > summary"); err != nil {
			t.Fatal(err)
		}
	}
}

func (b *browser) title(t *testing.T) string { return eval[string](t, b, "document.title") }

// The tab's title counts the open questions, so a person sees them from
// another tab: "(2) …" with two, back to the plain title with none.
func TestThePagesTitleCountsTheOpenQuestions(t *testing.T) {
	needsChromium(t)
	t.Parallel() // a browser test mostly waits: run them side by side
	ip := newInboxProject(t)
	b := openPage(t, ip.srv.endpoint, ip.approver)
	if got := b.title(t); got != "dont — approvals" {
		t.Fatalf("with nothing open the title is %q", got)
	}
	first := ip.ask(ip.frontend, "t1", "first", "make", "one")
	ip.ask(ip.backend, "t2", "second", "make", "two")
	b.waitCount(t, ".request", 2)
	b.waitTrue(t, `document.title === "(2) dont — approvals"`, "the title with two open")
	if r := ip.runEnv(ip.apprEnv, "approvals", "refuse", first, "--reason", "no", "--yes"); r.exit != 0 {
		t.Fatalf("refuse: %s", r.stdout)
	}
	b.waitTrue(t, `document.title === "(1) dont — approvals"`, "the title after one ended")
	if err := b.answer(".request", "approve"); err != nil {
		t.Fatal(err)
	}
	b.waitTrue(t, `document.title === "dont — approvals"`, "the title with none open")
}

// Loading the page, signing in and a question arriving ask the browser
// for nothing: the notification permission is asked at the person's
// click on the settings' button, and only then.
func TestThePageAsksForNoNotificationPermissionOnLoad(t *testing.T) {
	needsChromium(t)
	t.Parallel() // a browser test mostly waits: run them side by side
	ip := newInboxProject(t)
	b := newBrowser(t, desktop)
	b.watch(t, ip.srv.endpoint, false)
	b.open(t, ip.srv.endpoint+"/approvals", ip.approver)
	apr := ip.ask(ip.frontend, "p1", "asks", "make")
	b.waitCount(t, cardOf(apr), 1)
	b.waitTrue(t, `document.title.startsWith("(1)")`, "the title counts the question")
	if asks := eval[int](t, b, "window.__seen.asks"); asks != 0 {
		t.Fatalf("the page asked for the notification permission %d time(s) without a click", asks)
	}
	if perm := eval[string](t, b, "Notification.permission"); perm != "default" {
		t.Fatalf("the permission is %q before the person chose", perm)
	}
	b.openSettings(t)
	if err := b.click("button#set-notify"); err != nil {
		t.Fatal(err)
	}
	b.waitTrue(t, "window.__seen.asks === 1", "the click asks for the permission")
}

// A question that arrives while the page is in the background is
// notified, its agent-written text made visible; one that arrives while
// the page is in view is not (the page shows it).
func TestAQuestionIsNotifiedWhenThePageIsInTheBackground(t *testing.T) {
	needsChromium(t)
	t.Parallel() // a browser test mostly waits: run them side by side
	ip := newInboxProject(t)
	b := newBrowser(t, desktop)
	b.watch(t, ip.srv.endpoint, true)
	b.open(t, ip.srv.endpoint+"/approvals", ip.approver)
	b.openSettings(t)
	if err := b.click("button#set-notify"); err != nil {
		t.Fatal(err)
	}
	b.waitTrue(t, `document.getElementById("set-notify").getAttribute("aria-pressed") === "true"`, "notifications on")
	seen := ip.ask(ip.frontend, "in-view", "the page is in view", "make", "one")
	b.waitCount(t, cardOf(seen), 1)
	if n := eval[int](t, b, "window.__seen.notes.length"); n != 0 {
		t.Fatalf("a question shown on a page in view was notified too (%d)", n)
	}

	eval[bool](t, b, `window.__visibility = "hidden"; document.dispatchEvent(new Event("visibilitychange")); true`)
	away := ip.ask(ip.backend, concealingCall, forgingReason, "make", "two")
	b.waitCount(t, cardOf(away), 1)
	b.waitTrue(t, "window.__seen.notes.length === 1", "one notification")
	title := eval[string](t, b, "window.__seen.notes[0].title")
	body := eval[string](t, b, "window.__seen.notes[0].body")
	if title != "dont: a new question" || body != `call c1\x1b[8m of backend asks for workspace-write: needs the build cache\n  $ make test` {
		t.Fatalf("the notification reads %q / %q", title, body)
	}
	// Last: on a loaded machine axe can hold the page longer than the
	// subscriber lease, and a question asked after it found nobody.
	axeCheck(t, b, "the settings open, notifications on")
	b.screenshot(t, "approvals-settings.png")
}

// A screen reader hears a new question and an ending through the live
// region, with the agent's text made visible as the cards show it.
func TestTheLiveRegionAnnouncesANewQuestionAndAnEnding(t *testing.T) {
	needsChromium(t)
	t.Parallel() // a browser test mostly waits: run them side by side
	ip := newInboxProject(t)
	b := openPage(t, ip.srv.endpoint, ip.approver)
	if got := eval[string](t, b, `document.getElementById("announce").getAttribute("aria-live")`); got != "polite" {
		t.Fatalf("the announcements are not a polite live region: %q", got)
	}
	b.waitTrue(t, `document.getElementById("announce").textContent === "0 questions are open."`, "the first read announced")
	apr := ip.ask(ip.frontend, concealingCall, forgingReason, "make")
	b.waitCount(t, cardOf(apr), 1)
	announced := func() string { return eval[string](t, b, `document.getElementById("announce").textContent`) }
	if got := announced(); got != `New question: call c1\x1b[8m of frontend asks for workspace-write: needs the build cache\n  $ make test.` {
		t.Fatalf("a new question is announced as %q", got)
	}
	if r := ip.runEnv(ip.apprEnv, "approvals", "refuse", apr, "--reason", "not\u202e now", "--yes"); r.exit != 0 {
		t.Fatalf("refuse: %s", r.stdout)
	}
	b.waitCount(t, cardOf(apr), 0)
	b.waitTrue(t, `document.getElementById("announce").textContent.startsWith("Ended:")`, "the ending announced")
	if got := announced(); got != `Ended: call c1\x1b[8m of frontend: refused by alice: not\u202e now.` {
		t.Fatalf("the ending is announced as %q", got)
	}
}

// With single-key shortcuts turned off (WCAG 2.1.4) — a choice the page
// remembers — a key selects, opens and answers nothing; turned on again,
// the same key opens the confirmation.
func TestWithShortcutsOffAKeySendsNothing(t *testing.T) {
	needsChromium(t)
	t.Parallel() // a browser test mostly waits: run them side by side
	ip := newInboxProject(t)
	b := openPage(t, ip.srv.endpoint, ip.approver)
	b.openSettings(t)
	if err := b.click("input#set-keys"); err != nil {
		t.Fatal(err)
	}
	b.open(t, ip.srv.endpoint+"/approvals", ip.approver) // a reload keeps the choice
	if eval[bool](t, b, `document.getElementById("set-keys").checked`) {
		t.Fatal("the page forgot that shortcuts are off")
	}
	apr := ip.ask(ip.frontend, "k1", "asks", "make")
	b.waitCount(t, cardOf(apr)+".selected", 1)
	for _, k := range []string{"a", "y", "r", "j", "?", "/"} {
		b.keys(t, k)
	}
	if n := b.count(t, ".confirm"); n != 0 {
		t.Fatal("with shortcuts off, a key opened a confirmation")
	}
	if !eval[bool](t, b, `document.getElementById("help").hidden && document.activeElement.id !== "filter"`) {
		t.Fatal("with shortcuts off, ? or / still acted")
	}
	if st := ip.ok("approvals", "show", apr).str("state"); st != "pending" {
		t.Fatalf("with shortcuts off, keys answered the question: %s", st)
	}
	b.openSettings(t)
	if err := b.click("input#set-keys"); err != nil {
		t.Fatal(err)
	}
	eval[bool](t, b, `document.activeElement.blur(); true`)
	b.keys(t, "a")
	b.waitText(t, cardOf(apr)+" .confirm", "About to approve call k1")
}

// The tone is off until the person turns it on (then it sounds once, so
// they hear it); on, a new question sounds it, and a reload keeps it on.
func TestTheToneIsOffUntilTurnedOnAndIsRemembered(t *testing.T) {
	needsChromium(t)
	t.Parallel() // a browser test mostly waits: run them side by side
	ip := newInboxProject(t)
	b := newBrowser(t, desktop)
	b.watch(t, ip.srv.endpoint, false)
	b.open(t, ip.srv.endpoint+"/approvals", ip.approver)
	quiet := ip.ask(ip.frontend, "q1", "quiet", "make")
	b.waitCount(t, cardOf(quiet), 1)
	b.waitTrue(t, `document.getElementById("announce").textContent.startsWith("New question")`, "the question announced")
	if n := eval[int](t, b, "window.__seen.oscillators"); n != 0 {
		t.Fatalf("the page sounded %d oscillator(s) with the tone off", n)
	}
	b.openSettings(t)
	if err := b.click("input#set-sound"); err != nil {
		t.Fatal(err)
	}
	b.waitTrue(t, "window.__seen.oscillators === 2", "the tone sounds when turned on")
	b.open(t, ip.srv.endpoint+"/approvals", ip.approver)
	if !eval[bool](t, b, `document.getElementById("set-sound").checked`) {
		t.Fatal("the page forgot the tone is on")
	}
	b.waitCount(t, cardOf(quiet), 1) // the first read: what is open already sounds nothing
	loud := ip.ask(ip.backend, "q2", "loud", "make")
	b.waitCount(t, cardOf(loud), 1)
	b.waitTrue(t, "window.__seen.oscillators === 2", "the tone for the new question, and only for it")
}
