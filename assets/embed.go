// Package assets embeds the browser UI's bundle (JS, CSS, icon) built by
// esbuild from assets/src (`npm run build`) and serves it at content-hashed
// URLs with immutable caching, so a deploy never mixes old and new code.
package assets

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strconv"
	"strings"
	"sync"
)

//go:embed dist
var dist embed.FS

// Prefix is the URL path under which Handler serves the bundle.
const Prefix = "/assets/"

// hashLen is how many hex digits of the SHA-256 name a file's version.
const hashLen = 12

type file struct {
	name   string // app.js
	hashed string // app.0123456789ab.js
	ctype  string
	body   []byte
	etag   string
	// gzipped is the body gzipped, or nil when gzip does not pay off; it is
	// made on the file's first gzip request, so the large on-demand
	// bundles (the Mermaid renderer: 4 MB) cost nothing at start.
	gzipped func() []byte
}

type bundle struct {
	byName   map[string]*file
	byHashed map[string]*file
}

// load reads the embedded files once; the result never changes.
var load = sync.OnceValues(func() (*bundle, error) { return newBundle(dist) })

func newBundle(fsys fs.FS) (*bundle, error) {
	b := &bundle{byName: map[string]*file{}, byHashed: map[string]*file{}}
	err := fs.WalkDir(fsys, "dist", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := fs.ReadFile(fsys, p)
		if err != nil {
			return fmt.Errorf("read %s: %w", p, err)
		}
		name := strings.TrimPrefix(p, "dist/")
		sum := sha256.Sum256(body)
		h := hex.EncodeToString(sum[:])[:hashLen]
		ext := path.Ext(name)
		f := &file{
			name:   name,
			hashed: strings.TrimSuffix(name, ext) + "." + h + ext,
			ctype:  contentType(ext),
			body:   body,
			etag:   `"` + h + `"`,
		}
		if f.ctype == "" {
			f.ctype = "application/octet-stream"
		}
		f.gzipped = sync.OnceValue(func() []byte { return gzipOf(body) })
		b.byName[name] = f
		b.byHashed[f.hashed] = f
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("assets: %w", err)
	}
	return b, nil
}

// URL returns the content-hashed URL of a bundled file, such as
// URL("app.js") == "/assets/app.0123456789ab.js". An unknown name yields
// its unhashed URL, which Handler answers with 404.
func URL(name string) string {
	b, err := load()
	if err != nil {
		return Prefix + name
	}
	if f, ok := b.byName[name]; ok {
		return Prefix + f.hashed
	}
	return Prefix + name
}

// Handler serves the bundle under Prefix. A hashed URL is cached for a year
// as immutable; the plain name (app.js) and a stale hash still answer, with
// no-cache, so an old page open across a deploy keeps working.
func Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := load()
		if err != nil {
			http.Error(w, "assets unavailable", http.StatusInternalServerError)
			return
		}
		name := strings.TrimPrefix(r.URL.Path, Prefix)
		f, immutable := b.byHashed[name], true
		if f == nil {
			f, immutable = b.byName[unhash(name)], false
		}
		if f == nil || (r.Method != http.MethodGet && r.Method != http.MethodHead) {
			http.NotFound(w, r)
			return
		}
		hd := w.Header()
		hd.Set("Content-Type", f.ctype)
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("ETag", f.etag)
		hd.Set("Vary", "Accept-Encoding")
		if immutable {
			hd.Set("Cache-Control", "public, max-age=31536000, immutable")
		} else {
			hd.Set("Cache-Control", "no-cache")
		}
		if match := r.Header.Get("If-None-Match"); match != "" && strings.Contains(match, f.etag) {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		body := f.body
		if acceptsGzip(r.Header.Get("Accept-Encoding")) {
			if gz := f.gzipped(); gz != nil {
				hd.Set("Content-Encoding", "gzip")
				body = gz
			}
		}
		hd.Set("Content-Length", fmt.Sprint(len(body)))
		if r.Method == http.MethodHead {
			return
		}
		w.Write(body)
	})
}

// gzipOf is body gzipped, or nil when that saves less than a tenth.
func gzipOf(body []byte) []byte {
	var gz bytes.Buffer
	w, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	w.Write(body)
	w.Close()
	if gz.Len() >= len(body)*9/10 {
		return nil
	}
	return gz.Bytes()
}

// contentType is the type of a bundled file by its extension; fonts are
// named here, as Go's table and a system's mime.types may lack them.
func contentType(ext string) string {
	if ext == ".woff2" {
		return "font/woff2"
	}
	return mime.TypeByExtension(ext)
}

// unhash turns "app.0123456789ab.js" (any hash) back into "app.js".
func unhash(name string) string {
	ext := path.Ext(name)
	base := strings.TrimSuffix(name, ext)
	i := strings.LastIndexByte(base, '.')
	if i < 0 || len(base)-i-1 != hashLen {
		return name
	}
	return base[:i] + ext
}

// acceptsGzip reports whether an Accept-Encoding header allows gzip.
func acceptsGzip(h string) bool {
	for _, part := range strings.Split(h, ",") {
		enc, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if !strings.EqualFold(strings.TrimSpace(enc), "gzip") {
			continue
		}
		k, v, ok := strings.Cut(strings.TrimSpace(params), "=")
		if !ok || strings.TrimSpace(k) != "q" {
			return true
		}
		q, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		return err == nil && q > 0
	}
	return false
}
