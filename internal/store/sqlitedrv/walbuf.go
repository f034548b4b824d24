package sqlitedrv

import (
	"encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"

	"modernc.org/libc"
	lib "modernc.org/sqlite/lib"
)

// WALBufferVFS is the name of a VFS (a DSN's vfs=…) that is SQLite's own
// unix VFS except for how a connection writes its write-ahead log: the
// frames of one commit go to the file in one pwrite, not two per frame.
//
// SQLite writes each WAL frame as two writes, its 24-byte header and its
// page (walWriteOneFrame), each a pwrite(2): a commit of 8 tokens of 8
// conversations writes ~14 frames, 28 system calls, about a tenth of the
// writer's CPU in the mix (docs/BENCHMARKS.md, "Wave 3, session 8"). This
// VFS keeps a connection's consecutive WAL writes in one buffer and writes
// it out in one pwrite when the commit's last frame is complete: the
// frame whose header carries the database size after the commit (the WAL
// file format's commit mark, bytes 4–7 of the frame header, non-zero only
// there). It also writes the buffer out before anything else the
// connection does with its WAL file (a read, a sync, a truncate, its
// size, a file control, closing it), before a write that does not follow
// the buffer, and once it holds walBufferMax bytes.
//
// So a commit's frames are in the file before SQLite publishes them to
// readers (it updates the WAL index only after its last frame is
// written), and a failed write fails the commit, as before; with
// synchronous=NORMAL nothing is synced at a commit either way. Only the
// number of system calls changes, not the bytes, their order within the
// file, or when a commit is durable.
const WALBufferVFS = "agentik-walbuf"

// walBufferMax bounds the bytes a WAL file's buffer holds before they are
// written out whatever comes next: a full group commit of 512 rows writes
// a few hundred frames.
const walBufferMax = 1 << 20

// walWriteMax is the most bytes one write of the unix VFS takes: it masks
// a write's length with 0x1ffff (seekAndWriteFd), so a 128 KiB write
// would write nothing.
const walWriteMax = 0x1ffff &^ 0xfff

// walFrameHeader is the size of a WAL frame's header (the WAL file format).
const walFrameHeader = 24

var walVFS struct {
	once  sync.Once
	err   error
	unix  uintptr // the default VFS, which every call goes to
	files sync.Map
	// methods: per io_methods of the unix VFS (one per locking style), a
	// copy with the WAL's methods replaced; in C memory, never freed.
	mu      sync.Mutex
	methods map[uintptr]uintptr
	// writes counts the pwrites of WAL buffers (tests).
	writes atomic.Int64
}

// walFile is one open WAL file's buffer, used by its connection's
// goroutine (database/sql never uses a connection from two at once).
type walFile struct {
	orig       uintptr // the unix VFS's io_methods of the file
	buf        uintptr // C memory, cap bytes
	cap, n     int
	off        int64 // file offset of buf's first byte
	commitHead bool  // the last write was the header of a commit frame
}

// registerWALBuffer registers WALBufferVFS once.
func registerWALBuffer() error {
	walVFS.once.Do(func() {
		tls := libc.NewTLS()
		defer tls.Close()
		unix := lib.Xsqlite3_vfs_find(tls, 0)
		if unix == 0 {
			walVFS.err = errNoMem
			return
		}
		walVFS.unix = unix
		walVFS.methods = map[uintptr]uintptr{}
		size := unsafe.Sizeof(lib.Tsqlite3_vfs{})
		p := libc.Xmalloc(tls, libc.Tsize_t(size))
		name, err := libc.CString(WALBufferVFS)
		if p == 0 || err != nil {
			walVFS.err = errNoMem
			return
		}
		v := (*lib.Tsqlite3_vfs)(cPtr(p))
		*v = *(*lib.Tsqlite3_vfs)(cPtr(unix))
		v.FpNext, v.FzName, v.FxOpen = 0, name, walOpenC
		if rc := lib.Xsqlite3_vfs_register(tls, p, 0); rc != lib.SQLITE_OK {
			walVFS.err = &Error{code: int(rc), msg: fmt.Sprintf("sqlitedrv: register %s: %d", WALBufferVFS, rc)}
		}
	})
	return walVFS.err
}

