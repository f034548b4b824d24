package eventlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentik/agentik/internal/agent"
)

// The delta log: on SQLite, a group commit that holds only text deltas
// (append_text, and the start_response or start_reasoning a turn appends
// with an answer's first delta: the store's isDelta; nothing else to
// apply) runs no SQLite transaction. The
// writer gives its records their seqs and appends them, framed, to a file
// beside the database with one write, then publishes them. A SQLite commit
// at synchronous=NORMAL is one write too (no fsync), so both survive kill
// -9 alike and both may lose their last commits to a power cut.
//
// A SQLite transaction per group commit, not the token's row, was what
// kept the mix's CPU above 1.25× of the bare relay (docs/BENCHMARKS.md,
// session 11): the deltas stay here for good. Every other commit, and any
// commit on PostgreSQL, is a transaction as before. So a seq is in exactly
// one of the two: agent_event or this log. Every read of the log reads
// both and merges them by seq (Merge, merge.go), cut at the seq committed when
// it began (Store.durable), so that a commit landing between its two reads
// cannot leave a hole.
//
// Files: DIR/EPOCH-FIRSTSEQ.log, DIR = the database's path + "-deltas",
// EPOCH the database's (files of another epoch belong to a database that
// is gone: they are ignored). A segment holds records in seq order; the
// writer starts a new one past SegmentMax. Frame (little endian):
//
//	u32 frame length, u32 CRC-32C of the head, u32 CRC-32C of the payload,
//	u64 seq, i64 created (unix µs), u8 flags,
//	u16+bytes conversation id, u16+bytes owner, u16+bytes event id,
//	payload (the event's JSON).
//
// flags: deltaCommitEnd on the last record of a group commit (a commit is
// whole or absent: opening cuts the last segment after the last complete
// commit), deltaRedacted once a delete rewrote it (in place: the redacted
// JSON padded with spaces to the same length, so no offset moves).
//
// In memory: each segment's seqs and offsets (segIndex: 12 bytes a record
// in the segment appends go to; packed once the writer leaves it, under 2,
// in a file beside the segment, EPOCH-FIRSTSEQ.log.idx, which it maps:
// segfile.go), its lowest and highest event id (SeqOf scans only segments whose range
// holds the id) and its latest date (Prune).

