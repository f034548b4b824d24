package eventlog

import (
	"encoding/binary"
	"iter"
	"slices"
)

// segIndex is a delta log segment's index: each record's seq and the
// offset of its frame, in seq order. The segment appends go to keeps them
// as two slices (12 bytes a record); a segment the writer has left is
// sealed (seal): its index never changes again (a redaction rewrites
// frames in place), so it is packed in blocks of packBlock records, each
// a head (the block's first seq and offset, where its deltas start in
// data) and then, per later record, uvarint(seq − previous seq) and
// uvarint(offset − previous offset). Seqs step by 1 to 3 and offsets by a
// frame's length (100 to 300 bytes a text delta), so a record costs 3 to
// 4 bytes: the slices' 12 bytes kept for every record of the retention
// were the live heap's growth in the soak (issue 54). A look-up binary
// searches the heads and decodes within one block.
type segIndex struct {
	// The active form.
	seqs []int64
	offs []uint32
	// The sealed form.
	packed bool
	heads  []packHead
	data   []byte
	n      int
	top    int64 // the last seq
}

// packBlock is how many records a head of a sealed index covers: a look-up
// decodes up to packBlock-1 pairs of varints; the heads cost 16/packBlock
// bytes a record.
const packBlock = 64

// packHead is the head of a block of a sealed index: its first record's
// seq and offset, and where the deltas of its later records start in data.
type packHead struct {
	seq int64
	off uint32
	pos uint32
}

// sealed tells whether x is packed.
func (x *segIndex) sealed() bool { return x.packed }

// len is how many records x holds.
func (x *segIndex) len() int {
	if x.sealed() {
		return x.n
	}
	return len(x.seqs)
}

// add appends a record (active form only; seq above every other).
func (x *segIndex) add(seq int64, off uint32) {
	x.seqs = append(x.seqs, seq)
	x.offs = append(x.offs, off)
}

// cut keeps the first n records (active form only).
func (x *segIndex) cut(n int) {
	x.seqs, x.offs = x.seqs[:n], x.offs[:n]
}

// first is the first seq (x not empty).
func (x *segIndex) first() int64 {
	if x.sealed() {
		return x.heads[0].seq
	}
	return x.seqs[0]
}

// last is the last seq (x not empty).
func (x *segIndex) last() int64 {
	if x.sealed() {
		return x.top
	}
	return x.seqs[len(x.seqs)-1]
}

// seq is the seq of record i.
func (x *segIndex) seq(i int) int64 {
	if !x.sealed() {
		return x.seqs[i]
	}
	s, _ := x.at(i)
	return s
}

// off is the offset of record i's frame.
func (x *segIndex) off(i int) uint32 {
	if !x.sealed() {
		return x.offs[i]
	}
	_, o := x.at(i)
	return o
}

// offs2 is the offsets of records i and j (i < j ≤ len; j == len: 0), with
// one decode when a sealed index holds both in one block: where a span of
// records, or one record, lies in the file.
func (x *segIndex) offs2(i, j int) (uint32, uint32) {
	if !x.sealed() {
		if j == len(x.offs) {
			return x.offs[i], 0
		}
		return x.offs[i], x.offs[j]
	}
	if j == x.n || j/packBlock != i/packBlock {
		var oj uint32
		if j < x.n {
			oj = x.off(j)
		}
		return x.off(i), oj
	}
	if uint(i) >= uint(j) {
		panic("eventlog: segIndex: offs2 of an empty range")
	}
	h := x.heads[j/packBlock]
	o, p := h.off, int(h.pos)
	var oi uint32
	for k := j / packBlock * packBlock; k < j; k++ {
		if k == i {
			oi = o
		}
		var do uint64
		_, p = uvarint(x.data, p)
		do, p = uvarint(x.data, p)
		o += uint32(do)
	}
	return oi, o
}

// at decodes record i of a sealed index.
func (x *segIndex) at(i int) (int64, uint32) {
	if uint(i) >= uint(x.n) {
		panic("eventlog: segIndex: index out of range")
	}
	h := x.heads[i/packBlock]
	s, o, p := h.seq, h.off, int(h.pos)
	for range i % packBlock {
		var ds, do uint64
		ds, p = uvarint(x.data, p)
		do, p = uvarint(x.data, p)
		s += int64(ds)
		o += uint32(do)
	}
	return s, o
}

