package eventlog

import (
	"bytes"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestDeltaLogIndexFiles: every sealed segment's index is served from its
// file, and only they have one; opening again after a crash replaces a
// garbage index file, removes one of the active segment, a torn temporary
// one, one of no segment and one of another epoch, and reads as before;
// Prune removes the files of the segments it drops.
func TestDeltaLogIndexFiles(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(15, 16))
	path := filepath.Join(t.TempDir(), "d.db")
	l := openSmallLog(t, path)
	defer func() { l.Close() }()
	var m deltaModel
	appendRandom(t, r, l, &m, 300)
	checkSealed(t, l, 6)
	if got, want := idxFiles(t, l.dir), segIdxFiles(l); !slices.Equal(got, want) {
		t.Fatalf("index files %q, want the sealed segments' %q", got, want)
	}
	checkReads(t, r, l, &m)
	if got, ok := mappedFiles(t, l.dir); ok && len(got) != len(segIdxFiles(l)) {
		t.Errorf("mapped %q, want the sealed segments' index files", got)
	}

	// A crash: the files stay, some torn or foreign.
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if got, ok := mappedFiles(t, l.dir); ok && len(got) > 0 {
		t.Errorf("Close left %q mapped", got)
	}
	garbage := bytes.Repeat([]byte{0xff}, 64)
	for _, name := range []string{
		"e-99999999999999999999.log" + idxSuffix,                 // no segment's
		"x-00000000000000000001.log" + idxSuffix,                 // another epoch's
		"x-00000000000000000001.log",                             // (its segment, left alone)
		filepath.Base(segPath(t, l.dir, -1)) + idxSuffix,         // the active segment's
		filepath.Base(segPath(t, l.dir, 2)) + idxSuffix + ".tmp", // torn while written
		filepath.Base(segPath(t, l.dir, 3)) + idxSuffix,          // a sealed segment's, garbage
	} {
		if err := os.WriteFile(filepath.Join(l.dir, name), garbage, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	l = openSmallLog(t, path)
	checkSealed(t, l, 6)
	if got, want := idxFiles(t, l.dir), segIdxFiles(l); !slices.Equal(got, want) {
		t.Fatalf("index files opened again %q, want the sealed segments' %q", got, want)
	}
	if _, err := os.Stat(filepath.Join(l.dir, "x-00000000000000000001.log")); err != nil {
		t.Errorf("another epoch's segment: %v", err)
	}
	checkReads(t, r, l, &m)

	m.floor = l.segs[3].idx.seq(1)
	if err := l.Prune(m.floor); err != nil {
		t.Fatal(err)
	}
	if got, want := idxFiles(t, l.dir), segIdxFiles(l); !slices.Equal(got, want) {
		t.Errorf("index files after Prune %q, want the kept segments' %q", got, want)
	}
	if got, ok := mappedFiles(t, l.dir); ok && !slices.Equal(got, segIdxFiles(l)) {
		t.Errorf("mapped after Prune %q, want the kept segments' index files", got)
	}
	checkReads(t, r, l, &m)
	appendRandom(t, r, l, &m, 100)
	checkSealed(t, l, 4)
	checkReads(t, r, l, &m)
}

// mappedFiles is the names of the files in dir the process maps, sorted
// (false where /proc/self/maps does not tell).
func mappedFiles(t *testing.T, dir string) ([]string, bool) {
	t.Helper()
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return nil, false
	}
	var names []string
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(strings.TrimSuffix(strings.TrimSpace(line), " (deleted)"))
		if len(f) == 6 && filepath.Dir(f[5]) == dir {
			names = append(names, filepath.Base(f[5]))
		}
	}
	slices.Sort(names)
	return slices.Compact(names), true
}

// segPath is the path of segment i (from the end if negative) of the
// segments in dir, by name.
func segPath(t *testing.T, dir string, i int) string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "e-*.log"))
	if err != nil || len(files) == 0 {
		t.Fatal(files, err)
	}
	slices.Sort(files)
	if i < 0 {
		i += len(files)
	}
	return files[i]
}

