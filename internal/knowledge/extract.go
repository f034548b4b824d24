// Package knowledge turns files into text with positions (DESIGN.md
// §12.1): it detects a file's media type from its name, declared type
// and bytes, extracts its text (plain text, Markdown, HTML, CSV, JSON,
// source code, PDF's text layer page by page with
// github.com/ledongthuc/pdf, DOCX by reading its word/document.xml with
// the standard library) and cuts it into chunks that follow the
// document's headings, paragraphs and pages. It implements
// agent.Extractor; the centre decides when and for whom.
package knowledge

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/ledongthuc/pdf"
	"golang.org/x/net/html"

	"github.com/agentik/agentik/internal/agent"
)

// Media types it reads.
const (
	TypeText     = "text/plain"
	TypeMarkdown = "text/markdown"
	TypeHTML     = "text/html"
	TypeCSV      = "text/csv"
	TypeJSON     = "application/json"
	TypePDF      = "application/pdf"
	TypeDOCX     = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
)

// Bounds of extraction.
const (
	// MaxDOCXXML caps a DOCX's word/document.xml uncompressed: a zip bomb
	// fails before more is inflated.
	MaxDOCXXML = 64 << 20
	// MaxText caps the text one file yields.
	MaxText = 32 << 20
	// chunkTarget and chunkMax are a chunk's size, in bytes: paragraphs
	// are joined up to chunkTarget; a longer one is cut near chunkMax.
	chunkTarget = 1200
	chunkMax    = 2000
)

// codeExts are source files, read as text (their lines kept).
var codeExts = map[string]string{".go": "text/x-go", ".py": "text/x-python", ".js": "text/javascript", ".mjs": "text/javascript",
	".ts": "text/x-typescript", ".java": "text/x-java", ".c": "text/x-c", ".h": "text/x-c", ".cpp": "text/x-c++", ".rs": "text/x-rust",
	".rb": "text/x-ruby", ".sh": "text/x-shellscript", ".sql": "text/x-sql", ".yaml": "text/yaml", ".yml": "text/yaml", ".toml": "text/x-toml",
	".css": "text/css", ".xml": "text/xml", ".kt": "text/x-kotlin", ".swift": "text/x-swift", ".php": "text/x-php", ".cs": "text/x-csharp"}

// byExt are the other types known by extension.
var byExt = map[string]string{".txt": TypeText, ".text": TypeText, ".log": TypeText, ".md": TypeMarkdown, ".markdown": TypeMarkdown,
	".html": TypeHTML, ".htm": TypeHTML, ".csv": TypeCSV, ".json": TypeJSON, ".pdf": TypePDF, ".docx": TypeDOCX}

// Extractor implements agent.Extractor.
type Extractor struct{}

var _ agent.Extractor = Extractor{}

func bad(format string, args ...any) error {
	return agent.Errorf(agent.CodeBadRequest, format, args...)
}

// Detect implements agent.Extractor: the type the bytes are, checked
// against what the name and the declared type say.
func (Extractor) Detect(name, declared string, data []byte) (string, error) {
	declared, _, _ = mime.ParseMediaType(declared)
	if declared == "application/octet-stream" || declared == "binary/octet-stream" {
		declared = ""
	}
	ext := strings.ToLower(path.Ext(name))
	claimed := declared
	if claimed == "" {
		claimed = byExt[ext]
		if claimed == "" {
			claimed = codeExts[ext]
		}
	}
	isPDF := bytes.HasPrefix(data, []byte("%PDF-"))
	isZip := bytes.HasPrefix(data, []byte("PK\x03\x04"))
	switch {
	case claimed == TypePDF || (claimed == "" && isPDF):
		if !isPDF {
			return "", bad("%q is declared a PDF but is not one (it does not start with %%PDF-)", name)
		}
		return TypePDF, nil
	case claimed == TypeDOCX || (claimed == "" && isZip && ext == ".docx"):
		if !isZip {
			return "", bad("%q is declared a DOCX but is not one (it is not a ZIP archive)", name)
		}
		return TypeDOCX, nil
	}
	if isPDF {
		return "", bad("%q holds a PDF but is declared %s; upload it as application/pdf (or name it .pdf)", name, claimed)
	}
	if !textual(claimed) {
		if claimed == "" {
			if isText(data) {
				return TypeText, nil
			}
			return "", bad("the type of %q is unknown: upload text, Markdown, HTML, CSV, JSON, source code, PDF or DOCX", name)
		}
		return "", bad("%q is %s, which this server does not read: upload text, Markdown, HTML, CSV, JSON, source code, PDF or DOCX", name, claimed)
	}
	if !isText(data) {
		return "", bad("%q is declared %s but holds binary data, not UTF-8 text", name, claimed)
	}
	return claimed, nil
}

