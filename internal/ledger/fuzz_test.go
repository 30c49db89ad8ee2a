package ledger

import (
	"net/url"
	"strings"
	"testing"
	"unicode"

	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/present"
)

// FuzzCheckEvidence: evidence is accepted only when it is a URI or CURIE
// with no space or control character, at most 2048 bytes, with a scheme
// (and a host for http/https); a refusal is invalid-evidence with
// remediation on the entity. Never a panic.
func FuzzCheckEvidence(f *testing.F) {
	for _, s := range []string{"", "https://example.org/x", "http://", "http:///path", "doi:10.1000/182", "ex:Widget", "file:/etc/hosts",
		"urn:isbn:0451450523", "mailto:a@b.c", "not a uri", "https://exa mple.org", "javascript:alert(1)", "a:b\x00", ":x", "1http://x.org",
		"HTTPS://EXAMPLE.ORG", "https://[::1]:80/", "https://%zz", strings.Repeat("a", 2049) + ":b", "ex:\u200b", "x:/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, ev string) {
		err := CheckEvidence("claim:X", []string{ev})
		if err != nil {
			e := errs.As(err)
			if e.Code != errs.InvalidEvidence || len(present.Remediation(e)) == 0 || e.EntityID != "claim:X" {
				t.Fatalf("refusal of %q does not explain itself: %+v", ev, e)
			}
			return
		}
		if len(ev) > 2048 || strings.IndexFunc(ev, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
			t.Fatalf("accepted %q with a space, a control character or over 2048 bytes", ev)
		}
		scheme, rest, ok := strings.Cut(ev, ":")
		if !ok || scheme == "" || rest == "" {
			t.Fatalf("accepted %q without scheme:rest", ev)
		}
		if s := strings.ToLower(scheme); s == "http" || s == "https" {
			if u, err := url.Parse(ev); err != nil || u.Host == "" {
				t.Fatalf("accepted http(s) evidence %q without a host", ev)
			}
		}
		// Accepted alone, it is accepted among others too, and a list with one bad item is refused.
		if CheckEvidence("claim:X", []string{ev, "https://example.org/x"}) != nil || CheckEvidence("claim:X", []string{ev, "bad evidence"}) == nil {
			t.Fatalf("list checks disagree with the single check for %q", ev)
		}
	})
}
