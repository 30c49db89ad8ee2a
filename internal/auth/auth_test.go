package auth

import (
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