// cFunc is Go function f as a C function pointer.
func cFunc[F any](f F) uintptr { return *(*uintptr)(unsafe.Pointer(&f)) }

var (
	walOpenC      = cFunc(walOpen)
	walCloseC     = cFunc(walClose)
	walReadC      = cFunc(walRead)
	walWriteC     = cFunc(walWrite)
	walTruncateC  = cFunc(walTruncate)
	walSyncC      = cFunc(walSync)
	walFileSizeC  = cFunc(walFileSize)
	walFileCtrlC  = cFunc(walFileControl)
	walMethodSize = libc.Tsize_t(unsafe.Sizeof(lib.Tsqlite3_io_methods{}))
)

func ioMethods(p uintptr) *lib.Tsqlite3_io_methods { return (*lib.Tsqlite3_io_methods)(cPtr(p)) }

// walOpen opens a file with the unix VFS and, if it is a WAL, gives it the
// buffering methods.
func walOpen(tls *libc.TLS, _ uintptr, zName uintptr, pFile uintptr, flags int32, pOutFlags uintptr) int32 {
	open := (*lib.Tsqlite3_vfs)(cPtr(walVFS.unix)).FxOpen
	rc := (*(*func(*libc.TLS, uintptr, uintptr, uintptr, int32, uintptr) int32)(unsafe.Pointer(&open)))(tls, walVFS.unix, zName, pFile, flags, pOutFlags)
	if rc != lib.SQLITE_OK || flags&lib.SQLITE_OPEN_WAL == 0 {
		return rc
	}
	file := (*lib.Tsqlite3_file)(cPtr(pFile))
	if file.FpMethods == 0 {
		return rc
	}
	walVFS.mu.Lock()
	m, ok := walVFS.methods[file.FpMethods]
	if !ok {
		if m = libc.Xmalloc(tls, walMethodSize); m == 0 {
			walVFS.mu.Unlock()
			return rc // unbuffered, as the unix VFS's
		}
		mm := ioMethods(m)
		*mm = *ioMethods(file.FpMethods)
		mm.FxClose, mm.FxRead, mm.FxWrite, mm.FxTruncate = walCloseC, walReadC, walWriteC, walTruncateC
		mm.FxSync, mm.FxFileSize, mm.FxFileControl = walSyncC, walFileSizeC, walFileCtrlC
		walVFS.methods[file.FpMethods] = m
	}
	walVFS.mu.Unlock()
	walVFS.files.Store(pFile, &walFile{orig: file.FpMethods})
	file.FpMethods = m
	return rc
}

func walOf(pFile uintptr) *walFile {
	f, _ := walVFS.files.Load(pFile)
	return f.(*walFile)
}

// flush writes f's buffer out with the unix VFS's write.
func (f *walFile) flush(tls *libc.TLS, pFile uintptr) int32 {
	if f.n == 0 {
		return lib.SQLITE_OK
	}
	n := f.n
	f.n, f.commitHead = 0, false
	write := ioMethods(f.orig).FxWrite
	for done := 0; done < n; {
		k := min(n-done, walWriteMax)
		walVFS.writes.Add(1)
		rc := (*(*func(*libc.TLS, uintptr, uintptr, int32, int64) int32)(unsafe.Pointer(&write)))(tls, pFile, f.buf+uintptr(done), int32(k), f.off+int64(done))
		if rc != lib.SQLITE_OK {
			return rc
		}
		done += k
	}
	return lib.SQLITE_OK
}

