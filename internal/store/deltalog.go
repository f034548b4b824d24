package store

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
// (append_text, nothing else to apply) runs no SQLite transaction. The
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
// both and merges them by seq (mergeLogs), cut at the seq committed when
// it began (Store.durable), so that a commit landing between its two reads
// cannot leave a hole.
//
// Files: DIR/EPOCH-FIRSTSEQ.log, DIR = the database's path + "-deltas",
// EPOCH the database's (files of another epoch belong to a database that
// is gone: they are ignored). A segment holds records in seq order; the
// writer starts a new one past deltaSegMax. Frame (little endian):
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
// In memory: each segment's seqs and offsets (12 bytes a record), its
// lowest and highest event id (EventSeq scans only segments whose range
// holds the id) and its latest date (Prune).

const (
	deltaSegMax    = 8 << 20 // bytes: a new segment past it
	deltaFixed     = 29      // bytes before the conversation id
	deltaCommitEnd = 1 << 0
	deltaRedacted  = 1 << 1
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// deltaRec is one text delta for the delta log.
type deltaRec struct {
	seq             int64
	created         time.Time
	conv, owner, id string
	json            []byte
	flags           byte
}

// deltaSeg is one segment file.
type deltaSeg struct {
	path         string
	f            *os.File
	seqs         []int64  // ascending
	offs         []uint32 // where each record's frame starts
	end          int64    // bytes of complete records
	minID, maxID string
	lastDate     int64 // unix µs, the latest created
}

// deltaLog is the store's delta log. The writer appends; readers take mu
// for reading to find records and read them; a redaction or Prune takes it
// for writing.
type deltaLog struct {
	dir, epoch string
	log        *slog.Logger
	mu         sync.RWMutex
	segs       []*deltaSeg
	floor      int64  // seqs through it are pruned
	buf        []byte // the writer's
	// At open: the conversations of records not redacted, for
	// redactOrphans.
	openConvs map[string][]int64
	// fix: the owners of records whose frame names a wrong one
	// (event_owner_fix, owner.go's repairOwners); read under mu.
	fix map[int64]string
}

// openDeltaLog opens (or creates) the delta log of the database at path,
// loading every segment of epoch and cutting the last after its last
// complete commit. epoch "" (a database not made yet) loads nothing.
func openDeltaLog(path, epoch string, log *slog.Logger) (*deltaLog, error) {
	l := &deltaLog{dir: path + "-deltas", epoch: epoch, log: log, openConvs: map[string][]int64{}}
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
			l.close()
			return nil, err
		}
		if len(seg.seqs) == 0 && i < len(files)-1 {
			_ = seg.f.Close()
			continue
		}
		l.segs = append(l.segs, seg)
	}
	return l, nil
}

