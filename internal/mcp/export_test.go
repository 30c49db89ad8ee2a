package mcp

import "time"

// SetProgressEvery shortens the interval of progress reports for a test
// and returns the function that restores it.
func SetProgressEvery(d time.Duration) func() {
	old := progressEvery
	progressEvery = d
	return func() { progressEvery = old }
}

// SetResourcePoll shortens how often a subscribed resource is read again
// and returns the function that restores it.
func SetResourcePoll(d time.Duration) func() {
	old := resourcePoll
	resourcePoll = d
	return func() { resourcePoll = old }
}
