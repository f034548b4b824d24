package eventlog

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// A sealed segment's index lives in a file beside it, SEGMENT.idx: its
// heads, then its data, as segIndex keeps them (pack). It is derived data,
// written at each seal (when the writer starts the next segment, and at
// open for every segment but the last) and never trusted across opens:
// open scans every segment anyway, for openConvs, so it removes the index
// files it finds and seals again, and a file torn by a crash or left by
// another epoch is never read. No fsync: a crash loses nothing the next
// open does not make again. Reads go through a read-only shared mapping of
// it (map_unix.go; elsewhere the file's bytes are read into memory),
// unmapped under the log's write lock once no reader can hold it: Prune,
// Close. If the file cannot be written or mapped, the index stays packed
// in memory, as before.

// idxSuffix ends the name of a segment's index file.
const idxSuffix = ".idx"

// sealIndex is seg's index sealed, served from its file when it can be
// (logged once when not). It leaves seg as it is, so that readers may read
// it meanwhile; only the writer (or open) seals.
func (l *DeltaLog) sealIndex(seg *deltaSeg) segIndex {
	if seg.idx.sealed() {
		return seg.idx
	}
	x := seg.idx.sealCopy()
	if x.n == 0 {
		return x
	}
	f, err := x.toFile(seg.path + idxSuffix)
	if err != nil {
		if !l.unmapped {
			l.unmapped = true
			l.log.Warn("delta_log_index_in_memory", "file", seg.path+idxSuffix, "err", err,
				"hint", "sealed segments' indexes stay in the heap: resident memory grows with the delta log")
		}
		return x
	}
	return f
}

// toFile is the sealed, not empty, index x served from a file at path
// written with its bytes (x itself unchanged).
func (x segIndex) toFile(path string) (segIndex, error) {
	m, err := writeMapped(path, x.heads, x.data)
	if err != nil {
		return x, err
	}
	h := len(x.heads)
	x.heads, x.data, x.m = m[:h:h], m[h:], m
	return x, nil
}

// writeMapped writes parts to the file at path (a temporary file renamed
// over it, so that a crash leaves a whole file or none) and maps it.
func writeMapped(path string, parts ...[]byte) (m []byte, err error) {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, err
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = cerr
		}
		if err != nil {
			if m != nil {
				_ = unmapFile(m)
				m = nil
			}
			_ = os.Remove(tmp)
			_ = os.Remove(path)
		}
	}()
	size := 0
	for _, p := range parts {
		if _, err := f.Write(p); err != nil {
			return nil, err
		}
		size += len(p)
	}
	if err := os.Rename(tmp, path); err != nil {
		return nil, err
	}
	if m, err = mapFile(f, size); err != nil {
		return nil, fmt.Errorf("map %s: %w", path, err)
	}
	return m, nil
}

// close closes seg's file and unmaps its index. l.mu is held for writing
// (or seg is no reader's yet): no reader may read the mapping after.
func (seg *deltaSeg) close() error {
	err := seg.f.Close()
	if seg.idx.m != nil {
		err = errors.Join(err, unmapFile(seg.idx.m))
		seg.idx = segIndex{} // an index read after this panics, not faults
	}
	return err
}

// removeIndex removes the index file of the segment at path, if any.
func removeIndex(path string) error {
	if err := os.Remove(path + idxSuffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