const (
	SegmentMax     = 8 << 20 // bytes: a new segment past it
	deltaFixed     = 29      // bytes before the conversation id
	deltaCommitEnd = 1 << 0
	deltaRedacted  = 1 << 1
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// orphanChunk is how many conversation ids RedactOrphans asks about at once.
const orphanChunk = 500

// Delta is one text delta of the delta log: its seq, when it was
// created, its conversation, owner and event id, and the event's JSON.
type Delta struct {
	Seq             int64
	Created         time.Time
	Conv, Owner, ID string
	JSON            []byte
	flags           byte
}

// deltaSeg is one segment file.
type deltaSeg struct {
	path         string
	f            *os.File
	idx          segIndex // each record's seq (ascending) and where its frame starts
	end          int64    // bytes of complete records
	minID, maxID string
	lastDate     int64 // unix µs, the latest created
}

// DeltaLog is the store's delta log. The writer appends; readers take mu
// for reading to find records and read them; a redaction or Prune takes it
// for writing.
type DeltaLog struct {
	dir, epoch string
	log        *slog.Logger
	mu         sync.RWMutex
	segs       []*deltaSeg // the last is the active one; the others are sealed
	segMax     int64       // SegmentMax; tests set less
	floor      int64       // seqs through it are pruned
	buf        []byte      // the writer's
	// At open: the conversations of records not redacted, for
	// RedactOrphans.
	openConvs map[string][]int64
	// redacted is a stored event's JSON with its content gone (the
	// store's meaning of a delete; see OpenDeltaLog).
	redacted func(payload string) (string, error)
	// fix: the owners of records whose frame names a wrong one, which
	// reads give them instead (FixOwner); read under mu.
	fix map[int64]string
	// unmapped: a sealed index could not be served from its file (logged
	// once; the writer's and open's).
	unmapped bool
}

// FixOwner makes reads (and Each) give the record of seq owner in place of
// the one its frame names: a frame is never rewritten for it, so the store
// keeps the fixes and gives them again at each open.
func (l *DeltaLog) FixOwner(seq int64, owner string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fix == nil {
		l.fix = map[int64]string{}
	}
	l.fix[seq] = owner
}

// ownerOf is the owner of the record v (l.mu held).
func (l *DeltaLog) ownerOf(v *frameView) string {
	if len(l.fix) > 0 {
		if o, ok := l.fix[v.seq]; ok {
			return o
		}
	}
	return v.owner
}

// OpenDeltaLog opens (or creates) the delta log of the database at path,
// loading every segment of epoch and cutting the last after its last
// complete commit. epoch "" (a database not made yet) loads nothing.
// redacted is what Redact makes of a record's JSON (a shorter one; else
// the least that says it was redacted, made from its head).
func OpenDeltaLog(path, epoch string, log *slog.Logger, redacted func(payload string) (string, error)) (*DeltaLog, error) {
	l := &DeltaLog{dir: path + "-deltas", epoch: epoch, log: log, segMax: SegmentMax, openConvs: map[string][]int64{}, redacted: redacted}
	if err := os.MkdirAll(l.dir, 0o700); err != nil {
		return nil, fmt.Errorf("delta log: %w", err)
	}
	names, err := os.ReadDir(l.dir)
	if err != nil {
		return nil, fmt.Errorf("delta log: %w", err)
	}
	type named struct {
		first int64
		path  string
	}
	var files []named
	for _, e := range names {
		name := e.Name()
		if strings.HasSuffix(name, idxSuffix) || strings.HasSuffix(name, idxSuffix+".tmp") {
			// An index file is never trusted across opens (segfile.go):
			// each is written again at its segment's seal.
			if err := os.Remove(filepath.Join(l.dir, name)); err != nil {
				log.Warn("delta_log_stale_index", "file", filepath.Join(l.dir, name), "err", err)
			}
			continue
		}
		ep, rest, ok := strings.Cut(name, "-")
		num, ok2 := strings.CutSuffix(rest, ".log")
		first, err := strconv.ParseInt(num, 10, 64)
		if !ok || !ok2 || err != nil || e.IsDir() {
			continue
		}
		if ep != epoch {
			log.Warn("delta_log_foreign_file", "file", filepath.Join(l.dir, name), "hint", "a segment of another database: ignored")
			continue
		}
		files = append(files, named{first, filepath.Join(l.dir, name)})
	}
	slices.SortFunc(files, func(a, b named) int { return int(min(max(a.first-b.first, -1), 1)) })
	for i, nf := range files {
		seg, err := l.load(nf.path, i == len(files)-1)
		if err != nil {
			l.Close()
			return nil, err
		}
		if i < len(files)-1 {
			if seg.idx.len() == 0 {
				_ = seg.f.Close()
				continue
			}
			seg.idx = l.sealIndex(seg)
		}
		l.segs = append(l.segs, seg)
	}
	return l, nil
}

// load reads a segment's frames into its index. In the last segment
// (last) a torn or uncommitted tail is cut off; in an earlier one a bad
// frame ends what is read of it (logged).
func (l *DeltaLog) load(path string, last bool) (*deltaSeg, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("delta log: %w", err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("delta log: %w", err)
	}
	seg := &deltaSeg{path: path, f: f}
	var (
		off       int
		committed int // records through the last complete commit
		end       int64
		convs     []string // of each record not redacted ("": redacted)
	)
	for off < len(data) {
		v, n, ok := parseFrame(data[off:])
		if !ok {
			if !last {
				l.log.Error("delta_log_bad_frame", "file", path, "offset", off)
			}
			break
		}
		if v.payloadBad { // a redaction torn by a crash: finish it
			p := tornRedaction(v)
			if err := l.rewrite(seg, int64(off), data[off:off+n], p); err != nil {
				_ = f.Close()
				return nil, err
			}
			v.flags |= deltaRedacted
		}
		seg.add(v, uint32(off))
		c := ""
		if v.flags&deltaRedacted == 0 {
			c = strings.Clone(v.conv)
		}
		convs = append(convs, c)
		off += n
		if v.flags&deltaCommitEnd != 0 {
			committed, end = seg.idx.len(), int64(off)
		}
	}
	if !last {
		committed, end = seg.idx.len(), int64(off)
	}
	// An unfinished commit was never acknowledged: it is cut.
	seg.idx.cut(committed)
	seg.end = end
	for i, c := range convs[:committed] {
		if c != "" {
			l.openConvs[c] = append(l.openConvs[c], seg.idx.seq(i))
		}
	}
	if last && end < int64(len(data)) {
		if err := f.Truncate(end); err != nil {
			_ = f.Close()
			return nil, fmt.Errorf("delta log: cut the torn tail of %s: %w", path, err)
		}
	}
	return seg, nil
}

func (seg *deltaSeg) add(v frameView, off uint32) {
	seg.idx.add(v.seq, off)
	if seg.minID == "" || v.id < seg.minID {
		seg.minID = strings.Clone(v.id)
	}
	if v.id > seg.maxID {
		seg.maxID = strings.Clone(v.id)
	}
	seg.lastDate = max(seg.lastDate, v.created)
}

// frameView is a parsed frame; its strings and payload view the bytes.
type frameView struct {
	seq, created    int64
	flags           byte
	conv, owner, id string
	payload         []byte
	payloadBad      bool
}

// parseFrame parses the frame at the start of b: its view, its length,
// and whether its head is whole.
func parseFrame(b []byte) (frameView, int, bool) {
	var v frameView
	if len(b) < deltaFixed+6 {
		return v, 0, false
	}
	n := int(binary.LittleEndian.Uint32(b))
	if n < deltaFixed+6 || n > len(b) {
		return v, 0, false
	}
	fr := b[:n]
	p := deltaFixed
	var strs [3]string
	for i := range strs {
		if p+2 > n {
			return v, 0, false
		}
		k := int(binary.LittleEndian.Uint16(fr[p:]))
		p += 2
		if p+k > n {
			return v, 0, false
		}
		strs[i] = viewString(fr[p : p+k])
		p += k
	}
	if crc32.Update(crc32.Checksum(fr[:4], crcTable), crcTable, fr[12:p]) != binary.LittleEndian.Uint32(fr[4:]) {
		return v, 0, false
	}
	v.seq = int64(binary.LittleEndian.Uint64(fr[12:]))
	v.created = int64(binary.LittleEndian.Uint64(fr[20:]))
	v.flags = fr[28]
	v.conv, v.owner, v.id = strs[0], strs[1], strs[2]
	v.payload = fr[p:]
	v.payloadBad = crc32.Checksum(v.payload, crcTable) != binary.LittleEndian.Uint32(fr[8:])
	return v, n, true
}

// appendFrame appends r's frame to b.
func appendFrame(b []byte, r *Delta) []byte {
	start := len(b)
	b = append(b, make([]byte, deltaFixed)...)
	fr := b[start:]
	binary.LittleEndian.PutUint64(fr[12:], uint64(r.Seq))
	binary.LittleEndian.PutUint64(fr[20:], uint64(r.Created.UnixMicro()))
	fr[28] = r.flags
	for _, s := range [3]string{r.Conv, r.Owner, r.ID} {
		b = binary.LittleEndian.AppendUint16(b, uint16(len(s)))
		b = append(b, s...)
	}
	head := len(b)
	b = append(b, r.JSON...)
	fr = b[start:]
	binary.LittleEndian.PutUint32(fr, uint32(len(fr)))
	binary.LittleEndian.PutUint32(fr[4:], crc32.Update(crc32.Checksum(fr[:4], crcTable), crcTable, fr[12:head-start]))
	binary.LittleEndian.PutUint32(fr[8:], crc32.Checksum(fr[head-start:], crcTable))
	return b
}

// append writes recs (ascending seqs, above every stored one) as one
// commit, with one write, and indexes them. On an error nothing of them
// stays in the file.
func (l *DeltaLog) Append(recs []Delta) error {
	if len(recs) == 0 {
		return nil
	}
	buf := l.buf[:0]
	for i := range recs {
		if i == len(recs)-1 {
			recs[i].flags |= deltaCommitEnd
		}
		buf = appendFrame(buf, &recs[i])
	}
	if cap(buf) <= 1<<20 {
		l.buf = buf
	}
	seg := l.active()
	if seg == nil || (seg.end > 0 && seg.end+int64(len(buf)) > l.segMax) {
		var err error
		if seg, err = l.create(recs[0].Seq); err != nil {
			return err
		}
	}
	if _, err := seg.f.WriteAt(buf, seg.end); err != nil {
		_ = seg.f.Truncate(seg.end)
		return fmt.Errorf("delta log: append: %w", err)
	}
	l.mu.Lock()
	off := seg.end
	for i := range recs {
		r := &recs[i]
		seg.add(frameView{seq: r.Seq, created: r.Created.UnixMicro(), id: r.ID}, uint32(off))
		off += int64(len(r.Conv) + len(r.Owner) + len(r.ID) + len(r.JSON) + deltaFixed + 6)
	}
	seg.end = off
	l.mu.Unlock()
	return nil
}

// active is the segment appends go to (writer only; nil before the first).
func (l *DeltaLog) active() *deltaSeg {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if len(l.segs) == 0 {
		return nil
	}
	return l.segs[len(l.segs)-1]
}

// create starts a new active segment whose first seq is first, and seals
// the one before it.
func (l *DeltaLog) create(first int64) (*deltaSeg, error) {
	path := filepath.Join(l.dir, fmt.Sprintf("%s-%020d.log", l.epoch, first))
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("delta log: %w", err)
	}
	seg := &deltaSeg{path: path, f: f}
	// The segment before it is packed (and its index file written) before
	// the lock (only the writer, here, changes an index; readers read the
	// old form meanwhile) and swapped in under it.
	prev := l.active()
	var sealed segIndex
	if prev != nil {
		sealed = l.sealIndex(prev)
	}
	l.mu.Lock()
	if prev != nil {
		prev.idx = sealed
	}
	l.segs = append(l.segs, seg)
	l.mu.Unlock()
	return seg, nil
}

