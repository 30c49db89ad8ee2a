package webauthnrp

import "testing"

func TestARelyingPartyIsAnHTTPSOriginOrLocalhost(t *testing.T) {
	for _, ok := range []string{"http://localhost:8700", "http://localhost", "https://dont.example.com", "https://dont.example.com:8443", "http://app.localhost:3000"} {
		if _, err := New(ok); err != nil {
			t.Errorf("New(%q): %v", ok, err)
		}
	}
	// Browsers take no IP address as relying party id and allow WebAuthn
	// over plain HTTP only on localhost; an empty origin is a call from no page.
	for _, bad := range []string{"", "http://127.0.0.1:8700", "http://dont.example.com", "ftp://localhost", "https://dont.example.com/approvals", "localhost:8700"} {
		if _, err := New(bad); err == nil {
			t.Errorf("New(%q) accepted", bad)
		}
	}
}
