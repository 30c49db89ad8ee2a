package dynamo

import (
	"context"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// A function builds a project's store afresh every minute, and each new
// store reads two items of the project's meta partition (P#<p>#M) at
// once: the settings (TableService) and the secret (to check a callback
// token, or make one); its first commit reads the project's hooks, kept
// in the same partition (hooks.go). In a quiet project that is every
// call. Whichever of the settings and secret comes first reads the
// partition with one strongly consistent Query — the settings, secret,
// horizon and a few hooks together are under 4 KB, one read unit and one
// request instead of three — keeps the other item for the second read,
// once, within metaFresh: what that read returns is what it would have
// read a moment earlier; and fills the hook cache, for its ttl, as the
// commit's own read of the hooks would have. This store's own
// writes of either item drop what is kept; the writes that read the
// secret item back (create, rotate) and the lists of versions always
// read it afresh.
type metaPreload struct {
	mu sync.Mutex
	at time.Time
	// settings and secret are the items the Query found (nil: none
	// stored); has* says whether each is still kept.
	settings, secret       map[string]types.AttributeValue
	hasSettings, hasSecret bool
}

// metaFresh bounds how long after its Query a kept item may answer: a
// rebuilt store makes both reads within one request.
const metaFresh = 2 * time.Second

const (
	settingsSortKey = "settings"
	secretSortKey   = "secret"
	// hookSortPrefix starts the sort key of each of the project's hooks
	// (hooks.go): the Query that reads the settings or the secret reads
	// them too and fills the hook cache, so a rebuilt store's commits
	// read no hooks of their own.
	hookSortPrefix = "hook#"
)

// drop forgets what is kept (this store wrote one of the items).
func (m *metaPreload) drop() {
	m.mu.Lock()
	m.hasSettings, m.hasSecret, m.settings, m.secret = false, false, nil, nil
	m.mu.Unlock()
}

// take returns the kept item sk (nil: the Query found none) and whether
// one was kept and fresh; it is kept no longer.
func (m *metaPreload) take(sk string) (map[string]types.AttributeValue, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	fresh := time.Since(m.at) < metaFresh
	switch sk {
	case settingsSortKey:
		it, ok := m.settings, m.hasSettings && fresh
		m.settings, m.hasSettings = nil, false
		return it, ok
	case secretSortKey:
		it, ok := m.secret, m.hasSecret && fresh
		m.secret, m.hasSecret = nil, false
		return it, ok
	}
	return nil, false
}

// metaItem reads item sk of the meta partition (settings or secret),
// strongly consistent: the one kept by the other's Query if fresh, or else
// the whole partition, keeping the other item for its read.
func (s *Store) metaItem(ctx context.Context, sk string) (map[string]types.AttributeValue, error) {
	if it, ok := s.meta.take(sk); ok {
		return it, nil
	}
	at := time.Now()
	hooksAt, hooksGen := s.hookCache.before()
	found := map[string]map[string]types.AttributeValue{}
	err := s.query(ctx, s.partitionQuery(s.metaPK()), func(it map[string]types.AttributeValue) error {
		found[attrString(it, SortKey)] = it
		return nil
	})
	if err != nil {
		return nil, err
	}
	// The hooks it read fill the hook cache (if this store has one), dated
	// from before the Query as liveHooks's own read would be: the same
	// guarantee (SetHookCache), one read fewer on each commit. A hook item
	// that does not decode fails the commits that read it, not this read.
	if list, err := hooksOf(found); err == nil {
		s.hookCache.keep(hooksAt, hooksGen, list)
	}
	m := &s.meta
	m.mu.Lock()
	m.at = at
	switch sk {
	case settingsSortKey:
		m.secret, m.hasSecret = found[secretSortKey], true
	case secretSortKey:
		m.settings, m.hasSettings = found[settingsSortKey], true
	}
	m.mu.Unlock()
	return found[sk], nil
}
