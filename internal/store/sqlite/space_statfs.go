//go:build linux || darwin || freebsd

package sqlite

import "syscall"

// diskFree is the space an unprivileged writer may still use on dir's
// file system.
func diskFree(dir string) (uint64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return uint64(st.Bavail) * uint64(st.Bsize), nil
}
