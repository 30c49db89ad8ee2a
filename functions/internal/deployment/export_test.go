package deployment

// SetMaxCachedProjects bounds b's project cache, for tests that fill it.
func SetMaxCachedProjects(b *Backend, n int) { b.maxCached = n }

// CachedProjects is how many projects b keeps.
func CachedProjects(b *Backend) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.recent.Len()
}
