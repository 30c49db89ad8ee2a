package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/webauthn"
	"github.com/chromedp/chromedp"
)

// phone is a phone-sized screen (375 px wide, touch).
var phone = window{width: 375, height: 812, phone: true}

// passkeyServe is a dont serve whose project approves danger-full-access
// only with a passkey, and the origin its page is opened at: WebAuthn
// takes no IP address as relying party, so the page is on localhost.
func passkeyServe(t *testing.T, p *testProject) (srv *server, origin string) {
	t.Helper()
	srv = p.serve(t, "DONT_PASSKEY_REQUIRED_FROM=danger-full-access")
	return srv, strings.Replace(srv.endpoint, "127.0.0.1", "localhost", 1)
}

// authenticator gives the browser a virtual platform authenticator that
// verifies its user (a phone's fingerprint, in the DevTools WebAuthn
// domain), and returns its id.
func (b *browser) authenticator(t *testing.T, userVerified bool) webauthn.AuthenticatorID {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	if _, err := chromedp.Call(ctx, webauthn.Enable, webauthn.EnableParams{}); err != nil {
		t.Fatalf("WebAuthn.enable: %v", err)
	}
	res, err := chromedp.Call(ctx, webauthn.AddVirtualAuthenticator, webauthn.AddVirtualAuthenticatorParams{Options: &webauthn.VirtualAuthenticatorOptions{
		Protocol: webauthn.AuthenticatorProtocolCtap2, Transport: webauthn.AuthenticatorTransportInternal,
		HasResidentKey: true, HasUserVerification: true, IsUserVerified: userVerified, AutomaticPresenceSimulation: true}})
	if err != nil {
		t.Fatalf("WebAuthn.addVirtualAuthenticator: %v", err)
	}
	return res.AuthenticatorID
}

// registerPasskey registers a passkey from the page, as the person does
// once: one click, then the authenticator's own prompt.
func (b *browser) registerPasskey(t *testing.T) {
	t.Helper()
	if err := b.click("#passkey-register"); err != nil {
		t.Fatal(err)
	}
	b.waitText(t, "#passkey-status", "Passkey registered.")
}

// signOut forgets the page's credential and opens it afresh.
func (b *browser) signOut(t *testing.T, url string) {
	t.Helper()
	eval[bool](t, b, `sessionStorage.clear(); true`)
	nav, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if _, err := chromedp.Run(nav, chromedp.Navigate(url)); err != nil {
		t.Fatalf("open %s: %v", url, err)
	}
	b.waitText(t, "#status", "Not connected")
}

// escalateWide asks, as the harness, for danger-full-access for call.
func escalateWide(t *testing.T, p *testProject, endpoint, harness, ses, call string) string {
	t.Helper()
	apr := p.runEnv([]string{"DONT_ENDPOINT=" + endpoint, "DONT_TOKEN=" + harness}, "escalate", "--session", ses, "--call", call, "--to", "danger-full-access",
		"--reason", "publishes the release", "--no-wait", "--", "make", "publish").str("approval_id")
	if !strings.HasPrefix(apr, "apr:") {
		t.Fatal("escalate --no-wait returned no approval id")
	}
	return apr
}

