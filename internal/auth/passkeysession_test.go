package auth

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestAPasskeySessionStandsForOneTokenUntilItExpires(t *testing.T) {
	secret := []byte("0123456789abcdef0123456789abcdef")
	now := time.Date(2026, 12, 3, 5, 0, 0, 0, time.UTC)
	id := "tok:01HX05A9K8VP0000000000000A"
	s := PasskeySession(secret, id, now.Add(time.Hour))
	if !WellFormed(s) || !IsPasskeySession(s) {
		t.Fatalf("%q is not well formed", s)
	}
	if got, ok := ParsePasskeySession(secret, s, now); !ok || got != id {
		t.Fatalf("ParsePasskeySession = %q, %v", got, ok)
	}
	if _, ok := ParsePasskeySession(secret, s, now.Add(time.Hour)); ok {
		t.Error("an expired session is accepted")
	}
	if _, ok := ParsePasskeySession([]byte("another project's secret........"), s, now); ok {
		t.Error("a session of another secret is accepted")
	}
	other := strings.Replace(s, id, "tok:01HX05A9K8VP0000000000000B", 1)
	if _, ok := ParsePasskeySession(secret, other, now); ok {
		t.Error("a session with another token id is accepted")
	}
	exp := strconv.FormatInt(now.Add(time.Hour).Unix(), 10)
	moved := strings.Replace(s, "_"+exp+"_", "_"+strconv.FormatInt(now.Add(48*time.Hour).Unix(), 10)+"_", 1)
	if _, ok := ParsePasskeySession(secret, moved, now.Add(2*time.Hour)); ok || moved == s {
		t.Error("a session whose expiry was moved is accepted")
	}
	for _, bad := range []string{"dontpks_", "dontpks_tok:x_1_abc", "dontpks_" + id + "_soon_" + strings.Repeat("A", 43)} {
		if WellFormed(bad) {
			t.Errorf("%q is well formed", bad)
		}
	}
}
