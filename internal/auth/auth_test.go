package auth

import (
	"encoding/hex"
	"strings"
	"testing"
)

func TestBearerRoundTripsWhateverTheSecretContains(t *testing.T) {
	for i := 0; i < 200; i++ {
		secret, err := NewSecret()
		if err != nil {
			t.Fatal(err)
		}
		id, got, ok := ParseBearer(BearerString("tok:01HX05A9K8VP0000000000000A", secret))
		if !ok || id != "tok:01HX05A9K8VP0000000000000A" || got != secret || !Matches(got, Hash(secret)) {
			t.Fatalf("round trip of %q failed: %q %q %v", secret, id, got, ok)
		}
	}
	for _, bad := range []string{"", "dont_", "dont_id", "dont__x", "x_id_secret"} {
		if _, _, ok := ParseBearer(bad); ok {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestCallbackTokensNameTheirRequestAndCannotBeForged(t *testing.T) {
	secret := []byte("0123456789abcdef0123456789abcdef")
	tok := CallbackToken(secret, "spawn:01HX05A9K8VP0000000000000A")
	if rid, ok := ParseCallback(secret, tok); !ok || rid != "spawn:01HX05A9K8VP0000000000000A" {
		t.Fatalf("parse: %q %v", rid, ok)
	}
	if _, ok := ParseCallback([]byte("another project's secret........"), tok); ok {
		t.Fatal("a token verified under another project's secret")
	}
	swapped := strings.Replace(tok, "0000000000000A", "0000000000000B", 1)
	if _, ok := ParseCallback(secret, swapped); ok {
		t.Fatal("a token for another request id verified")
	}
}

func TestCallbackTokensOfSharedStoresNameTheirProjectUnderTheMAC(t *testing.T) {
	secret := []byte("0123456789abcdef0123456789abcdef")
	const rid = "spawn:01HX05A9K8VP0000000000000A"
	tok := CallbackTokenOf(secret, "team_a#1", rid)
	if got := CallbackProject(tok); got != "team_a#1" {
		t.Fatalf("project = %q", got)
	}
	if got, ok := ParseCallback(secret, tok); !ok || got != rid {
		t.Fatalf("parse: %q %v", got, ok)
	}
	// Renaming the project in the token breaks the MAC.
	other := strings.Replace(tok, "."+hex.EncodeToString([]byte("team_a#1")), "."+hex.EncodeToString([]byte("team_b")), 1)
	if CallbackProject(other) != "team_b" {
		t.Fatalf("rewrite failed: %s", other)
	}
	if _, ok := ParseCallback(secret, other); ok {
		t.Fatal("a token moved to another project verified")
	}
	if CallbackProject(CallbackToken(secret, rid)) != "" {
		t.Fatal("a single-store token named a project")
	}
	for _, bad := range []string{"dontcb_" + rid + ".zz_sig", "dontcb_" + rid + "._sig", "dontcb_.6161_sig"} {
		if _, ok := ParseCallback(secret, bad); ok {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestACallbackTokenNamesItsSecretVersionAndVerifiesOnlyUnderIt(t *testing.T) {
	v1, v2 := []byte("first secret of the project......"), []byte("second secret of the project.....")
	secrets := map[string][]byte{"1": v1, "2": v2}
	secretOf := func(k string) ([]byte, bool) {
		if k == "" {
			k = "1"
		}
		s, ok := secrets[k]
		return s, ok
	}
	tok := CallbackTokenKeyed(v2, "team-a", "2", "spawn:01X")
	if CallbackKeyID(tok) != "2" || CallbackProject(tok) != "team-a" {
		t.Fatalf("%s names %q of %q", tok, CallbackKeyID(tok), CallbackProject(tok))
	}
	if rid, ok := ParseCallbackKeyed(secretOf, tok); !ok || rid != "spawn:01X" {
		t.Fatalf("a version-2 token did not verify: %q %v", rid, ok)
	}
	legacy := CallbackTokenOf(v1, "team-a", "spawn:01Y")
	if rid, ok := ParseCallbackKeyed(secretOf, legacy); !ok || rid != "spawn:01Y" {
		t.Fatalf("a token naming no version did not verify under version 1: %q %v", rid, ok)
	}
	for name, bad := range map[string]string{
		"relabelled to version 1":  strings.Replace(tok, ".2_", ".1_", 1),
		"a version that is absent": strings.Replace(tok, ".2_", ".7_", 1),
		"a version that is a word": strings.Replace(tok, ".2_", ".two_", 1),
		"four dotted parts":        strings.Replace(tok, ".2_", ".2.3_", 1),
	} {
		if _, ok := ParseCallbackKeyed(secretOf, bad); ok {
			t.Errorf("%s: %s verified", name, bad)
		}
	}
}

func TestTheBearerSchemeIsReadCaseInsensitively(t *testing.T) {
	for h, want := range map[string]string{
		"Bearer dont_x_y": "dont_x_y", "bearer dont_x_y": "dont_x_y", "BEARER   dont_x_y ": "dont_x_y",
		"Basic dont_x_y": "", "dont_x_y": "", "Bearer": "", "": "", "Bearerdont_x_y": "",
	} {
		if got := FromAuthorization(h); got != want {
			t.Errorf("FromAuthorization(%q) = %q, want %q", h, got, want)
		}
	}
}

// A flood of made-up tokens is refused on its face: only the shapes this
// package makes parse, so no transport asks a store about the rest.
func TestOnlyTokensOfTheShapeDontMakesAreWellFormed(t *testing.T) {
	secret, err := NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	bearer := BearerString("tok:01HX05A9K8VP0000000000000A", secret)
	callback := CallbackTokenKeyed([]byte("k"), "acme", "2", "spawn:01HX05A9K8VP0000000000000A")
	for _, tok := range []string{bearer, callback, CallbackToken([]byte("k"), "spawn:01HX05A9K8VP0000000000000A")} {
		if !WellFormed(tok) {
			t.Errorf("%s: a token dont makes is not well-formed", tok)
		}
	}
	for _, tok := range []string{"", "x", "dont_", "dont_tok:01HX05A9K8VP0000000000000A_", "dont_tok:01hx05a9k8vp0000000000000a_" + secret,
		"dont_tok:81HX05A9K8VP0000000000000A_" + secret, "dont_tok:01HX05A9K8VP000000000000UA_" + secret, "dont_claim:01HX05A9K8VP0000000000000A_" + secret,
		bearer[:len(bearer)-1], bearer + "A", "dontcb_spawn:01HX05A9K8VP0000000000000A_short", "dontcb_claim:01HX_" + secret, callback + "x"} {
		if WellFormed(tok) {
			t.Errorf("%q is well-formed", tok)
		}
	}
}