// load reads a segment's frames into its index. In the last segment
// (last) a torn or uncommitted tail is cut off; in an earlier one a bad
// frame ends what is read of it (logged).
func (l *deltaLog) load(path string, last bool) (*deltaSeg, error) {
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
			committed, end = len(seg.seqs), int64(off)
		}
	}
	if !last {
		committed, end = len(seg.seqs), int64(off)
	}
	// An unfinished commit was never acknowledged: it is cut.
	seg.seqs, seg.offs, seg.end = seg.seqs[:committed], seg.offs[:committed], end
	for i, c := range convs[:committed] {
		if c != "" {
			l.openConvs[c] = append(l.openConvs[c], seg.seqs[i])
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
	seg.seqs = append(seg.seqs, v.seq)
	seg.offs = append(seg.offs, off)
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
func appendFrame(b []byte, r *deltaRec) []byte {
	start := len(b)
	b = append(b, make([]byte, deltaFixed)...)
	fr := b[start:]
	binary.LittleEndian.PutUint64(fr[12:], uint64(r.seq))
	binary.LittleEndian.PutUint64(fr[20:], uint64(r.created.UnixMicro()))
	fr[28] = r.flags
	for _, s := range [3]string{r.conv, r.owner, r.id} {
		b = binary.LittleEndian.AppendUint16(b, uint16(len(s)))
		b = append(b, s...)
	}
	head := len(b)
	b = append(b, r.json...)
	fr = b[start:]
	binary.LittleEndian.PutUint32(fr, uint32(len(fr)))
	binary.LittleEndian.PutUint32(fr[4:], crc32.Update(crc32.Checksum(fr[:4], crcTable), crcTable, fr[12:head-start]))
	binary.LittleEndian.PutUint32(fr[8:], crc32.Checksum(fr[head-start:], crcTable))
	return b
}

// fits tells whether rec can be a frame (each string's length is a u16).
func (r *deltaRec) fits() bool {
	return len(r.conv) <= 0xffff && len(r.owner) <= 0xffff && len(r.id) <= 0xffff && len(r.json) < 1<<30
}

// append writes recs (ascending seqs, above every stored one) as one
// commit, with one write, and indexes them. On an error nothing of them
// stays in the file.
func (l *deltaLog) append(recs []deltaRec) error {
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
	if seg == nil || (seg.end > 0 && seg.end+int64(len(buf)) > deltaSegMax) {
		var err error
		if seg, err = l.create(recs[0].seq); err != nil {
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
		seg.add(frameView{seq: r.seq, created: r.created.UnixMicro(), id: r.id}, uint32(off))
		off += int64(len(r.conv) + len(r.owner) + len(r.id) + len(r.json) + deltaFixed + 6)
	}
	seg.end = off
	l.mu.Unlock()
	return nil
}

// active is the segment appends go to (writer only; nil before the first).
func (l *deltaLog) active() *deltaSeg {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if len(l.segs) == 0 {
		return nil
	}
	return l.segs[len(l.segs)-1]
}

func (l *deltaLog) create(first int64) (*deltaSeg, error) {
	path := filepath.Join(l.dir, fmt.Sprintf("%s-%020d.log", l.epoch, first))
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("delta log: %w", err)
	}
	seg := &deltaSeg{path: path, f: f}
	l.mu.Lock()
	l.segs = append(l.segs, seg)
	l.mu.Unlock()
	return seg, nil
}

// head is the highest seq in the log (0: none).
func (l *deltaLog) head() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	for i := len(l.segs) - 1; i >= 0; i-- {
		if s := l.segs[i].seqs; len(s) > 0 {
			return s[len(s)-1]
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
func (l *deltaLog) read(after, through int64, limit int, owner string) ([]agent.Encoded, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	after = max(after, l.floor)
	var spans []span
	n := 0
	for _, seg := range l.segs {
		if len(seg.seqs) == 0 || seg.seqs[len(seg.seqs)-1] <= after {
			continue
		}
		if seg.seqs[0] > through || (limit > 0 && n >= limit) {
			break
		}
		i, _ := slices.BinarySearch(seg.seqs, after+1)
		j := len(seg.seqs)
		if through < seg.seqs[j-1] {
			j, _ = slices.BinarySearch(seg.seqs, through+1)
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
func (l *deltaLog) bySeqs(seqs []int64, owner string) ([]agent.Encoded, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	var out []agent.Encoded
	k := 0
	for _, seg := range l.segs {
		if k == len(seqs) {
			break
		}
		if len(seg.seqs) == 0 {
			continue
		}
		for k < len(seqs) && seqs[k] < seg.seqs[0] {
			k++
		}
		// Runs of consecutive records read as one span.
		cur := span{seg: seg, i: -1}
		for ; k < len(seqs) && seqs[k] <= seg.seqs[len(seg.seqs)-1]; k++ {
			if seqs[k] <= l.floor {
				continue
			}
			i, ok := slices.BinarySearch(seg.seqs, seqs[k])
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
func (l *deltaLog) readSpan(out []agent.Encoded, sp span, owner string, limit int) ([]agent.Encoded, error) {
	seg := sp.seg
	from := int64(seg.offs[sp.i])
	to := seg.end
	if sp.j < len(seg.offs) {
		to = int64(seg.offs[sp.j])
	}
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
		o := v.owner
		if len(l.fix) > 0 {
			if f, ok := l.fix[v.seq]; ok {
				o = f
			}
		}
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
func (l *deltaLog) seqOf(id string) (int64, bool, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	for i := len(l.segs) - 1; i >= 0; i-- {
		seg := l.segs[i]
		if len(seg.seqs) == 0 || id < seg.minID || id > seg.maxID {
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

// frame reads record i of seg: its frame's bytes and offset. l.mu is held.
func (l *deltaLog) frame(seg *deltaSeg, i int) ([]byte, int64, error) {
	from := int64(seg.offs[i])
	to := seg.end
	if i+1 < len(seg.offs) {
		to = int64(seg.offs[i+1])
	}
	b := make([]byte, to-from)
	if _, err := seg.f.ReadAt(b, from); err != nil {
		return nil, from, fmt.Errorf("delta log: read %s: %w", seg.path, err)
	}
	return b, from, nil
}

// header reads the head of record i of seg. l.mu is held.
func (l *deltaLog) header(seg *deltaSeg, i int) (frameView, error) {
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
func (l *deltaLog) firstFrom(seq int64) (int64, time.Time, bool, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	seq = max(seq, l.floor+1)
	for _, seg := range l.segs {
		i, _ := slices.BinarySearch(seg.seqs, seq)
		if i == len(seg.seqs) {
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
func (l *deltaLog) firstDated(t time.Time) (int64, bool, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	at := t.UnixMicro()
	for _, seg := range l.segs {
		if len(seg.seqs) == 0 || seg.lastDate < at {
			continue
		}
		for i, s := range seg.seqs {
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
func (l *deltaLog) prune(top int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.floor = max(l.floor, top)
	keep := l.segs[:0]
	var errs []error
	for i, seg := range l.segs {
		if len(seg.seqs) > 0 && seg.seqs[len(seg.seqs)-1] <= top && i < len(l.segs)-1 {
			errs = append(errs, seg.f.Close(), os.Remove(seg.path))
			continue
		}
		keep = append(keep, seg)
	}
	clear(l.segs[len(keep):])
	l.segs = keep
	return errors.Join(errs...)
}

// count is how many records the log keeps above its floor.
func (l *deltaLog) count() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	var n int64
	for _, seg := range l.segs {
		i, _ := slices.BinarySearch(seg.seqs, l.floor+1)
		n += int64(len(seg.seqs) - i)
	}
	return n
}

// holds tells whether a record above the floor and at or below top may be
// kept.
func (l *deltaLog) holds(top int64) bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	for _, seg := range l.segs {
		if len(seg.seqs) > 0 && seg.seqs[0] <= top && seg.seqs[len(seg.seqs)-1] > l.floor {
			return true
		}
	}
	return false
}

// redact rewrites the records of seqs (those the log holds) as a delete
// leaves them (redactedPayload), in place.
func (l *deltaLog) redact(seqs []int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, seq := range seqs {
		for _, seg := range l.segs {
			i, ok := slices.BinarySearch(seg.seqs, seq)
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
			p, err := redactedPayload(string(v.payload))
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
func (l *deltaLog) rewrite(seg *deltaSeg, off int64, fr, p []byte) error {
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
func (l *deltaLog) redactOrphans(exists func([]string) (map[string]bool, error)) error {
	convs := l.openConvs
	l.openConvs = nil
	ids := make([]string, 0, len(convs))
	for c := range convs {
		ids = append(ids, c)
	}
	for len(ids) > 0 {
		chunk := ids[:min(len(ids), idChunk)]
		ids = ids[len(chunk):]
		have, err := exists(chunk)
		if err != nil {
			return err
		}
		for _, c := range chunk {
			if !have[c] {
				if err := l.redact(convs[c]); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func (l *deltaLog) close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	var errs []error
	for _, seg := range l.segs {
		errs = append(errs, seg.f.Close())
	}
	l.segs = nil
	return errors.Join(errs...)
}

// mergeLogs merges two seq-ordered reads of the log, from agent_event and
// from the delta log, through seq through (readEnd: a read that stopped at
// a bound vouches only for seqs up to its last).
func mergeLogs(a, b []agent.Encoded, through int64) []agent.Encoded {
	out := make([]agent.Encoded, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		var e agent.Encoded
		if j == len(b) || (i < len(a) && a[i].Seq < b[j].Seq) {
			e = a[i]
			i++
		} else {
			e = b[j]
			j++
		}
		if e.Seq > through {
			break
		}
		out = append(out, e)
	}
	return out
}

// commitSide commits, outside SQLite, the requests of batch that need no
// more than the delta log (sideable), as one group commit, publishes them
// and answers them; it returns the others, for a transaction. If the
// append fails, every request goes to the transaction.
func (s *Store) commitSide(batch []*request) []*request {
	var side, rest []*request
	room := &s.sideRoom
	clear(room.conv)
	clear(room.owner)
	for _, r := range batch {
		if s.sideable(r, room) {
			side = append(side, r)
		} else {
			rest = append(rest, r)
		}
	}
	if len(side) == 0 {
		return batch
	}
	evs, err := s.applySide(side)
	if err != nil {
		s.log.Error("delta_log_append", "err", err)
		return batch
	}
	s.emit(evs, side)
	for _, r := range side {
		r.done <- nil
	}
	return rest
}

// sideRoom counts a commit's deferred index entries (see sideable), by
// conversation and by owner; the writer reuses its maps from commit to
// commit.
type sideRoom struct {
	conv, owner map[string]int
}

func (r *sideRoom) add(cid, owner string, n int) {
	if r.conv == nil {
		r.conv, r.owner = map[string]int{}, map[string]int{}
	}
	r.conv[cid] += n
	if owner != "" {
		r.owner[owner] += n
	}
}

// sideable reports whether every record of r is a text delta alone whose
// owner the writer knows and whose index entries can wait (convIndex), and
// counts them in room if so.
func (s *Store) sideable(r *request, room *sideRoom) bool {
	if !isLight(r) {
		return false
	}
	var mine sideRoom // r's own, until r is taken; only if r has several records
	for _, rec := range r.recs {
		cid := rec.Event.ConversationID
		if !isDelta(rec) || cid == "" || !textOK(rec.Event.ID) || len(rec.Event.ID) > 0xffff || len(cid) > 0xffff {
			return false
		}
		owner, ok := s.owners[cid]
		if !ok {
			return false
		}
		if len(s.convIx.stored(cid))+room.conv[cid]+mine.conv[cid] >= convPendingMax-2 {
			return false
		}
		if owner != "" && len(s.ownerIx.stored(owner))+room.owner[owner]+mine.owner[owner] >= convPendingMax-2 {
			return false
		}
		if len(r.recs) > 1 {
			mine.add(cid, owner, 1)
		}
	}
	for _, rec := range r.recs {
		cid := rec.Event.ConversationID
		room.add(cid, s.owners[cid], 1)
	}
	return true
}

// applySide gives batch's records their seqs, encodes them and appends them
// to the delta log; the conversation and owner indexes defer their entries
// as for any text delta. An event repeated within the batch gets the seq of
// its first. On an error nothing is committed and the seqs are cleared.
func (s *Store) applySide(batch []*request) ([]agent.Encoded, error) {
	now := s.now()
	seq := s.lastSeq
	recs, byConv, byOwner := s.sideRecs[:0], s.sideConv[:0], s.sideOwner[:0]
	defer func() { // no payload nor id kept alive
		clear(recs)
		clear(byConv)
		clear(byOwner)
		s.sideRecs, s.sideConv, s.sideOwner = recs[:0], byConv[:0], byOwner[:0]
	}()
	n := 0
	for _, r := range batch {
		n += len(r.recs)
	}
	evs := make([]agent.Encoded, 0, n)
	seen := s.sideSeen
	clear(seen)
	undo := func(err error) ([]agent.Encoded, error) {
		for _, r := range batch {
			for _, rec := range r.recs {
				setSeq(rec, 0)
			}
		}
		return nil, err
	}
	for _, r := range batch {
		for _, rec := range r.recs {
			ev := &rec.Event
			if have, ok := seen[ev.ID]; ok {
				setSeq(rec, have)
				continue
			}
			if err := checkRecordText(rec); err != nil {
				return undo(err)
			}
			seq++
			if ev.Date.IsZero() {
				ev.Date = now
			}
			setSeq(rec, seq)
			enc, err := agent.EncodeRef(ev)
			if err != nil {
				return undo(agent.Errorf(agent.CodeBadRequest, "event %s: %v", ev.ID, err))
			}
			owner := s.owners[ev.ConversationID]
			ev.Owner, enc.Owner = owner, owner
			// Deferred (sideable made room), once the append succeeds.
			byConv = append(byConv, deferEntry{ev.ConversationID, seq})
			if owner != "" {
				byOwner = append(byOwner, deferEntry{owner, seq})
			}
			recs = append(recs, deltaRec{seq: seq, created: now, conv: ev.ConversationID, owner: owner, id: ev.ID, json: enc.JSON})
			evs = append(evs, enc)
			if seen == nil {
				seen = make(map[string]int64, 64)
				s.sideSeen = seen
			}
			seen[ev.ID] = seq
		}
	}
	if err := s.side.append(recs); err != nil {
		return undo(err)
	}
	s.convIx.deferAll(byConv)
	s.ownerIx.deferAll(byOwner)
	s.lastSeq = seq
	s.durable.Store(seq)
	return evs, nil
}