// TestDeltaLogRedactKeepsIndex: a redaction rewrites frames in place, so a
// sealed segment's mapped index, and its file, stay as they were and
// every read goes on finding its records by it.
func TestDeltaLogRedactKeepsIndex(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(17, 18))
	path := filepath.Join(t.TempDir(), "d.db")
	l := openSmallLog(t, path)
	defer func() { l.Close() }()
	var m deltaModel
	appendRandom(t, r, l, &m, 300)
	checkSealed(t, l, 6)
	files := map[string][]byte{}
	for _, name := range idxFiles(t, l.dir) {
		b, err := os.ReadFile(filepath.Join(l.dir, name))
		if err != nil {
			t.Fatal(err)
		}
		files[name] = b
	}
	var redact []int64
	for i := range m.recs {
		if r.IntN(3) == 0 {
			redact = append(redact, m.recs[i].Seq)
			b := bytes.Repeat([]byte(" "), len(m.recs[i].JSON))
			copy(b, `{"redacted":true}`)
			m.recs[i].JSON = b
		}
	}
	if err := l.Redact(redact); err != nil {
		t.Fatal(err)
	}
	for name, was := range files {
		if b, err := os.ReadFile(filepath.Join(l.dir, name)); err != nil || !bytes.Equal(b, was) {
			t.Errorf("%s changed by a redaction (%v)", name, err)
		}
	}
	for i, seg := range l.segs {
		var offs []uint32
		b, err := os.ReadFile(seg.path)
		if err != nil {
			t.Fatal(err)
		}
		for off := 0; off < len(b); {
			_, n, ok := parseFrame(b[off:])
			if !ok {
				t.Fatalf("segment %d: bad frame at %d after a redaction", i, off)
			}
			offs = append(offs, uint32(off))
			off += n
		}
		for j := range seg.idx.len() {
			if seg.idx.off(j) != offs[j] {
				t.Fatalf("segment %d: record %d at %d by the index, %d in the file", i, j, seg.idx.off(j), offs[j])
			}
		}
	}
	checkReads(t, r, l, &m)
}

// TestDeltaLogIndexInMemory: where a sealed index's file cannot be
// written, the index stays packed in memory (logged once) and every read
// is as right.
func TestDeltaLogIndexInMemory(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(19, 20))
	path := filepath.Join(t.TempDir(), "d.db")
	l := openSmallLog(t, path)
	var m deltaModel
	appendRandom(t, r, l, &m, 300)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// A directory, not empty, where each temporary index file would be.
	segs, err := filepath.Glob(filepath.Join(l.dir, "e-*.log"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range segs {
		if err := os.MkdirAll(s+idxSuffix+".tmp/x", 0o700); err != nil {
			t.Fatal(err)
		}
	}
	var logged bytes.Buffer
	l, err = OpenDeltaLog(path, "e", slog.New(slog.NewTextHandler(&logged, nil)), testRedacted)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	l.segMax = 4 << 10
	if len(l.segs) < 6 {
		t.Fatalf("%d segments", len(l.segs))
	}
	for i, seg := range l.segs[:len(l.segs)-1] {
		if !seg.idx.sealed() || seg.idx.m != nil {
			t.Errorf("segment %d: sealed %v, mapped %v; want sealed in memory", i, seg.idx.sealed(), seg.idx.m != nil)
		}
	}
	if n := strings.Count(logged.String(), "delta_log_index_in_memory"); n != 1 {
		t.Errorf("logged %d times that indexes stay in memory, want once:\n%s", n, logged.String())
	}
	if got := idxFiles(t, l.dir); len(got) != len(segs) {
		t.Errorf("index files %q, want only the blocked temporary ones", got)
	}
	checkReads(t, r, l, &m)
}

// TestFoldDeltaLogRemovesIndexFiles: opening a database plain folds a
// delta log of sealed segments, each with its index file, into the events
// table, then removes the log's directory, index files and all.
func TestFoldDeltaLogRemovesIndexFiles(t *testing.T) {
	t.Parallel()
	db := newModeDB(t)
	r := rand.New(rand.NewPCG(21, 22))
	path := filepath.Join(t.TempDir(), "d.db")
	l := openSmallLog(t, path)
	var m deltaModel
	appendRandom(t, r, l, &m, 200)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l, err := LeftDeltaLog(path, "e", slog.New(slog.DiscardHandler), testRedacted)
	if err != nil {
		t.Fatal(err)
	}
	checkSealed(t, l, 4)
	all := func(keys []string) (map[string]bool, error) {
		have := map[string]bool{}
		for _, k := range keys {
			have[k] = true
		}
		return have, nil
	}
	if err := FoldDeltaLog(db, &modeTable, l, all); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + "-deltas"); !os.IsNotExist(err) {
		t.Errorf("the fold left the delta log's directory (%v): %q", err, idxFiles(t, path+"-deltas"))
	}
	var n int
	if err := db.Raw("SELECT COUNT(*) FROM ev").Scan(&n).Error; err != nil || n != len(m.recs) {
		t.Errorf("%d records folded (%v), want %d", n, err, len(m.recs))
	}
}
