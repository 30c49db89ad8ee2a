package approvals

import (
	"bytes"
	"testing"
	"time"
)

func TestPasskeyIsRequiredFromThePersonsLevelUp(t *testing.T) {
	for _, c := range []struct {
		from, to Tier
		want     bool
	}{
		{"", DangerFullAccess, false},
		{DangerFullAccess, WorkspaceWrite, false},
		{DangerFullAccess, DangerFullAccess, true},
		{WorkspaceWrite, WorkspaceWrite, true},
		{WorkspaceWrite, DangerFullAccess, true},
		{ReadOnly, WorkspaceWrite, true},
		{DangerFullAccess, "root", true},
	} {
		if got := PasskeyRequired(c.from, c.to); got != c.want {
			t.Errorf("PasskeyRequired(%q, %q) = %v, want %v", c.from, c.to, got, c.want)
		}
	}
}

func TestThePasskeyLevelIsATierOrOff(t *testing.T) {
	for v, want := range map[string]Tier{"": "", "off": "", "danger-full-access": DangerFullAccess, "workspace-write": WorkspaceWrite} {
		if got, ok := ParsePasskeyLevel(v); !ok || got != want {
			t.Errorf("ParsePasskeyLevel(%q) = %q, %v", v, got, ok)
		}
	}
	for _, v := range []string{"on", "yes", "Danger-Full-Access", " danger-full-access"} {
		if _, ok := ParsePasskeyLevel(v); ok {
			t.Errorf("ParsePasskeyLevel(%q) accepted", v)
		}
	}
}

func TestAPasskeyChallengeNamesOneQuestionAsShown(t *testing.T) {
	nonce := []byte("0123456789abcdef0123456789abcdef")
	c := PasskeyChallenge(nonce, "apr:1", "sha256:aa")
	for name, other := range map[string][]byte{
		"another nonce":    PasskeyChallenge([]byte("1123456789abcdef0123456789abcdef"), "apr:1", "sha256:aa"),
		"another question": PasskeyChallenge(nonce, "apr:2", "sha256:aa"),
		"another digest":   PasskeyChallenge(nonce, "apr:1", "sha256:ab"),
		"shifted fields":   PasskeyChallenge(nonce, "apr:1s", "ha256:aa"),
	} {
		if bytes.Equal(c, other) {
			t.Errorf("%s gives the same challenge", name)
		}
	}
}

func TestAPasskeyGrantBindsOnlyItsQuestionDigestApproverAndTime(t *testing.T) {
	now := time.Date(2026, 12, 3, 5, 0, 0, 0, time.UTC)
	g := PasskeyGrant{Nonce: []byte("n"), ApprovalID: "apr:1", ShownDigest: "sha256:aa", Approver: "tok:A", Expires: now.Add(time.Minute)}
	good := PasskeyChallenge(g.Nonce, g.ApprovalID, g.ShownDigest)
	if why := g.Binds("apr:1", "SHA256:AA", "tok:A", good, now); why != "" {
		t.Fatalf("the bound approve is refused: %s", why)
	}
	for name, c := range map[string]struct {
		id, digest, approver string
		challenge            []byte
		at                   time.Time
		want                 string
	}{
		"another question": {"apr:2", "sha256:aa", "tok:A", good, now, PasskeyOtherQuestion},
		"another digest":   {"apr:1", "sha256:ab", "tok:A", good, now, PasskeyOtherDigest},
		"no digest":        {"apr:1", "", "tok:A", good, now, PasskeyOtherDigest},
		"another approver": {"apr:1", "sha256:aa", "tok:B", good, now, PasskeyOtherApprover},
		"expired":          {"apr:1", "sha256:aa", "tok:A", good, now.Add(time.Minute), PasskeyExpired},
		"other bytes":      {"apr:1", "sha256:aa", "tok:A", PasskeyChallenge([]byte("m"), "apr:1", "sha256:aa"), now, PasskeyWrongBytes},
	} {
		if got := g.Binds(c.id, c.digest, c.approver, c.challenge, c.at); got != c.want {
			t.Errorf("%s: %q, want %q", name, got, c.want)
		}
	}
}
