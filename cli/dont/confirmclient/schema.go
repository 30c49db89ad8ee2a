// Package confirmclient is the CLI's side of client-side confirmation
// (docs/design.md §7.2): the tool schema it gates by, with its 24 h cache
// keyed by capabilities and server; the preview and the [y/N] line read
// before anything is sent; what an answer answers, shown whole; and the
// refusals' remediation. cli/dont wires it to its flags, streams and
// calls; the decision itself is internal/confirm's.
package confirmclient

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/dont-cli/dont/internal/confirm"
	"github.com/dont-cli/dont/internal/envelope"
	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/tools"
)

// Getter reads the API at a path (internal/client; tests put a fake in
// its place).
type Getter interface {
	Get(ctx context.Context, path string) (envelope.Envelope, error)
}

// TTL is how long a fetched tool schema is trusted.
const TTL = 24 * time.Hour

// Schema is the schema the gate reads: fetched from the server (and
// cached in a file keyed by the capability string), or the binary's own
// in embedded mode.
type Schema struct {
	FetchedAt time.Time    `json:"fetched_at"`
	Endpoint  string       `json:"endpoint,omitempty"`
	Caps      string       `json:"caps"`
	Schema    tools.Schema `json:"schema"`
	Source    string       `json:"-"` // embedded, cache or server
	File      string       `json:"-"`
}

// Gate is the gate the schema gives the tool name (none if it lists no such tool).
func (s *Schema) Gate(name string) confirm.Gate {
	for _, t := range s.Schema.Tools {
		if t.Name == name {
			return t.Annotations.Gate
		}
	}
	return confirm.Gate{}
}

// CacheFile is the cache file: under the user cache directory, named
// after the capability string (and the server, so two servers never share one).
func CacheFile(endpoint string) string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	sum := sha256.Sum256([]byte(strings.TrimRight(endpoint, "/")))
	return filepath.Join(dir, "dont", confirm.CacheName(confirm.CLICaps, hex.EncodeToString(sum[:8])))
}

// ReadCache returns a cached schema written for this capability string
// and server less than 24 h ago.
func ReadCache(file, endpoint string, now time.Time) (*Schema, bool) {
	if file == "" {
		return nil, false
	}
	raw, err := os.ReadFile(file)
	if err != nil {
		return nil, false
	}
	var s Schema
	if json.Unmarshal(raw, &s) != nil || !fresh(s, endpoint, now) {
		return nil, false
	}
	s.Source, s.File = "cache", file
	return &s, true
}

// fresh: same capabilities, same server, fetched within the TTL (and
// not in the future).
func fresh(s Schema, endpoint string, now time.Time) bool {
	age := now.Sub(s.FetchedAt)
	return s.Caps == confirm.CLICaps && strings.TrimRight(s.Endpoint, "/") == strings.TrimRight(endpoint, "/") &&
		age >= -time.Minute && age < TTL
}

// Fetch asks the server for its schema, declaring this CLI's
// capabilities. A server without GET /v1/tools is an old server: no
// features, the CLI never prompts, and nothing is cached.
func Fetch(ctx context.Context, c Getter) (*Schema, error) {
	env, err := c.Get(ctx, "/v1/tools")
	if err != nil {
		return nil, err
	}
	s := &Schema{FetchedAt: time.Now().UTC(), Caps: confirm.CLICaps, Source: "server"}
	if !env.OK {
		s.Source = "server-without-schema"
		return s, nil
	}
	if err := json.Unmarshal(env.Data, &s.Schema); err != nil {
		return nil, errs.E(errs.EndpointUnreachable, "the server's tool schema is unreadable").Wrap(err)
	}
	return s, nil
}

// WriteCache caches s atomically (best effort: an unwritable cache only
// means the next run fetches again) and returns the file name.
func WriteCache(file string, s *Schema) string {
	if file == "" {
		return ""
	}
	raw, err := json.Marshal(s)
	if err != nil || os.MkdirAll(filepath.Dir(file), 0o700) != nil {
		return ""
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), ".tools-*")
	if err != nil {
		return ""
	}
	_, werr := tmp.Write(raw)
	cerr := tmp.Close()
	if werr != nil || cerr != nil || os.Rename(tmp.Name(), file) != nil {
		os.Remove(tmp.Name())
		return ""
	}
	return file
}
