package eventlog

import (
	"encoding/binary"
	"iter"
	"math"
	mbits "math/bits"
	"slices"
)

// segIndex is a delta log segment's index: each record's seq and the
// offset of its frame, in seq order. The segment appends go to keeps them
// as two slices (12 bytes a record); a segment the writer has left is
// sealed (seal): its index never changes again (a redaction rewrites
// frames in place), so it is packed in blocks of packBlock records, each
// a head (packHead: the block's first seq and offset) and its later
// records' steps of seq and offset, each less the block's least, in as
// few bits as the block's largest needs. Seqs step by 1 to 3 and offsets
// by a frame's length (100 to 300 bytes a text delta), so a record costs
// 1.5 to 2 bytes: the slices' 12 bytes kept for every record of the
// retention were the live heap's growth in the soak (issue 54). A look-up
// binary searches the heads and sums steps within one block.
//
// Even packed, the bytes of every segment of the retention grew the heap
// by some 1.6 a text delta, doubled by GOGC in resident memory: so the
// delta log writes them to a file beside the segment and reads them
// mapped (segfile.go), pages the kernel may drop, as Kafka keeps its
// .index files; the heads are kept as bytes for it, decoded on access.
type segIndex struct {
	// The active form.
	seqs []int64
	offs []uint32
	// The sealed form.
	packed bool
	heads  []byte // packHeadSize bytes a block: its packHead (putHead)
	data   []byte
	m      []byte // the mapping heads and data lie in; nil: Go's memory
	n      int
	top    int64 // the last seq
}

// packBlock is how many records a head of a sealed index covers: a look-up
// sums up to packBlock-1 steps; the heads cost packHeadSize/packBlock bytes a record.
const packBlock = 64

// packHead is the head of a block of a sealed index: its first record's
// seq and offset; then, for each later record, seq step − 1 in ws bits and
// offset step − base in wo bits, from bit pos of data. A block of text
// deltas (seq steps of 1 to 3, frames within 255 bytes of each other)
// takes 2 + 8 bits a record.
type packHead struct {
	seq    int64
	off    uint32
	pos    uint32 // a bit of data
	base   uint32 // the block's least offset step: its least frame
	ws, wo uint8
}

// packHeadSize is a packHead's bytes in a sealed index's heads: seq, off,
// pos and base, little endian, then ws and wo.
const packHeadSize = 22

// putHead appends h's bytes to b.
func putHead(b []byte, h packHead) []byte {
	b = binary.LittleEndian.AppendUint64(b, uint64(h.seq))
	b = binary.LittleEndian.AppendUint32(b, h.off)
	b = binary.LittleEndian.AppendUint32(b, h.pos)
	b = binary.LittleEndian.AppendUint32(b, h.base)
	return append(b, h.ws, h.wo)
}

// head decodes the head of block b of a sealed index.
func (x *segIndex) head(b int) packHead {
	p := x.heads[b*packHeadSize : (b+1)*packHeadSize]
	return packHead{seq: int64(binary.LittleEndian.Uint64(p)), off: binary.LittleEndian.Uint32(p[8:]),
		pos: binary.LittleEndian.Uint32(p[12:]), base: binary.LittleEndian.Uint32(p[16:]), ws: p[20], wo: p[21]}
}

// headSeq is the first seq of block b of a sealed index (a search's probe:
// the rest of the head is not decoded).
func (x *segIndex) headSeq(b int) int64 {
	return int64(binary.LittleEndian.Uint64(x.heads[b*packHeadSize:]))
}

// blocks is how many blocks a sealed index holds.
func (x *segIndex) blocks() int { return len(x.heads) / packHeadSize }

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
		return x.headSeq(0)
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
	c := x.cursorAt(i)
	oi := c.off
	for range j - i {
		c.next()
	}
	return oi, c.off
}

// at decodes record i of a sealed index.
func (x *segIndex) at(i int) (int64, uint32) {
	if uint(i) >= uint(x.n) {
		panic("eventlog: segIndex: index out of range")
	}
	c := x.cursorAt(i)
	return c.seq, c.off
}

// search finds seq as slices.BinarySearch does: the index of the first
// record at or above it, and whether that record is seq's.
func (x *segIndex) search(seq int64) (int, bool) {
	if !x.sealed() {
		return slices.BinarySearch(x.seqs, seq)
	}
	if x.n == 0 || seq <= x.headSeq(0) {
		return 0, x.n > 0 && seq == x.headSeq(0)
	}
	if seq > x.top {
		return x.n, false
	}
	// The last block whose first seq is at or below seq holds its place
	// (or ends just before it).
	lo, hi := 0, x.blocks()
	for hi-lo > 1 {
		m := int(uint(lo+hi) >> 1)
		if x.headSeq(m) <= seq {
			lo = m
		} else {
			hi = m
		}
	}
	c := x.block(lo)
	i, end := lo*packBlock, min(lo*packBlock+packBlock, x.n)
	for {
		if c.seq >= seq {
			return i, c.seq == seq
		}
		if i++; i == end {
			return i, false
		}
		c.next()
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
		for b := range x.blocks() {
			c := x.block(b)
			i, end := b*packBlock, min(b*packBlock+packBlock, x.n)
			for {
				if !yield(i, c.seq) {
					return
				}
				if i++; i == end {
					break
				}
				c.next()
			}
		}
	}
}

