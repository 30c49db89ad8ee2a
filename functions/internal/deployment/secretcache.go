package deployment

import (
	"context"
	"crypto/sha256"
	"sync"
	"time"

	"github.com/dont-cli/dont/internal/store/dynamo"
)

// SecretCacheTTL is how long a process keeps a project secret version it
// opened. A warm api instance rebuilds each project's store every
// projectRefresh (a minute) so that settings and rotations reach it; the
// rebuilt store reads the secret item again (which versions exist, which
// is current) but finds the opened bytes here instead of asking KMS: one
// Decrypt per version and process every SecretCacheTTL instead of one per
// project and minute ($3 per million calls of a quiet project,
// docs/aws-cost.md).
//
// What it does not change: which callback tokens verify. The store still
// reads the secret item when it decides (a retired version is refused on
// every instance at once, a rotation reaches an instance within
// projectRefresh); the cache only turns the same ciphertext into the same
// bytes without KMS. Bearer tokens never touch it: each request reads the
// token's item (revocation is immediate). What it delays is only KMS's own
// refusal: a disabled key, or a role that lost kms:Decrypt, stops opening
// versions a warm instance already opened within SecretCacheTTL
// (TestAProcessOpensASecretOnceAndRevocationStillTakesEffect).
const SecretCacheTTL = 15 * time.Minute

// maxCachedSecrets bounds the cache: a few versions for each project a
// process keeps (maxCachedProjects).
const maxCachedSecrets = 4 * maxCachedProjects

// SecretCache is a dynamo.Sealer that remembers, per process and for TTL,
// the bytes each sealed version opened to, keyed by project and a digest
// of the ciphertext (a ciphertext opens to one value, and only under its
// own project's encryption context). Sealing is never cached.
type SecretCache struct {
	Sealer dynamo.Sealer
	TTL    time.Duration
	// Now is the cache's clock (nil: the wall clock).
	Now func() time.Time

	mu     sync.Mutex
	opened map[secretKey]openedSecret
}

type secretKey struct {
	project string
	sealed  [sha256.Size]byte
}

type openedSecret struct {
	secret []byte
	until  time.Time
}

// NewSecretCache caches what sealer opens for ttl.
func NewSecretCache(sealer dynamo.Sealer, ttl time.Duration) *SecretCache {
	return &SecretCache{Sealer: sealer, TTL: ttl}
}

func (c *SecretCache) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// Seal implements dynamo.Sealer.
func (c *SecretCache) Seal(ctx context.Context, project string, secret []byte) ([]byte, error) {
	return c.Sealer.Seal(ctx, project, secret)
}

// Open implements dynamo.Sealer: the cached bytes while fresh, else the
// sealer's (a failure is not cached).
func (c *SecretCache) Open(ctx context.Context, project string, sealed []byte) ([]byte, error) {
	k := secretKey{project: project, sealed: sha256.Sum256(sealed)}
	now := c.now()
	c.mu.Lock()
	if o, ok := c.opened[k]; ok && now.Before(o.until) {
		c.mu.Unlock()
		return append([]byte(nil), o.secret...), nil
	}
	c.mu.Unlock()
	secret, err := c.Sealer.Open(ctx, project, sealed)
	if err != nil {
		c.forget(k)
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.opened == nil {
		c.opened = map[secretKey]openedSecret{}
	}
	if len(c.opened) >= maxCachedSecrets {
		for key, o := range c.opened {
			if !now.Before(o.until) {
				delete(c.opened, key)
			}
		}
		if len(c.opened) >= maxCachedSecrets {
			clear(c.opened)
		}
	}
	c.opened[k] = openedSecret{secret: append([]byte(nil), secret...), until: now.Add(c.TTL)}
	return secret, nil
}

func (c *SecretCache) forget(k secretKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.opened, k)
}

var _ dynamo.Sealer = (*SecretCache)(nil)
