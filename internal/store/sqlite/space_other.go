//go:build !(linux || darwin || freebsd)

package sqlite

import "errors"

// diskFree is not known here: writes are not refused for space, and a
// full disk is reported by SQLite.
func diskFree(string) (uint64, error) { return 0, errors.ErrUnsupported }
