package confirmclient

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/confirm"
)

// A cached schema is read only for the capabilities and the server it was
// fetched for, and only within its day: an older one, one from another
// server or one of other capabilities is fetched again.
func TestACachedSchemaIsReadOnlyForItsCapabilitiesAndServerWithinADay(t *testing.T) {
	now := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	file := filepath.Join(t.TempDir(), "dont", "tools.cache")
	write := func(s Schema) {
		t.Helper()
		if got := WriteCache(file, &s); got != file {
			t.Fatalf("WriteCache wrote %q, want %q", got, file)
		}
	}
	const ep = "https://dont.example/"
	write(Schema{FetchedAt: now.Add(-23 * time.Hour), Endpoint: ep, Caps: confirm.CLICaps})
	if s, ok := ReadCache(file, "https://dont.example", now); !ok || s.Source != "cache" || s.File != file {
		t.Fatalf("a 23 h old cache of this server: %+v %v", s, ok)
	}
	for name, s := range map[string]Schema{
		"25 h old":           {FetchedAt: now.Add(-25 * time.Hour), Endpoint: ep, Caps: confirm.CLICaps},
		"from the future":    {FetchedAt: now.Add(2 * time.Minute), Endpoint: ep, Caps: confirm.CLICaps},
		"of another server":  {FetchedAt: now, Endpoint: "https://other.example", Caps: confirm.CLICaps},
		"other capabilities": {FetchedAt: now, Endpoint: ep, Caps: confirm.CapConfirm},
	} {
		write(s)
		if got, ok := ReadCache(file, ep, now); ok {
			t.Errorf("a cache %s was read: %+v", name, got)
		}
	}
	if _, ok := ReadCache(filepath.Join(t.TempDir(), "none"), ep, now); ok {
		t.Error("a missing cache file was read")
	}
}
