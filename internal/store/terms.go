package store

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
)

// The keyword ranking of PostgreSQL from memory (KeywordChunks).
//
// The query that ranks every match by ts_rank over its tsvector reads the
// row of every match: ~8,600 rows on ~7,900 heap pages of file_chunk for
// three words at 100k chunks, a table (260 MB) twice the default
// shared_buffers (docs/BENCHMARKS.md, knowledge search). No layout of the
// rows fits: a chunk's tsvector alone is ~2 kB (1.3 kB without its
// positions), and a GIN index has no index-only scans. So a processed
// file's tsvectors are read once into a posting list in memory (vecCache,
// on the same terms as its vectors: a processed file's chunks never
// change), ts_rank is computed from it exactly as PostgreSQL computes it,
// and only the best limit rows are read.

// tsWeights are ts_rank's default weights of D, C, B and A as float4
// (tsrank.c's weights).
var tsWeights = [4]float32{0.1, 0.2, 0.4, 1.0}

// termPart is the part of one lexeme of a chunk in ts_rank's sum
// (tsrank.c's calc_rank_or, normalization 0), before its division by
// 1.64493406685: weights are the weights of its positions in order
// (a lexeme without positions: one of weight D). Float arithmetic as C's
// on float4.
func termPart(weights []uint8) float32 {
	var resj float32
	wjm, jm := float32(-1), 0
	for j, w := range weights {
		x := tsWeights[w]
		resj = float32(resj + float32(x/float32((j+1)*(j+1))))
		if x > wjm {
			wjm, jm = x, j
		}
	}
	return float32(float32(wjm+resj) - float32(wjm/float32((jm+1)*(jm+1))))
}

// addTerm is calc_rank_or's step: res (float4) plus a part divided in
// double precision, rounded to float4.
func addTerm(res, part float32) float32 {
	return float32(float64(res) + float64(part)/1.64493406685)
}

// termSpan is a lexeme's postings in fileTerms.
type termSpan struct{ off, n uint32 }

// fileTerms are one file's chunks' lexemes as postings: a lexeme's are
// postings[off:off+n], by chunk.
type fileTerms struct {
	ids      []int64 // the chunks', by index
	terms    map[string]termSpan
	postings []uint32  // chunk index << partBits | part
	parts    []float32 // termPart's values
}

// parseTSVectorSend calls f with each lexeme of a tsvector in its binary
// form (tsvectorsend: a count, then each lexeme NUL-terminated, its
// number of positions and each position, weight in the top two bits, all
// big-endian) and the weights of its positions in order (3 for A ... 0 for
// D; a lexeme without positions: one of D, tsrank.c's POSNULL), false if
// b is not one. lexeme is only valid during the call.
func parseTSVectorSend(b []byte, f func(lexeme []byte, weights []uint8)) bool {
	if len(b) < 4 {
		return false
	}
	n := binary.BigEndian.Uint32(b)
	b = b[4:]
	var ws []uint8
	for range n {
		end := bytes.IndexByte(b, 0)
		if end < 0 || len(b) < end+3 {
			return false
		}
		lexeme := b[:end]
		npos := int(binary.BigEndian.Uint16(b[end+1:]))
		b = b[end+3:]
		if len(b) < 2*npos {
			return false
		}
		ws = ws[:0]
		for j := range npos {
			ws = append(ws, uint8(binary.BigEndian.Uint16(b[2*j:])>>14))
		}
		if npos == 0 {
			ws = append(ws, 0)
		}
		b = b[2*npos:]
		f(lexeme, ws)
	}
	return len(b) == 0
}

