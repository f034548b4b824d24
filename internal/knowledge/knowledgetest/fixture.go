// Package knowledgetest makes the documents the tests and the bench
// upload: PDFs with a text layer (or without one), encrypted and broken
// PDFs, DOCX files and zip bombs, built byte by byte so that no fixture
// file is committed. Never linked by the product.
package knowledgetest

import (
	"archive/zip"
	"bytes"
	"fmt"
	"strings"
)

// PDF is a PDF whose page i holds the lines of pages[i] (lines split at
// "\n"; an empty page has no text layer), in Helvetica.
func PDF(pages ...string) []byte { return pdfOf(pages, "") }

// EncryptedPDF is a PDF whose trailer names an encryption dictionary
// that no empty password opens.
func EncryptedPDF() []byte { return pdfOf([]string{"secret"}, "/Encrypt 99 0 R") }

// pdfOf writes the objects and a correct cross-reference table.
func pdfOf(pages []string, trailerExtra string) []byte {
	var objs []string
	// 1: catalog, 2: pages, 3: font, then per page: page, contents.
	kids := make([]string, len(pages))
	for i := range pages {
		kids[i] = fmt.Sprintf("%d 0 R", 4+2*i)
	}
	objs = append(objs, "<< /Type /Catalog /Pages 2 0 R >>",
		fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", strings.Join(kids, " "), len(pages)),
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
	for i, p := range pages {
		var cs strings.Builder
		if strings.TrimSpace(p) != "" {
			cs.WriteString("BT /F1 12 Tf\n")
			y := 760
			for _, line := range strings.Split(p, "\n") {
				fmt.Fprintf(&cs, "1 0 0 1 72 %d Tm (%s) Tj\n", y, escape(line))
				y -= 16
			}
			cs.WriteString("ET\n")
		}
		objs = append(objs, fmt.Sprintf("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>", 5+2*i),
			fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", cs.Len(), cs.String()))
	}
	if trailerExtra != "" {
		for len(objs) < 98 {
			objs = append(objs, "null")
		}
		objs = append(objs, "<< /Filter /Standard /V 2 /R 3 /Length 128 /P -4 /O <"+strings.Repeat("00", 32)+"> /U <"+strings.Repeat("11", 32)+"> >>")
		trailerExtra += " /ID [<0123456789abcdef0123456789abcdef> <0123456789abcdef0123456789abcdef>]"
	}
	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n")
	offsets := make([]int, len(objs))
	for i, o := range objs {
		offsets[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objs)+1)
	for _, off := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R %s >>\nstartxref\n%d\n%%%%EOF\n", len(objs)+1, trailerExtra, xref)
	return b.Bytes()
}

// escape escapes a PDF string's delimiters.
func escape(s string) string {
	return strings.NewReplacer(`\`, `\\`, "(", `\(`, ")", `\)`).Replace(s)
}

// Paragraph is one paragraph of a DOCX: its text, and its style
// ("Heading1" makes it a heading; "" a body paragraph).
type Paragraph struct {
	Style, Text string
}

// DOCX is a minimal Word document of paragraphs.
func DOCX(paras ...Paragraph) []byte {
	var body strings.Builder
	for _, p := range paras {
		body.WriteString("<w:p>")
		if p.Style != "" {
			fmt.Fprintf(&body, `<w:pPr><w:pStyle w:val="%s"/></w:pPr>`, p.Style)
		}
		fmt.Fprintf(&body, `<w:r><w:t xml:space="preserve">%s</w:t></w:r></w:p>`, xmlEscape(p.Text))
	}
	doc := `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>` +
		`<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>` + body.String() + `</w:body></w:document>`
	return zipOf(map[string][]byte{
		"[Content_Types].xml": []byte(`<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>`),
		"word/document.xml":   []byte(doc),
	})
}

// ZipBomb is a DOCX whose word/document.xml inflates to n bytes (of
// zeros: a few KB compressed for 100 MB).
func ZipBomb(n int) []byte {
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	w, _ := zw.Create("word/document.xml")
	chunk := make([]byte, 1<<20)
	for n > 0 {
		k := min(n, len(chunk))
		_, _ = w.Write(chunk[:k])
		n -= k
	}
	_ = zw.Close()
	return b.Bytes()
}

func zipOf(files map[string][]byte) []byte {
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for _, name := range []string{"[Content_Types].xml", "word/document.xml"} {
		if data, ok := files[name]; ok {
			w, _ := zw.Create(name)
			_, _ = w.Write(data)
		}
	}
	_ = zw.Close()
	return b.Bytes()
}

func xmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}
