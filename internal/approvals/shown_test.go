package approvals

import (
	"strings"
	"testing"
)

// Every field a medium shows is in the digest, and the encoding is
// unambiguous: moving text from one field to the next changes it.
func TestTheShownDigestCoversEveryShownFieldUnambiguously(t *testing.T) {
	base := Shown{ID: "apr:1", SessionID: "ses:1", Requester: "tok:1", CallID: "c1", From: ReadOnly, To: WorkspaceWrite,
		Preview: "make test", Reason: "runs the tests"}
	d := ShownDigest(base)
	if !strings.HasPrefix(d, DigestPrefix) || len(d) != len(DigestPrefix)+64 || ShownDigest(base) != d {
		t.Fatalf("digest %q", d)
	}
	for name, change := range map[string]func(*Shown){
		"id":        func(s *Shown) { s.ID = "apr:2" },
		"session":   func(s *Shown) { s.SessionID = "ses:2" },
		"requester": func(s *Shown) { s.Requester = "tok:2" },
		"call":      func(s *Shown) { s.CallID = "c2" },
		"from":      func(s *Shown) { s.From = WorkspaceWrite },
		"to":        func(s *Shown) { s.To = DangerFullAccess },
		"preview":   func(s *Shown) { s.Preview += " " },
		"reason":    func(s *Shown) { s.Reason = "" },
	} {
		other := base
		change(&other)
		if ShownDigest(other) == d {
			t.Errorf("changing the %s leaves the digest alone", name)
		}
	}
	if ShownDigest(Shown{Preview: "ab", Reason: "c"}) == ShownDigest(Shown{Preview: "a", Reason: "bc"}) {
		t.Error("text moved from one field to the next leaves the digest alone")
	}
	if !DigestMatches(strings.ToUpper(d[:7])+d[7:], d) || DigestMatches("", d) {
		t.Error("DigestMatches")
	}
	a := Approval{ID: "apr:1", SessionID: "ses:1", Requester: "tok:1", CallID: "c1", From: ReadOnly, To: WorkspaceWrite, Preview: "p", Reason: "r"}
	if ShownDigest(a.Shown()) != ShownDigest(RequestFrame(a).Shown()) || RequestFrame(a).ShownDigest != ShownDigest(a.Shown()) {
		t.Error("a question frame shows what its approval shows")
	}
	if HeldDigest("conf:1", "lock", map[string]any{"id": "x"}, "tok:1") == HeldDigest("conf:1", "lock", map[string]any{"id": "y"}, "tok:1") {
		t.Error("a held call's arguments are in its digest")
	}
}