// search finds seq as slices.BinarySearch does: the index of the first
// record at or above it, and whether that record is seq's.
func (x *segIndex) search(seq int64) (int, bool) {
	if !x.sealed() {
		return slices.BinarySearch(x.seqs, seq)
	}
	if x.n == 0 || seq <= x.heads[0].seq {
		return 0, x.n > 0 && seq == x.heads[0].seq
	}
	if seq > x.top {
		return x.n, false
	}
	// The last block whose first seq is at or below seq holds its place
	// (or ends just before it).
	lo, hi := 0, len(x.heads)
	for hi-lo > 1 {
		m := int(uint(lo+hi) >> 1)
		if x.heads[m].seq <= seq {
			lo = m
		} else {
			hi = m
		}
	}
	h := x.heads[lo]
	i, end := lo*packBlock, min(lo*packBlock+packBlock, x.n)
	s, p := h.seq, int(h.pos)
	for {
		if s >= seq {
			return i, s == seq
		}
		if i++; i == end {
			return i, false
		}
		var ds uint64
		ds, p = uvarint(x.data, p)
		_, p = uvarint(x.data, p)
		s += int64(ds)
	}
}

// all yields each record's index and seq, in order.
func (x *segIndex) all() iter.Seq2[int, int64] {
	return func(yield func(int, int64) bool) {
		if !x.sealed() {
			for i, s := range x.seqs {
				if !yield(i, s) {
					return
				}
			}
			return
		}
		for b, h := range x.heads {
			i, end := b*packBlock, min(b*packBlock+packBlock, x.n)
			s, p := h.seq, int(h.pos)
			for {
				if !yield(i, s) {
					return
				}
				if i++; i == end {
					break
				}
				var ds uint64
				ds, p = uvarint(x.data, p)
				_, p = uvarint(x.data, p)
				s += int64(ds)
			}
		}
	}
}

// seal packs x for good: nothing is added to it after.
func (x *segIndex) seal() { *x = x.sealCopy() }

// sealCopy is x sealed (x itself unchanged, so readers may read it while
// the copy is made).
func (x *segIndex) sealCopy() segIndex {
	if x.sealed() {
		return *x
	}
	return pack(x.seqs, x.offs)
}

// pack is the sealed index of seqs (ascending) and offs (ascending).
func pack(seqs []int64, offs []uint32) segIndex {
	n := len(seqs)
	size := 0
	for i := 1; i < n; i++ {
		if i%packBlock != 0 {
			size += uvarintLen(uint64(seqs[i]-seqs[i-1])) + uvarintLen(uint64(offs[i]-offs[i-1]))
		}
	}
	// Exactly the bytes it needs: slack would be held as long as the
	// segment.
	x := segIndex{packed: true, heads: make([]packHead, 0, (n+packBlock-1)/packBlock), data: make([]byte, 0, size), n: n}
	for i, s := range seqs {
		if i%packBlock == 0 {
			x.heads = append(x.heads, packHead{seq: s, off: offs[i], pos: uint32(len(x.data))})
			continue
		}
		x.data = binary.AppendUvarint(x.data, uint64(s-seqs[i-1]))
		x.data = binary.AppendUvarint(x.data, uint64(offs[i]-offs[i-1]))
	}
	if n > 0 {
		x.top = seqs[n-1]
	}
	return x
}

// size is the bytes of memory x's slices hold.
func (x *segIndex) size() int {
	return cap(x.seqs)*8 + cap(x.offs)*4 + cap(x.heads)*16 + cap(x.data)
}

// uvarintLen is the length of v's uvarint (binary.AppendUvarint's).
func uvarintLen(v uint64) int {
	n := 1
	for ; v >= 0x80; v >>= 7 {
		n++
	}
	return n
}

// uvarint decodes the uvarint at b[p:] (binary.Uvarint without its checks:
// the data is the index's own): its value and the position after it. A
// one-byte delta, the most common, returns at once.
func uvarint(b []byte, p int) (uint64, int) {
	c := b[p]
	if c < 0x80 {
		return uint64(c), p + 1
	}
	v := uint64(c & 0x7f)
	for shift := uint(7); ; shift += 7 {
		p++
		c = b[p]
		if c < 0x80 {
			return v | uint64(c)<<shift, p + 1
		}
		v |= uint64(c&0x7f) << shift
	}
}