// On a phone, a person signed in to the page with their token registers
// a passkey once; later they sign in with the passkey alone (no token),
// and a question the project approves only with a passkey is approved in
// two taps (approve, confirm) and the authenticator's prompt.
func TestWebPageOnAPhoneSignsInWithAPasskeyAndApprovesInUnderThreeTaps(t *testing.T) {
	needsChromium(t)
	t.Parallel() // a browser test mostly waits: run them side by side
	p := newApprovalProject(t)
	approver, harness := p.token("approver"), p.token("harness")
	srv, origin := passkeyServe(t, p)
	b := newBrowser(t, phone)
	b.authenticator(t, true)
	b.open(t, origin+"/approvals", approver)
	b.registerPasskey(t)
	// Later, on the same phone: the page holds no token; the person signs
	// in with the passkey alone.
	b.signOut(t, origin+"/approvals")
	if err := b.click("#passkey-signin"); err != nil {
		t.Fatal(err)
	}
	b.waitText(t, "#status", "Signed in as")
	b.waitText(t, "#passkey-status", "Signed in with your passkey")
	if tok := eval[string](t, b, `state.token`); !strings.HasPrefix(tok, "dontpks_") || strings.Contains(tok, approver) {
		t.Fatalf("the page holds %q after a passkey sign-in, want a passkey session, not the token", tok)
	}
	b.screenshot(t, "approvals-passkey-signin.png")

	apr := escalateWide(t, p, srv.endpoint, harness, p.session("workspace-write"), "publish-1")
	card := `.request[data-request="` + apr + `"]`
	b.waitCount(t, card, 1)
	taps := 0
	tap := func(sel string) {
		t.Helper()
		if err := b.click(sel); err != nil {
			t.Fatalf("tap %s: %v", sel, err)
		}
		taps++
	}
	tap(card + " button.approve")
	b.screenshot(t, "approvals-passkey-approve.png")
	tap(card + " button.confirm-approve")
	b.waitText(t, "#log", "your answer decided: approved")
	if taps >= 3 {
		t.Fatalf("approving took %d taps, want under three", taps)
	}
	if got := p.ok("approvals", "show", apr).str("verdict"); got != "approved" {
		t.Fatalf("the store says %q, want approved", got)
	}
}

// assertionFor has the page's authenticator sign the approve challenge of
// question id, and returns the assertion without sending it: what an
// attacker who got hold of one would replay or redirect.
func (b *browser) assertionFor(t *testing.T, id string) string {
	t.Helper()
	js := fmt.Sprintf(`(async () => {
  const b = await call("passkeys.approve-begin", { id: %q });
  if (!b.ok) return "begin: " + b.data.code;
  const c = await navigator.credentials.get({ publicKey: PublicKeyCredential.parseRequestOptionsFromJSON(b.data.options.publicKey) });
  return JSON.stringify(c.toJSON());
})()`, id)
	ctx, cancel := context.WithTimeout(b.ctx, 15*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[string](js, chromedp.EvalAwaitPromise))
	if err != nil || !strings.HasPrefix(v, "{") {
		t.Fatalf("no assertion for %s: %q %v", id, v, err)
	}
	return v
}

// approveWith posts approvals.approve as the page would, from origin.
func approveWith(t *testing.T, endpoint, origin, token string, args map[string]any) (int, map[string]any) {
	t.Helper()
	return postTool(t, endpoint, origin, token, "approvals.approve", args)
}

