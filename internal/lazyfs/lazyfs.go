// Package lazyfs is a FUSE file system for power-loss tests, in the
// spirit of Jepsen's LazyFS: it passes every operation through to a
// backing folder, and keeps, for each file written since its last fsync
// or fdatasync, what those writes overwrote. PowerLoss unmounts it and
// undoes every write not yet synced, leaving the backing folder as a
// power cut would have left the disk in the worst case: nothing that was
// not synced survives.
//
// What it models, and what not: file contents and sizes are durable only
// once the file is synced (fsync and fdatasync alike, through any
// descriptor of the file); creating, removing and renaming files are
// durable at once (a real file system needs a directory sync for that,
// which SQLite does when it makes a journal or WAL file); a write is
// never torn (a dropped write is dropped whole). The files' data goes
// through the FUSE daemon on every write (no writeback cache, no
// passthrough), so nothing reaches the backing folder unseen.
//
// It mounts with the fusermount-free DirectMount, so it needs root and
// /dev/fuse; Mount's error says which is missing. Tests that use it fail,
// not skip, without them.
package lazyfs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// FS is a mounted lazy file system.
type FS struct {
	mountpoint, backing string
	server              *fuse.Server

	mu sync.Mutex
	// unsynced holds the files written since their last sync, by the
	// backing file's inode number.
	unsynced map[uint64]*unsynced
	stats    Stats
}

// Stats counts what a mount saw and, after PowerLoss, what it dropped.
type Stats struct {
	Writes int // writes, truncations and allocations of file data
	Syncs  int // fsync and fdatasync calls on files
	// DroppedFiles is the number of files PowerLoss rolled back to their
	// last synced state, DroppedWrites the writes it undid.
	DroppedFiles, DroppedWrites int
}

// unsynced is one file's writes since its last sync: the size it had
// then and, in order, the bytes each write overwrote.
type unsynced struct {
	f          *os.File // the backing file, read and written directly
	syncedSize int64
	undo       []overwritten
}

// overwritten is what a write replaced: old at off.
type overwritten struct {
	off int64
	old []byte
}

// Mount mounts a lazy view of backing at mountpoint (an existing empty
// folder).
func Mount(mountpoint, backing string) (*FS, error) {
	if _, err := os.Stat("/dev/fuse"); err != nil {
		return nil, fmt.Errorf("lazyfs needs /dev/fuse: %w", err)
	}
	if os.Geteuid() != 0 {
		return nil, errors.New("lazyfs mounts directly (DirectMount), which needs root")
	}
	var st syscall.Stat_t
	if err := syscall.Stat(backing, &st); err != nil {
		return nil, err
	}
	l := &FS{mountpoint: mountpoint, backing: backing, unsynced: map[uint64]*unsynced{}}
	data := &fs.LoopbackRoot{Path: backing, Dev: uint64(st.Dev)}
	root := &node{LoopbackNode: &fs.LoopbackNode{RootData: data}, lfs: l}
	data.RootNode = root
	zero := time.Duration(0)
	server, err := fs.Mount(mountpoint, root, &fs.Options{
		// No kernel caching of names or attributes: every size a
		// process reads is the backing file's.
		EntryTimeout: &zero, AttrTimeout: &zero, NegativeTimeout: &zero,
		MountOptions: fuse.MountOptions{DirectMount: true, DirectMountStrict: true, FsName: "lazyfs", Name: "lazyfs", DisableXAttrs: true},
	})
	if err != nil {
		return nil, fmt.Errorf("mount lazyfs at %s: %w", mountpoint, err)
	}
	l.server = server
	return l, nil
}

// Stats reports what the mount has seen so far.
func (l *FS) Stats() Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stats
}

// Unmount unmounts cleanly: every write stays, synced or not.
func (l *FS) Unmount() error {
	if err := l.unmount(); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for ino, u := range l.unsynced {
		u.f.Close()
		delete(l.unsynced, ino)
	}
	return nil
}