// textual reports whether a media type is read as text.
func textual(t string) bool {
	return strings.HasPrefix(t, "text/") || t == TypeJSON || strings.HasSuffix(t, "+json") || strings.HasSuffix(t, "+xml") ||
		t == "application/xml" || t == "application/javascript" || t == "application/x-sh" || t == "application/sql" || t == "application/x-yaml"
}

// isText reports whether data is UTF-8 text without NUL bytes.
func isText(data []byte) bool {
	head := data[:min(len(data), 8192)]
	if bytes.IndexByte(head, 0) >= 0 {
		return false
	}
	if !utf8.Valid(data) {
		return false
	}
	ct := http.DetectContentType(head)
	return strings.HasPrefix(ct, "text/") || ct == "application/json"
}

// Extract implements agent.Extractor.
func (Extractor) Extract(ctx context.Context, name, mediaType string, data []byte) ([]agent.Chunk, error) {
	switch {
	case mediaType == TypePDF:
		return extractPDF(ctx, data)
	case mediaType == TypeDOCX:
		return extractDOCX(data)
	case mediaType == TypeMarkdown:
		return chunkBlocks(markdownBlocks(string(data))), nil
	case mediaType == TypeHTML:
		return extractHTML(data)
	case mediaType == TypeCSV:
		return extractCSV(data)
	case mediaType == TypeJSON:
		var v any
		if err := json.Unmarshal(data, &v); err != nil {
			return nil, fmt.Errorf("not valid JSON: %v", err)
		}
		return chunkBlocks(lineBlocks(string(data))), nil
	case textual(mediaType):
		if !utf8.Valid(data) {
			return nil, errors.New("not UTF-8 text")
		}
		if strings.HasPrefix(mediaType, "text/plain") {
			return chunkBlocks(paragraphs(string(data), "")), nil
		}
		return chunkBlocks(lineBlocks(string(data))), nil
	}
	return nil, fmt.Errorf("cannot read %s", mediaType)
}

// block is a paragraph of a document under its heading.
type block struct {
	heading string
	text    string
	page    int
}

// paragraphs cuts text at blank lines.
func paragraphs(text, heading string) []block {
	var out []block
	for _, p := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n\n") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, block{heading: heading, text: p})
		}
	}
	return out
}

// lineBlocks cuts code and data at blank lines, keeping lines.
func lineBlocks(text string) []block { return paragraphs(text, "") }

