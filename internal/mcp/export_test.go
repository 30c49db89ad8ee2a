package mcp

import "time"

// SetProgressEvery shortens the interval of progress reports for a test
// and returns the function that restores it.
func SetProgressEvery(d time.Duration) func() {
	old := progressEvery
	progressEvery = d
	return func() { progressEvery = old }
}
