package ids

import (
	"strings"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"
)

// FuzzKind: any string either parses to a known kind with a strict ULID
// after the colon, or is refused with "" — never a panic, never a kind
// for a malformed id.
func FuzzKind(f *testing.F) {
	for _, s := range []string{"", ":", "claim:", "claim:01HX05A9K8VP0000000000000A", "spawn:01HX05A9K8VP0000000000000a",
		"claim:01HX05A9K8VP0000000000000A:x", "nope:01HX05A9K8VP0000000000000A", "apr:7ZZZZZZZZZZZZZZZZZZZZZZZZZ", "apr:8ZZZZZZZZZZZZZZZZZZZZZZZZZ",
		"term:01HX05A9K8VP0000000000000\u00e9", "CLAIM:01HX05A9K8VP0000000000000A", "event:" + strings.Repeat("0", 26), "ses:\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		k := Kind(id)
		if k == "" {
			return
		}
		prefix, rest, _ := strings.Cut(id, ":")
		if prefix != k {
			t.Fatalf("Kind(%q) = %q, but the prefix is %q", id, k, prefix)
		}
		if len(rest) != ulid.EncodedSize {
			t.Fatalf("Kind(%q) = %q for a %d-character ULID", id, k, len(rest))
		}
		u, err := ulid.ParseStrict(rest)
		if err != nil {
			t.Fatalf("Kind(%q) = %q for an invalid ULID: %v", id, k, err)
		}
		// A well-formed id made by New for the same time round-trips.
		if again := New(k, ulid.Time(u.Time())); Kind(again) != k {
			t.Fatalf("New(%q) = %q is not of its kind", k, again)
		}
	})
}

func TestNewIDsAreOfTheirKind(t *testing.T) {
	for _, k := range []string{Claim, Term, Spawn, Event, Approval, Session, Token, Request} {
		if id := New(k, time.Now()); Kind(id) != k {
			t.Fatalf("Kind(New(%q)) = %q", k, Kind(id))
		}
	}
}