// postTool posts a tool call as the page would, from origin.
func postTool(t *testing.T, endpoint, origin, token, tool string, args map[string]any) (int, map[string]any) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"args": args, "cli_confirmed": true})
	req, _ := http.NewRequest(http.MethodPost, endpoint+"/v1/tools/"+tool, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", origin)
	req.Header.Set("X-Dont-CLI-Caps", "cli-confirm-v1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var env map[string]any
	if err := json.Unmarshal(raw, &env); err != nil {
		t.Fatalf("not an envelope: %q", raw)
	}
	return resp.StatusCode, env
}

// The attacks on a passkey approve, each with a real assertion of the
// approver's own authenticator: redirected to another question, to
// another digest, replayed, made without user verification, or missing.
// Each is refused with a stable code and leaves the question open.
func TestAPasskeyAssertionCountsOnlyForItsQuestionAsShownAndOnlyOnce(t *testing.T) {
	needsChromium(t)
	t.Parallel()
	p := newApprovalProject(t)
	approver, harness := p.token("approver"), p.token("harness")
	srv, origin := passkeyServe(t, p)
	b := newBrowser(t, desktop)
	authn := b.authenticator(t, true)
	b.open(t, origin+"/approvals", approver)
	b.registerPasskey(t)
	ses := p.session("workspace-write")
	q1, q2 := escalateWide(t, p, srv.endpoint, harness, ses, "c1"), escalateWide(t, p, srv.endpoint, harness, ses, "c2")
	digest := func(id string) string { return p.ok("approvals", "show", id).str("shown_digest") }
	stillOpen := func(t *testing.T, id string) {
		t.Helper()
		if st := p.ok("approvals", "show", id).str("state"); st != "pending" {
			t.Fatalf("%s is %s after a refused approve, want it still pending", id, st)
		}
	}
	refused := func(t *testing.T, code string, args map[string]any) {
		t.Helper()
		status, env := approveWith(t, srv.endpoint, origin, approver, args)
		d, _ := env["data"].(map[string]any)
		rem, _ := d["remediation"].([]any)
		if env["ok"] != false || d["code"] != code || status != http.StatusForbidden || len(rem) == 0 {
			t.Fatalf("got %d %v, want 403 %s with remediation", status, env, code)
		}
	}

	t.Run("an approve at the required tier with only the token is refused", func(t *testing.T) {
		refused(t, "passkey-required", map[string]any{"id": q1, "shown_digest": digest(q1)})
		stillOpen(t, q1)
	})
	t.Run("a second passkey cannot be registered with only the token", func(t *testing.T) {
		// An agent that read the token after the person registered cannot
		// add a software authenticator of its own.
		status, env := postTool(t, srv.endpoint, origin, approver, "passkeys.register-begin", map[string]any{})
		if d, _ := env["data"].(map[string]any); env["ok"] != false || d["code"] != "passkey-required" || status != http.StatusForbidden {
			t.Fatalf("a token-only second registration: %d %v", status, env)
		}
	})
	t.Run("an assertion for another question is refused", func(t *testing.T) {
		a := b.assertionFor(t, q1)
		refused(t, "passkey-invalid", map[string]any{"id": q2, "shown_digest": digest(q2), "passkey_assertion": a})
		stillOpen(t, q1)
		stillOpen(t, q2)
	})
	t.Run("an assertion for another digest is refused", func(t *testing.T) {
		a := b.assertionFor(t, q1)
		refused(t, "passkey-invalid", map[string]any{"id": q1, "shown_digest": digest(q2), "passkey_assertion": a})
		stillOpen(t, q1)
	})
	t.Run("an assertion without user verification is refused", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
		defer cancel()
		if _, err := chromedp.Call(ctx, webauthn.SetUserVerified, webauthn.SetUserVerifiedParams{AuthenticatorID: authn, IsUserVerified: false}); err != nil {
			t.Fatal(err)
		}
		defer chromedp.Call(b.ctx, webauthn.SetUserVerified, webauthn.SetUserVerifiedParams{AuthenticatorID: authn, IsUserVerified: true})
		js := fmt.Sprintf(`(async () => {
  const b = await call("passkeys.approve-begin", { id: %q });
  const o = PublicKeyCredential.parseRequestOptionsFromJSON(b.data.options.publicKey);
  o.userVerification = "discouraged";
  try { const c = await navigator.credentials.get({ publicKey: o }); return JSON.stringify(c.toJSON()); } catch (e) { return "refused by the browser: " + e.name; }
})()`, q1)
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](js, chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(v, "{") {
			refused(t, "passkey-invalid", map[string]any{"id": q1, "shown_digest": digest(q1), "passkey_assertion": v})
		} else if !strings.Contains(v, "refused by the browser") {
			t.Fatalf("unexpected: %q", v)
		}
		stillOpen(t, q1)
	})
	t.Run("a replayed assertion is refused", func(t *testing.T) {
		a := b.assertionFor(t, q1)
		status, env := approveWith(t, srv.endpoint, origin, approver, map[string]any{"id": q1, "shown_digest": digest(q1), "passkey_assertion": a})
		if env["ok"] != true || status != http.StatusOK {
			t.Fatalf("the bound assertion was refused: %d %v", status, env)
		}
		if v := p.ok("approvals", "show", q1).str("verdict"); v != "approved" {
			t.Fatalf("q1 is %q after its bound approve", v)
		}
		// The same assertion again, now for the other open question.
		refused(t, "passkey-invalid", map[string]any{"id": q2, "shown_digest": digest(q2), "passkey_assertion": a})
		stillOpen(t, q2)
	})
	// A refusal needs no passkey.
	if status, env := postTool(t, srv.endpoint, origin, approver, "approvals.refuse", map[string]any{"id": q2, "shown_digest": digest(q2)}); env["ok"] != true {
		t.Fatalf("a token-only refusal: %d %v", status, env)
	}
}