// unquote reads a lexeme quoted as tsquery's text output quotes one ('...', a ' or \ in it doubled) from the start of s.
func unquote(s string) (lexeme, rest string, ok bool) {
	if len(s) == 0 || s[0] != '\'' {
		return "", "", false
	}
	s = s[1:]
	var b strings.Builder
	for {
		i := strings.IndexAny(s, `'\`)
		if i < 0 {
			return "", "", false
		}
		b.WriteString(s[:i])
		if i+1 < len(s) && s[i+1] == s[i] { // a doubled ' or \
			b.WriteByte(s[i])
			s = s[i+2:]
			continue
		}
		if s[i] == '\\' {
			return "", "", false
		}
		return b.String(), s[i+1:], true
	}
}

// parseOrQuery is the lexemes of a tsquery's text output that is a
// disjunction of plain lexemes ('a' | 'b'), sorted and without
// duplicates (tsrank.c's SortAndUniqItems: by bytes), false for any other
// query.
func parseOrQuery(s string) ([]string, bool) {
	var out []string
	for len(s) > 0 {
		lexeme, rest, ok := unquote(s)
		if !ok {
			return nil, false
		}
		s = rest
		out = append(out, lexeme)
		if len(s) > 0 {
			if !strings.HasPrefix(s, " | ") {
				return nil, false
			}
			s = s[3:]
			if len(s) == 0 {
				return nil, false
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out), true
}

// A posting is a chunk's index in its file (ids) in its top 20 bits and
// its part's (parts) in the low 12: a file of more chunks or parts is
// ranked by the database.
const (
	partBits  = 12
	maxParts  = 1 << partBits
	maxChunks = 1 << (32 - partBits)
)

// loadTerms reads a file's chunks' tsvectors (nil: it has none;
// errUnreadTerms: they were not all read).
func (s *Store) loadTerms(ctx context.Context, file string) (*fileTerms, error) {
	rows, err := s.r.WithContext(ctx).Raw(`SELECT id, tsvectorsend(tsv) FROM file_chunk WHERE file_id = ? ORDER BY id`, file).Rows()
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	listOf := map[string]int{} // a lexeme's postings in lists
	var lists [][]uint32
	partOf := map[float32]uint32{}
	var single [4]uint32 // 1 + the part of one position of each weight, once known
	ft := &fileTerms{}
	var (
		id    int64
		tsv   []byte
		chunk uint32
	)
	read := true
	partsMax := maxParts
	if m := s.vectors.partsMax; m > 0 { // tests
		partsMax = m
	}
	add := func(lexeme []byte, weights []uint8) {
		var k uint32
		if len(weights) == 1 && single[weights[0]] > 0 { // most lexemes: one position
			k = single[weights[0]] - 1
		} else {
			p := termPart(weights)
			var seen bool
			if k, seen = partOf[p]; !seen {
				if len(ft.parts) == partsMax {
					read = false
					return
				}
				k = uint32(len(ft.parts))
				partOf[p] = k
				ft.parts = append(ft.parts, p)
			}
			if len(weights) == 1 {
				single[weights[0]] = k + 1
			}
		}
		li, found := listOf[string(lexeme)] // looked up without a copy of the key
		if !found {
			li = len(lists)
			listOf[string(lexeme)] = li
			lists = append(lists, nil)
		}
		lists[li] = append(lists[li], chunk<<partBits|k)
	}
	for rows.Next() {
		if err := rows.Scan(&id, &tsv); err != nil {
			return nil, err
		}
		if len(ft.ids) == maxChunks {
			read = false
		}
		chunk = uint32(len(ft.ids))
		ft.ids = append(ft.ids, id)
		read = read && parseTSVectorSend(tsv, add) && read
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if !read {
		return nil, errUnreadTerms
	}
	if len(ft.ids) == 0 {
		return nil, nil
	}
	total := 0
	for _, ps := range lists {
		total += len(ps)
	}
	ft.postings = make([]uint32, 0, total)
	ft.terms = make(map[string]termSpan, len(lists))
	for lexeme, li := range listOf {
		ft.terms[lexeme] = termSpan{uint32(len(ft.postings)), uint32(len(lists[li]))}
		ft.postings = append(ft.postings, lists[li]...)
	}
	return ft, nil
}

// errUnreadTerms: a file's tsvectors were not all read (the query ranks
// it in the database).
var errUnreadTerms = fmt.Errorf("a tsvector not read")

// unreadTerms stand for a file's in the cache when they were not read.
var unreadTerms = &fileTerms{}

// termsMax bounds the postings the cache holds (4 bytes each): past it,
// it is emptied and fills again with what searches read.
const termsMax = 48 << 20

// terms is file's postings from the cache, read on a miss (unreadTerms
// when they were not read).
func (c *vecCache) terms(ctx context.Context, s *Store, file string) (*fileTerms, error) {
	c.mu.Lock()
	ft, ok := c.termFiles[file]
	gen := c.gen
	c.mu.Unlock()
	if ok {
		return ft, nil
	}
	ft, err := s.loadTerms(ctx, file)
	if err == errUnreadTerms {
		ft = unreadTerms // kept: not read again for each search
	} else if err != nil || ft == nil {
		return ft, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen { // dropped meanwhile: used once, not kept
		return ft, nil
	}
	if c.termFiles == nil || c.termPostings+len(ft.postings) > termsMax {
		c.termFiles, c.termPostings = map[string]*fileTerms{}, 0
	}
	c.termFiles[file] = ft
	c.termPostings += len(ft.postings)
	return ft, nil
}

// rankedChunk is a chunk's ts_rank.
type rankedChunk struct {
	id    int64
	score float32
}

// worse orders rankedChunks worst first: lower score, then higher id (the
// query's ORDER BY score DESC, id).
func worse(a, b rankedChunk) bool {
	if a.score != b.score {
		return a.score < b.score
	}
	return a.id > b.id
}

// rankTerms is the limit best chunks of files and their scores by ts_rank(tsv,
// to_tsquery('simple', tsq)) among those that match it, best first, equal
// scores by id, from the cache: ok false when the query is not a
// disjunction of lexemes (or a file's tsvectors were not read), for the
// database to rank.
func (s *Store) rankTerms(ctx context.Context, files []string, tsq string, limit int) (best []rankedChunk, ok bool, err error) {
	var q string
	if err := s.r.WithContext(ctx).Raw(`SELECT to_tsquery('simple', ?)::text`, tsq).Scan(&q).Error; err != nil {
		return nil, false, err
	}
	lexemes, plain := parseOrQuery(q)
	if !plain {
		return nil, false, nil
	}
	if len(lexemes) == 0 || limit < 1 {
		return nil, true, nil
	}
	size := float32(len(lexemes))
	h := newTopN(limit, worse)
	var acc []float32
	var touched []uint32
	for _, f := range files {
		ft, err := s.vectors.terms(ctx, s, f)
		if err != nil {
			return nil, false, err
		}
		if ft == unreadTerms {
			return nil, false, nil
		}
		if ft == nil {
			continue
		}
		if cap(acc) < len(ft.ids) {
			acc = make([]float32, len(ft.ids))
		}
		acc = acc[:len(ft.ids)]
		touched = touched[:0]
		for _, lx := range lexemes { // calc_rank_or's order: the sorted lexemes
			sp, found := ft.terms[lx]
			if !found {
				continue
			}
			for _, p := range ft.postings[sp.off : sp.off+sp.n] {
				c := p >> partBits
				if acc[c] == 0 {
					touched = append(touched, c)
				}
				acc[c] = addTerm(acc[c], ft.parts[p&(maxParts-1)])
			}
		}
		for _, c := range touched {
			r := rankedChunk{ft.ids[c], acc[c] / size}
			acc[c] = 0
			h.offer(r)
		}
	}
	slices.SortFunc(h.items, func(a, b rankedChunk) int {
		if a.score != b.score {
			return cmp.Compare(b.score, a.score)
		}
		return cmp.Compare(a.id, b.id)
	})
	return h.items, true, nil
}