// markdownBlocks cuts Markdown at headings and blank lines; each block
// keeps the heading it is under.
func markdownBlocks(text string) []block {
	var out []block
	heading := ""
	var cur []string
	flush := func() {
		out = append(out, paragraphs(strings.Join(cur, "\n"), heading)...)
		cur = cur[:0]
	}
	fence := false
	for _, line := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n") {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "```") {
			fence = !fence
		}
		if !fence && strings.HasPrefix(t, "#") {
			h := strings.TrimSpace(strings.TrimLeft(t, "#"))
			if h != "" && len(t) > len(h) && t[len(t)-len(h)-1] == ' ' {
				flush()
				heading = h
				continue
			}
		}
		cur = append(cur, line)
	}
	flush()
	return out
}

// chunkBlocks joins blocks under one heading (and page) into chunks of
// about chunkTarget bytes; a block longer than chunkMax is cut at word
// boundaries.
func chunkBlocks(blocks []block) []agent.Chunk {
	var out []agent.Chunk
	var cur *agent.Chunk
	total := 0
	emit := func() {
		if cur != nil && strings.TrimSpace(cur.Text) != "" {
			out = append(out, *cur)
		}
		cur = nil
	}
	for _, b := range blocks {
		if total > MaxText {
			break
		}
		total += len(b.text)
		for _, piece := range cut(b.text, chunkMax) {
			if cur != nil && (cur.Heading != b.heading || cur.Page != b.page || len(cur.Text)+len(piece) > chunkTarget) {
				emit()
			}
			if cur == nil {
				cur = &agent.Chunk{Page: b.page, Heading: b.heading, Text: piece}
				continue
			}
			cur.Text += "\n\n" + piece
		}
	}
	emit()
	return out
}

// cut splits s into pieces of at most n bytes at spaces (or anywhere in
// a word longer than n), on rune boundaries.
func cut(s string, n int) []string {
	var out []string
	for len(s) > n {
		i := strings.LastIndexAny(s[:n], " \n\t")
		if i <= n/2 {
			i = n
			for i > 0 && !utf8.RuneStart(s[i]) {
				i--
			}
		}
		out = append(out, strings.TrimSpace(s[:i]))
		s = strings.TrimSpace(s[i:])
	}
	if s != "" {
		out = append(out, s)
	}
	return out
}

// extractPDF reads a PDF's text layer page by page.
func extractPDF(ctx context.Context, data []byte) (chunks []agent.Chunk, err error) {
	defer func() {
		if x := recover(); x != nil { // the library panics on some malformed files
			chunks, err = nil, fmt.Errorf("malformed PDF: %v", x)
		}
	}()
	r, err := pdf.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		if errors.Is(err, pdf.ErrInvalidPassword) {
			return nil, errors.New("encrypted PDF: it needs a password; upload it without encryption")
		}
		return nil, fmt.Errorf("not a readable PDF: %v", err)
	}
	var blocks []block
	var pages []pdf.Page
	pageTree(r.Trailer().Key("Root").Key("Pages"), &pages, 0)
	for n, p := range pages {
		i := n + 1
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		for _, b := range paragraphs(pageText(p.Content().Text), "") {
			b.page = i
			blocks = append(blocks, b)
		}
	}
	if len(blocks) == 0 {
		return nil, errors.New("no text layer")
	}
	return chunkBlocks(blocks), nil
}

// maxPageDepth bounds the page tree's depth (a cycle ends there).
const maxPageDepth = 32

// pageTree appends the leaves of a PDF's page tree to out, in order, in
// one walk (the library's Reader.Page walks it from the root for every
// page: quadratic in the pages).
func pageTree(v pdf.Value, out *[]pdf.Page, depth int) {
	if v.IsNull() || depth > maxPageDepth {
		return
	}
	kids := v.Key("Kids")
	if v.Key("Type").Name() == "Page" || kids.IsNull() {
		*out = append(*out, pdf.Page{V: v})
		return
	}
	for i := range kids.Len() {
		pageTree(kids.Index(i), out, depth+1)
	}
}

// pageText joins a page's glyphs into lines (a new line where the
// baseline moves, a blank line where it moves by more than two lines, a
// space where a gap is wider than a fifth of the font size).
func pageText(glyphs []pdf.Text) string {
	var b strings.Builder
	var last *pdf.Text
	for i := range glyphs {
		g := &glyphs[i]
		if g.S == "" {
			continue
		}
		if last != nil {
			size := max(last.FontSize, 1)
			switch dy := last.Y - g.Y; {
			case dy > 2*size || dy < -2*size:
				b.WriteString("\n\n")
			case dy > size/2 || dy < -size/2:
				b.WriteByte('\n')
			case g.X-(last.X+last.W) > size/5:
				b.WriteByte(' ')
			}
		}
		b.WriteString(g.S)
		last = g
	}
	return b.String()
}

// extractDOCX reads a DOCX's paragraphs; a paragraph styled as a heading
// (Heading1…, Title) heads the ones after it.
func extractDOCX(data []byte) ([]agent.Chunk, error) {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, errors.New("not a DOCX: it is not a readable ZIP archive")
	}
	var doc *zip.File
	for _, f := range zr.File {
		if f.Name == "word/document.xml" {
			doc = f
		}
	}
	if doc == nil {
		return nil, errors.New("not a DOCX: it holds no word/document.xml")
	}
	tooBig := fmt.Errorf("the DOCX's text is larger than %d bytes uncompressed (a zip bomb?)", MaxDOCXXML)
	if doc.UncompressedSize64 > MaxDOCXXML {
		return nil, tooBig
	}
	rc, err := doc.Open()
	if err != nil {
		return nil, fmt.Errorf("the DOCX cannot be unpacked: %v", err)
	}
	defer rc.Close()
	xmlData, err := io.ReadAll(io.LimitReader(rc, MaxDOCXXML+1))
	if len(xmlData) > MaxDOCXXML {
		return nil, tooBig
	}
	if err != nil {
		return nil, fmt.Errorf("the DOCX is damaged: %v", err)
	}
	dec := xml.NewDecoder(bytes.NewReader(xmlData))
	var (
		blocks  []block
		heading string
		para    strings.Builder
		style   string
		inText  bool
	)
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("the DOCX's document.xml is not valid XML: %v", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			switch t.Name.Local {
			case "p":
				para.Reset()
				style = ""
			case "pStyle":
				for _, a := range t.Attr {
					if a.Name.Local == "val" {
						style = a.Value
					}
				}
			case "t":
				inText = true
			case "tab":
				para.WriteByte('\t')
			case "br":
				para.WriteByte('\n')
			}
		case xml.EndElement:
			switch t.Name.Local {
			case "t":
				inText = false
			case "p":
				text := strings.TrimSpace(para.String())
				if text == "" {
					continue
				}
				ls := strings.ToLower(style)
				if strings.HasPrefix(ls, "heading") || ls == "title" {
					heading = text
					continue
				}
				blocks = append(blocks, block{heading: heading, text: text})
			}
		case xml.CharData:
			if inText {
				para.Write(t)
			}
		}
	}
	return chunkBlocks(blocks), nil
}

// extractHTML reads an HTML page's text; h1–h6 head what follows them,
// script and style are left out.
func extractHTML(data []byte) ([]agent.Chunk, error) {
	doc, err := html.Parse(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("not readable HTML: %v", err)
	}
	var (
		blocks  []block
		heading string
		cur     strings.Builder
	)
	flush := func() {
		if t := strings.Join(strings.Fields(cur.String()), " "); t != "" {
			blocks = append(blocks, block{heading: heading, text: t})
		}
		cur.Reset()
	}
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			switch n.Data {
			case "script", "style", "noscript", "template", "head":
				return
			case "h1", "h2", "h3", "h4", "h5", "h6":
				flush()
				var b strings.Builder
				collect(n, &b)
				heading = strings.Join(strings.Fields(b.String()), " ")
				return
			case "p", "div", "li", "tr", "section", "article", "pre", "blockquote", "br", "table", "ul", "ol":
				flush()
				defer flush()
			}
		}
		if n.Type == html.TextNode {
			cur.WriteString(n.Data)
			cur.WriteByte(' ')
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	flush()
	return chunkBlocks(blocks), nil
}

// collect appends n's text to b.
func collect(n *html.Node, b *strings.Builder) {
	if n.Type == html.TextNode {
		b.WriteString(n.Data)
		b.WriteByte(' ')
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		collect(c, b)
	}
}

// extractCSV reads a table: each row a line "column: value; …", the
// header the heading of the chunks.
func extractCSV(data []byte) ([]agent.Chunk, error) {
	r := csv.NewReader(bytes.NewReader(data))
	r.FieldsPerRecord = -1
	r.LazyQuotes = true
	rows, err := r.ReadAll()
	if err != nil {
		return nil, fmt.Errorf("not readable CSV: %v", err)
	}
	if len(rows) == 0 {
		return nil, nil
	}
	header := rows[0]
	heading := strings.Join(header, ", ")
	var blocks []block
	for _, row := range rows[1:] {
		var b strings.Builder
		for i, v := range row {
			if i > 0 {
				b.WriteString("; ")
			}
			if i < len(header) {
				b.WriteString(header[i] + ": ")
			}
			b.WriteString(v)
		}
		blocks = append(blocks, block{heading: heading, text: b.String()})
	}
	if len(rows) == 1 {
		blocks = append(blocks, block{text: heading})
	}
	return chunkBlocks(blocks), nil
}
