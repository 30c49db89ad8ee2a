//go:build unix

package personal

import (
	"os"
	"syscall"
)

// OwnerUID is the user id that owns the file fi describes.
func OwnerUID(fi os.FileInfo) (int, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}