// cursor walks the records of one block of a sealed index: seq and off
// are the current record's.
type cursor struct {
	data   []byte
	seq    int64
	off    uint32
	p      uint // the bit where the next record's fields start
	base   uint32
	ws, w  uint   // the seq field's width, both fields'
	ms, mo uint64 // their masks
}

// block is a cursor at the first record of block b.
func (x *segIndex) block(b int) cursor {
	h := x.head(b)
	return cursor{data: x.data, seq: h.seq, off: h.off, p: uint(h.pos), base: h.base,
		ws: uint(h.ws), w: uint(h.ws + h.wo), ms: 1<<h.ws - 1, mo: 1<<h.wo - 1}
}

// cursorAt is a cursor at record i (i < n) of a sealed index.
func (x *segIndex) cursorAt(i int) cursor {
	c := x.block(i / packBlock)
	for range i % packBlock {
		c.next()
	}
	return c
}

// next moves c to the next record of its block: both fields with one load
// when they lie within 8 bytes (a block of text deltas: always).
func (c *cursor) next() {
	i, s := c.p>>3, c.p&7
	if s+c.w <= 64 {
		v := binary.LittleEndian.Uint64(c.data[i:]) >> s
		c.seq += 1 + int64(v&c.ms)
		c.off += c.base + uint32(v>>c.ws&c.mo)
	} else {
		c.seq += 1 + int64(bitsAt(c.data, c.p, uint8(c.ws)))
		c.off += c.base + uint32(bitsAt(c.data, c.p+c.ws, uint8(c.w-c.ws)))
	}
	c.p += c.w
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
	x := segIndex{packed: true, heads: make([]byte, 0, (n+packBlock-1)/packBlock*packHeadSize), n: n}
	bits := uint(0)
	for b := 0; b < n; b += packBlock {
		h := packHead{seq: seqs[b], off: offs[b], pos: uint32(bits), base: math.MaxUint32}
		end := min(b+packBlock, n)
		var ds uint64
		var do uint32
		for i := b + 1; i < end; i++ {
			ds = max(ds, uint64(seqs[i]-seqs[i-1]-1))
			h.base = min(h.base, offs[i]-offs[i-1])
			do = max(do, offs[i]-offs[i-1])
		}
		if end-b > 1 {
			do -= h.base
		} else {
			h.base = 0
		}
		h.ws, h.wo = uint8(mbits.Len64(ds)), uint8(mbits.Len32(do))
		bits += uint(end-b-1) * uint(h.ws+h.wo)
		x.heads = putHead(x.heads, h)
	}
	// Exactly the bytes it needs (slack would be held as long as the
	// segment), and 8 more: bitsAt loads 8 bytes, then one.
	x.data = make([]byte, (bits+7)/8+9)
	var w uint
	for b := range x.blocks() {
		h := x.head(b)
		for i := b*packBlock + 1; i < min(b*packBlock+packBlock, n); i++ {
			putBits(x.data, &w, uint64(seqs[i]-seqs[i-1]-1), h.ws)
			putBits(x.data, &w, uint64(offs[i]-offs[i-1]-h.base), h.wo)
		}
	}
	if n > 0 {
		x.top = seqs[n-1]
	}
	return x
}

// size is the bytes of Go's memory x's slices hold (a mapped file's pages
// are not).
func (x *segIndex) size() int {
	n := cap(x.seqs)*8 + cap(x.offs)*4
	if x.m == nil || !mapsFiles {
		n += cap(x.heads) + cap(x.data)
	}
	return n
}

// putBits writes the low w bits of v at bit *p of b (zero there) and moves
// *p past them.
func putBits(b []byte, p *uint, v uint64, w uint8) {
	for w > 0 {
		i, s := *p>>3, uint8(*p&7)
		k := min(8-s, w)
		b[i] |= byte(v << s)
		v >>= k
		w -= k
		*p += uint(k)
	}
}

// bitsAt reads w bits (w ≤ 64) at bit p of b (at least 9 bytes from p's
// byte on): one 8-byte load, and one byte more when they straddle it.
func bitsAt(b []byte, p uint, w uint8) uint64 {
	i, s := p>>3, p&7
	v := binary.LittleEndian.Uint64(b[i:]) >> s
	if s+uint(w) > 64 {
		v |= uint64(b[i+8]) << (64 - s)
	}
	return v & (1<<w - 1)
}