// head is the highest seq in the log (0: none).
func (l *DeltaLog) Head() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	for i := len(l.segs) - 1; i >= 0; i-- {
		if x := &l.segs[i].idx; x.len() > 0 {
			return x.last()
		}
	}
	return 0
}

// span is records [i, j) of one segment.
type span struct {
	seg  *deltaSeg
	i, j int
}

// read returns the records with after < seq ≤ through, ascending, at most
// limit (≤ 0: all), whose owner is owner unless owner is "".
func (l *DeltaLog) Read(after, through int64, limit int, owner string) ([]agent.Encoded, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	after = max(after, l.floor)
	var spans []span
	n := 0
	for _, seg := range l.segs {
		x := &seg.idx
		if x.len() == 0 || x.last() <= after {
			continue
		}
		// n counts the spans' records: only without an owner is each
		// of them one of the read's.
		if x.first() > through || (limit > 0 && owner == "" && n >= limit) {
			break
		}
		i, _ := x.search(after + 1)
		j := x.len()
		if through < x.last() {
			j, _ = x.search(through + 1)
		}
		if limit > 0 && owner == "" {
			j = min(j, i+limit-n)
		}
		if i < j {
			spans = append(spans, span{seg, i, j})
			n += j - i
		}
	}
	out := make([]agent.Encoded, 0, min(n, 4096))
	for _, sp := range spans {
		var err error
		if out, err = l.readSpan(out, sp, owner, limit); err != nil {
			return nil, err
		}
		if limit > 0 && len(out) >= limit {
			break
		}
	}
	return out, nil
}