// PowerLoss unmounts (the processes using the mount must have ended) and
// then undoes, file by file, every write made since the file's last sync:
// the backing folder is left as a power cut leaves a disk that kept
// nothing unsynced.
func (l *FS) PowerLoss() (Stats, error) {
	if err := l.unmount(); err != nil {
		return l.Stats(), err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var errs []error
	for ino, u := range l.unsynced {
		for i := len(u.undo) - 1; i >= 0; i-- {
			if _, err := u.f.WriteAt(u.undo[i].old, u.undo[i].off); err != nil {
				errs = append(errs, err)
			}
		}
		if err := u.f.Truncate(u.syncedSize); err != nil {
			errs = append(errs, err)
		}
		if err := u.f.Sync(); err != nil {
			errs = append(errs, err)
		}
		u.f.Close()
		l.stats.DroppedFiles++
		l.stats.DroppedWrites += len(u.undo)
		delete(l.unsynced, ino)
	}
	return l.stats, errors.Join(errs...)
}

// unmount unmounts and waits for the server to stop; the kernel flushes
// what it still holds (pages of mapped files) first. A process that has
// just been killed may hold the mount a moment longer.
func (l *FS) unmount() error {
	var err error
	for range 50 {
		if err = l.server.Unmount(); err == nil {
			l.server.Wait()
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("unmount lazyfs at %s: %w", l.mountpoint, err)
}

// beforeWrite records what a write of n bytes at off is about to
// overwrite in the file ino at path (the backing path). Bytes at or past
// the file's synced size need no record: the truncation to that size
// drops them. It is called with l.mu held, and the write follows under it.
func (l *FS) beforeWrite(ino uint64, path string, off, n int64) error {
	u := l.unsynced[ino]
	if u == nil {
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			return err
		}
		st, err := f.Stat()
		if err != nil {
			f.Close()
			return err
		}
		u = &unsynced{f: f, syncedSize: st.Size()}
		l.unsynced[ino] = u
	}
	l.stats.Writes++
	st, err := u.f.Stat()
	if err != nil {
		return err
	}
	end := min(off+n, st.Size(), u.syncedSize)
	if end <= off {
		return nil
	}
	old := make([]byte, end-off)
	if _, err := u.f.ReadAt(old, off); err != nil {
		return err
	}
	u.undo = append(u.undo, overwritten{off: off, old: old})
	return nil
}

// synced makes every write to ino so far durable.
func (l *FS) synced(ino uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stats.Syncs++
	if u := l.unsynced[ino]; u != nil {
		u.f.Close()
		delete(l.unsynced, ino)
	}
}

// node is a loopback node whose files record their writes (file) and
// whose truncations by path are recorded too.
type node struct {
	*fs.LoopbackNode
	lfs *FS
}

var (
	_ fs.NodeWrapChilder = (*node)(nil)
	_ fs.NodeOpener      = (*node)(nil)
	_ fs.NodeCreater     = (*node)(nil)
	_ fs.NodeSetattrer   = (*node)(nil)
)

// WrapChild makes every node below the root a node.
func (n *node) WrapChild(_ context.Context, ops fs.InodeEmbedder) fs.InodeEmbedder {
	return &node{LoopbackNode: ops.(*fs.LoopbackNode), lfs: n.lfs}
}

// backingPath is the node's file in the backing folder.
func (n *node) backingPath() string {
	return filepath.Join(n.RootData.Path, n.Path(nil))
}

func (n *node) ino() uint64 { return n.StableAttr().Ino }

// Open opens the backing file; an O_TRUNC open is a truncation to zero.
func (n *node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if flags&syscall.O_TRUNC != 0 {
		n.lfs.mu.Lock()
		defer n.lfs.mu.Unlock()
		if err := n.lfs.beforeWrite(n.ino(), n.backingPath(), 0, 1<<62); err != nil {
			return nil, 0, fs.ToErrno(err)
		}
	}
	fh, fl, errno := n.LoopbackNode.Open(ctx, flags)
	if errno != 0 {
		return nil, 0, errno
	}
	return &file{inner: fh.(*fs.LoopbackFile), n: n}, fl, 0
}

// Create creates the backing file (empty: nothing to record).
func (n *node) Create(ctx context.Context, name string, flags, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	in, fh, fl, errno := n.LoopbackNode.Create(ctx, name, flags, mode, out)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	child, ok := in.Operations().(*node)
	if !ok {
		fh.(fs.FileReleaser).Release(ctx)
		return nil, nil, 0, syscall.EIO
	}
	return in, &file{inner: fh.(*fs.LoopbackFile), n: child}, fl, 0
}

// Setattr records a truncation before it happens.
func (n *node) Setattr(ctx context.Context, f fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if lf, ok := f.(*file); ok {
		f = lf.inner
	}
	if size, ok := in.GetSize(); ok {
		n.lfs.mu.Lock()
		defer n.lfs.mu.Unlock()
		if err := n.lfs.beforeWrite(n.ino(), n.backingPath(), int64(size), 1<<62); err != nil {
			return fs.ToErrno(err)
		}
	}
	return n.LoopbackNode.Setattr(ctx, f, in, out)
}

// file is an open file of a node: writes are recorded, syncs make them
// durable, everything else is the loopback's. It deliberately offers no
// passthrough (the kernel would then write the backing file unseen).
type file struct {
	inner *fs.LoopbackFile
	n     *node
}

var (
	_ fs.FileReader    = (*file)(nil)
	_ fs.FileWriter    = (*file)(nil)
	_ fs.FileFsyncer   = (*file)(nil)
	_ fs.FileFlusher   = (*file)(nil)
	_ fs.FileReleaser  = (*file)(nil)
	_ fs.FileGetattrer = (*file)(nil)
	_ fs.FileSetattrer = (*file)(nil)
	_ fs.FileAllocater = (*file)(nil)
	_ fs.FileLseeker   = (*file)(nil)
)

func (f *file) Read(ctx context.Context, buf []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	return f.inner.Read(ctx, buf, off)
}

func (f *file) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	l := f.n.lfs
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.beforeWrite(f.n.ino(), f.n.backingPath(), off, int64(len(data))); err != nil {
		return 0, fs.ToErrno(err)
	}
	return f.inner.Write(ctx, data, off)
}

// Fsync makes the file's writes durable, through whichever descriptor
// (fsync and fdatasync alike). The backing file is not synced: the
// model, not the backing disk, is what a test's power loss reads.
func (f *file) Fsync(_ context.Context, _ uint32) syscall.Errno {
	f.n.lfs.synced(f.n.ino())
	return 0
}

func (f *file) Flush(ctx context.Context) syscall.Errno   { return f.inner.Flush(ctx) }
func (f *file) Release(ctx context.Context) syscall.Errno { return f.inner.Release(ctx) }

func (f *file) Getattr(ctx context.Context, out *fuse.AttrOut) syscall.Errno {
	return f.inner.Getattr(ctx, out)
}

func (f *file) Setattr(ctx context.Context, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	return f.n.Setattr(ctx, f, in, out)
}

func (f *file) Allocate(ctx context.Context, off, size uint64, mode uint32) syscall.Errno {
	l := f.n.lfs
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.beforeWrite(f.n.ino(), f.n.backingPath(), int64(off), int64(size)); err != nil {
		return fs.ToErrno(err)
	}
	return f.inner.Allocate(ctx, off, size, mode)
}

func (f *file) Lseek(ctx context.Context, off uint64, whence uint32) (uint64, syscall.Errno) {
	return f.inner.Lseek(ctx, off, whence)
}