func walWrite(tls *libc.TLS, pFile uintptr, zBuf uintptr, iAmt int32, iOfst int64) int32 {
	f := walOf(pFile)
	if f.n > 0 && iOfst != f.off+int64(f.n) {
		if rc := f.flush(tls, pFile); rc != lib.SQLITE_OK {
			return rc
		}
	}
	n := int(iAmt)
	if f.n+n > f.cap {
		c := max(2*f.cap, f.n+n, 64<<10)
		p := libc.Xrealloc(tls, f.buf, libc.Tsize_t(c))
		if p == 0 {
			if rc := f.flush(tls, pFile); rc != lib.SQLITE_OK {
				return rc
			}
			write := ioMethods(f.orig).FxWrite
			return (*(*func(*libc.TLS, uintptr, uintptr, int32, int64) int32)(unsafe.Pointer(&write)))(tls, pFile, zBuf, iAmt, iOfst)
		}
		f.buf, f.cap = p, c
	}
	if f.n == 0 {
		f.off = iOfst
	}
	src := cMem(zBuf, n)
	copy(cMem(f.buf+uintptr(f.n), n), src)
	f.n += n
	// A frame's page follows its header; the page of a commit frame ends
	// the commit.
	done := f.commitHead && n != walFrameHeader
	f.commitHead = n == walFrameHeader && binary.BigEndian.Uint32(src[4:8]) != 0
	if done || f.n >= walBufferMax {
		return f.flush(tls, pFile)
	}
	return lib.SQLITE_OK
}

func walClose(tls *libc.TLS, pFile uintptr) int32 {
	f := walOf(pFile)
	rc := f.flush(tls, pFile)
	walVFS.files.Delete(pFile)
	if f.buf != 0 {
		libc.Xfree(tls, f.buf)
	}
	(*lib.Tsqlite3_file)(cPtr(pFile)).FpMethods = f.orig
	closeFn := ioMethods(f.orig).FxClose
	if rc2 := (*(*func(*libc.TLS, uintptr) int32)(unsafe.Pointer(&closeFn)))(tls, pFile); rc == lib.SQLITE_OK {
		rc = rc2
	}
	return rc
}

func walRead(tls *libc.TLS, pFile uintptr, zBuf uintptr, iAmt int32, iOfst int64) int32 {
	f := walOf(pFile)
	if rc := f.flush(tls, pFile); rc != lib.SQLITE_OK {
		return rc
	}
	read := ioMethods(f.orig).FxRead
	return (*(*func(*libc.TLS, uintptr, uintptr, int32, int64) int32)(unsafe.Pointer(&read)))(tls, pFile, zBuf, iAmt, iOfst)
}

func walTruncate(tls *libc.TLS, pFile uintptr, size int64) int32 {
	f := walOf(pFile)
	if rc := f.flush(tls, pFile); rc != lib.SQLITE_OK {
		return rc
	}
	trunc := ioMethods(f.orig).FxTruncate
	return (*(*func(*libc.TLS, uintptr, int64) int32)(unsafe.Pointer(&trunc)))(tls, pFile, size)
}

func walSync(tls *libc.TLS, pFile uintptr, flags int32) int32 {
	f := walOf(pFile)
	if rc := f.flush(tls, pFile); rc != lib.SQLITE_OK {
		return rc
	}
	sync := ioMethods(f.orig).FxSync
	return (*(*func(*libc.TLS, uintptr, int32) int32)(unsafe.Pointer(&sync)))(tls, pFile, flags)
}

func walFileSize(tls *libc.TLS, pFile uintptr, pSize uintptr) int32 {
	f := walOf(pFile)
	if rc := f.flush(tls, pFile); rc != lib.SQLITE_OK {
		return rc
	}
	size := ioMethods(f.orig).FxFileSize
	return (*(*func(*libc.TLS, uintptr, uintptr) int32)(unsafe.Pointer(&size)))(tls, pFile, pSize)
}

func walFileControl(tls *libc.TLS, pFile uintptr, op int32, pArg uintptr) int32 {
	f := walOf(pFile)
	if rc := f.flush(tls, pFile); rc != lib.SQLITE_OK {
		return rc
	}
	ctl := ioMethods(f.orig).FxFileControl
	return (*(*func(*libc.TLS, uintptr, int32, uintptr) int32)(unsafe.Pointer(&ctl)))(tls, pFile, op, pArg)
}