// bySeqs returns the records of seqs (ascending) that the log holds,
// whose owner is owner unless owner is "".
func (l *DeltaLog) BySeqs(seqs []int64, owner string) ([]agent.Encoded, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	var out []agent.Encoded
	k := 0
	for _, seg := range l.segs {
		if k == len(seqs) {
			break
		}
		x := &seg.idx
		if x.len() == 0 {
			continue
		}
		for k < len(seqs) && seqs[k] < x.first() {
			k++
		}
		// Runs of consecutive records read as one span.
		cur := span{seg: seg, i: -1}
		for top := x.last(); k < len(seqs) && seqs[k] <= top; k++ {
			if seqs[k] <= l.floor {
				continue
			}
			i, ok := x.search(seqs[k])
			if !ok {
				continue
			}
			if cur.i >= 0 && i == cur.j {
				cur.j++
				continue
			}
			if cur.i >= 0 {
				var err error
				if out, err = l.readSpan(out, cur, owner, 0); err != nil {
					return nil, err
				}
			}
			cur.i, cur.j = i, i+1
		}
		if cur.i >= 0 {
			var err error
			if out, err = l.readSpan(out, cur, owner, 0); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// readSpan reads sp's records with one read and appends them to out (at
// most limit in all, if limit > 0). l.mu is held for reading.
func (l *DeltaLog) readSpan(out []agent.Encoded, sp span, owner string, limit int) ([]agent.Encoded, error) {
	seg := sp.seg
	from, to := seg.bytes(sp.i, sp.j)
	b := make([]byte, to-from) // the events' JSON views it: never reused
	if _, err := seg.f.ReadAt(b, from); err != nil {
		return out, fmt.Errorf("delta log: read %s: %w", seg.path, err)
	}
	for len(b) > 0 {
		v, n, ok := parseFrame(b)
		if !ok {
			return out, fmt.Errorf("delta log: %s: bad frame at %d", seg.path, to-int64(len(b)))
		}
		b = b[n:]
		o := l.ownerOf(&v)
		if owner != "" && o != owner {
			continue
		}
		e := agent.StoredEvent(v.seq, v.id, agent.KindConversation, v.conv, v.payload)
		e.Owner = o
		out = append(out, e)
		if limit > 0 && len(out) >= limit {
			break
		}
	}
	return out, nil
}

// seqOf returns the seq of the event with that id, if the log holds it.
func (l *DeltaLog) SeqOf(id string) (int64, bool, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	for i := len(l.segs) - 1; i >= 0; i-- {
		seg := l.segs[i]
		if seg.idx.len() == 0 || id < seg.minID || id > seg.maxID {
			continue
		}
		b := make([]byte, seg.end)
		if _, err := seg.f.ReadAt(b, 0); err != nil {
			return 0, false, fmt.Errorf("delta log: read %s: %w", seg.path, err)
		}
		for len(b) > 0 {
			v, n, ok := parseFrame(b)
			if !ok {
				break
			}
			if v.id == id && v.seq > l.floor {
				return v.seq, true, nil
			}
			b = b[n:]
		}
	}
	return 0, false, nil
}

// bytes is where records [i, j) of seg lie in its file: [from, to).
// l.mu is held.
func (seg *deltaSeg) bytes(i, j int) (from, to int64) {
	oi, oj := seg.idx.offs2(i, j)
	from, to = int64(oi), seg.end
	if j < seg.idx.len() {
		to = int64(oj)
	}
	return from, to
}

// frame reads record i of seg: its frame's bytes and offset. l.mu is held.
func (l *DeltaLog) frame(seg *deltaSeg, i int) ([]byte, int64, error) {
	from, to := seg.bytes(i, i+1)
	b := make([]byte, to-from)
	if _, err := seg.f.ReadAt(b, from); err != nil {
		return nil, from, fmt.Errorf("delta log: read %s: %w", seg.path, err)
	}
	return b, from, nil
}

// header reads the head of record i of seg. l.mu is held.
func (l *DeltaLog) header(seg *deltaSeg, i int) (frameView, error) {
	b, from, err := l.frame(seg, i)
	if err != nil {
		return frameView{}, err
	}
	v, _, ok := parseFrame(b)
	if !ok {
		return frameView{}, fmt.Errorf("delta log: %s: bad frame at %d", seg.path, from)
	}
	return v, nil
}

// firstFrom returns the first record at or above seq: its seq and date.
func (l *DeltaLog) FirstFrom(seq int64) (int64, time.Time, bool, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	seq = max(seq, l.floor+1)
	for _, seg := range l.segs {
		i, _ := seg.idx.search(seq)
		if i == seg.idx.len() {
			continue
		}
		v, err := l.header(seg, i)
		if err != nil {
			return 0, time.Time{}, false, err
		}
		return v.seq, time.UnixMicro(v.created).UTC(), true, nil
	}
	return 0, time.Time{}, false, nil
}

// firstDated returns the seq of the first record created at or after t.
func (l *DeltaLog) FirstDated(t time.Time) (int64, bool, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	at := t.UnixMicro()
	for _, seg := range l.segs {
		if seg.idx.len() == 0 || seg.lastDate < at {
			continue
		}
		for i, s := range seg.idx.all() {
			if s <= l.floor {
				continue
			}
			v, err := l.header(seg, i)
			if err != nil {
				return 0, false, err
			}
			if v.created >= at {
				return v.seq, true, nil
			}
		}
	}
	return 0, false, nil
}

// prune drops the records through top: whole segments are deleted, the
// rest are hidden by the floor.
func (l *DeltaLog) Prune(top int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.floor = max(l.floor, top)
	keep := l.segs[:0]
	var errs []error
	for i, seg := range l.segs {
		if seg.idx.len() > 0 && seg.idx.last() <= top && i < len(l.segs)-1 {
			errs = append(errs, seg.close(), os.Remove(seg.path), removeIndex(seg.path))
			continue
		}
		keep = append(keep, seg)
	}
	clear(l.segs[len(keep):])
	l.segs = keep
	return errors.Join(errs...)
}

// count is how many records the log keeps above its floor.
func (l *DeltaLog) Count() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	var n int64
	for _, seg := range l.segs {
		i, _ := seg.idx.search(l.floor + 1)
		n += int64(seg.idx.len() - i)
	}
	return n
}

// holds tells whether a record above the floor and at or below top may be
// kept.
func (l *DeltaLog) Holds(top int64) bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	for _, seg := range l.segs {
		if x := &seg.idx; x.len() > 0 && x.first() <= top && x.last() > l.floor {
			return true
		}
	}
	return false
}

// redact rewrites the records of seqs (those the log holds) as a delete
// leaves them (OpenDeltaLog's redacted), in place.
func (l *DeltaLog) Redact(seqs []int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, seq := range seqs {
		for _, seg := range l.segs {
			i, ok := seg.idx.search(seq)
			if !ok {
				continue
			}
			fr, from, err := l.frame(seg, i)
			if err != nil {
				return fmt.Errorf("delta log: redact %d: %w", seq, err)
			}
			v, _, ok := parseFrame(fr)
			if !ok {
				return fmt.Errorf("delta log: redact %d: bad frame", seq)
			}
			if v.flags&deltaRedacted != 0 {
				break
			}
			p, err := l.redacted(string(v.payload))
			if err != nil || len(p) > len(v.payload) {
				p = string(tornRedaction(v)) // the least that says it, padded below
			}
			if err := l.rewrite(seg, from, fr, []byte(p)); err != nil {
				return err
			}
			break
		}
	}
	return nil
}

// rewrite writes frame fr (at off in seg) again with payload p, padded with
// spaces to the old payload's length, flagged redacted: the payload first,
// then its head, so a crash between the two leaves a frame whose payload
// fails its check (finished at open, tornRedaction).
func (l *DeltaLog) rewrite(seg *deltaSeg, off int64, fr, p []byte) error {
	v, _, ok := parseFrame(fr)
	if !ok {
		return fmt.Errorf("delta log: rewrite at %d: bad frame", off)
	}
	start := len(fr) - len(v.payload)
	body := make([]byte, len(v.payload))
	n := copy(body, p)
	for i := n; i < len(body); i++ {
		body[i] = ' '
	}
	if _, err := seg.f.WriteAt(body, off+int64(start)); err != nil {
		return fmt.Errorf("delta log: redact: %w", err)
	}
	head := slices.Clone(fr[:start])
	head[28] |= deltaRedacted
	binary.LittleEndian.PutUint32(head[4:], crc32.Update(crc32.Checksum(head[:4], crcTable), crcTable, head[12:start]))
	binary.LittleEndian.PutUint32(head[8:], crc32.Checksum(body, crcTable))
	if _, err := seg.f.WriteAt(head, off); err != nil {
		return fmt.Errorf("delta log: redact: %w", err)
	}
	return nil
}

// tornRedaction is the payload of a redacted text delta made from its
// frame's head alone: what a delete leaves of it (shorter than any delta's
// own JSON, which holds all of it and more).
func tornRedaction(v frameView) []byte {
	b := []byte(`{"type":"conversation","seq":`)
	b = strconv.AppendInt(b, v.seq, 10)
	b = append(b, `,"id":`...)
	b = strconv.AppendQuote(b, v.id)
	b = append(b, `,"date":"`...)
	b = time.UnixMicro(v.created).UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","conversation_id":`...)
	b = strconv.AppendQuote(b, v.conv)
	b = append(b, `,"event":{"type":"redacted"}}`...)
	return b
}

// redactOrphans redacts the records whose conversation is not stored (a
// delete that committed in SQLite before its delta records were rewritten,
// then a crash). exists reports which of some conversation ids are stored.
func (l *DeltaLog) RedactOrphans(exists func([]string) (map[string]bool, error)) error {
	convs := l.openConvs
	l.openConvs = nil
	ids := make([]string, 0, len(convs))
	for c := range convs {
		ids = append(ids, c)
	}
	for len(ids) > 0 {
		chunk := ids[:min(len(ids), orphanChunk)]
		ids = ids[len(chunk):]
		have, err := exists(chunk)
		if err != nil {
			return err
		}
		for _, c := range chunk {
			if !have[c] {
				if err := l.Redact(convs[c]); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func (l *DeltaLog) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	var errs []error
	for _, seg := range l.segs {
		errs = append(errs, seg.close())
	}
	l.segs = nil
	return errors.Join(errs...)
}

// SetEpoch names the database's epoch once a new database has one (its
// segments are named after it).
func (l *DeltaLog) SetEpoch(epoch string) { l.epoch = epoch }

// Dir is the directory of the log's segments.
func (l *DeltaLog) Dir() string { return l.dir }

// Each calls fn with every record above the floor, in seq order (plain
// mode's fold into the database).
func (l *DeltaLog) Each(fn func(Delta) error) error {
	l.mu.RLock()
	defer l.mu.RUnlock()
	for _, seg := range l.segs {
		if seg.idx.len() == 0 {
			continue
		}
		b := make([]byte, seg.end)
		if _, err := seg.f.ReadAt(b, 0); err != nil {
			return fmt.Errorf("delta log: read %s: %w", seg.path, err)
		}
		for len(b) > 0 {
			v, n, ok := parseFrame(b)
			if !ok {
				return fmt.Errorf("delta log: %s: bad frame at %d", seg.path, seg.end-int64(len(b)))
			}
			b = b[n:]
			if v.seq <= l.floor {
				continue
			}
			d := Delta{Seq: v.seq, Created: time.UnixMicro(v.created).UTC(), Conv: strings.Clone(v.conv), Owner: strings.Clone(l.ownerOf(&v)), ID: strings.Clone(v.id), JSON: slices.Clone(v.payload)}
			if err := fn(d); err != nil {
				return err
			}
		}
	}
	return nil
}
