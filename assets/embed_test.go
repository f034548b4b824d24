package assets

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

func get(t *testing.T, url string, hdr map[string]string) *http.Response {
	t.Helper()
	srv := httptest.NewServer(Handler())
	t.Cleanup(srv.Close)
	req, err := http.NewRequest(http.MethodGet, srv.URL+url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	tr := &http.Transport{DisableCompression: true}
	t.Cleanup(tr.CloseIdleConnections)
	res, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	return res
}

func TestURLIsContentHashed(t *testing.T) {
	for _, name := range []string{"app.js", "app.css", "icon.svg"} {
		got := URL(name)
		re := regexp.MustCompile(`^/assets/` + regexp.QuoteMeta(strings.Split(name, ".")[0]) + `\.[0-9a-f]{12}\.` + strings.Split(name, ".")[1] + `$`)
		if !re.MatchString(got) {
			t.Errorf("URL(%q) = %q, want a hashed URL", name, got)
		}
	}
	if got := URL("nope.js"); got != "/assets/nope.js" {
		t.Errorf("URL(unknown) = %q", got)
	}
}

func TestHandlerServesHashedImmutable(t *testing.T) {
	res := get(t, URL("app.js"), nil)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("status %d", res.StatusCode)
	}
	if got, want := res.Header.Get("Cache-Control"), "public, max-age=31536000, immutable"; got != want {
		t.Errorf("Cache-Control = %q, want %q", got, want)
	}
	if got := res.Header.Get("Content-Type"); !strings.HasPrefix(got, "text/javascript") {
		t.Errorf("Content-Type = %q", got)
	}
	body, _ := io.ReadAll(res.Body)
	want, _ := dist.ReadFile("dist/app.js")
	if !bytes.Equal(body, want) {
		t.Errorf("body differs from the embedded file (%d vs %d bytes)", len(body), len(want))
	}
}

func TestHandlerGzip(t *testing.T) {
	res := get(t, URL("app.js"), map[string]string{"Accept-Encoding": "br, gzip"})
	if res.Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("Content-Encoding = %q, want gzip", res.Header.Get("Content-Encoding"))
	}
	zr, err := gzip.NewReader(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(zr)
	want, _ := dist.ReadFile("dist/app.js")
	if !bytes.Equal(body, want) {
		t.Error("gunzipped body differs from the embedded file")
	}
	const budget = 150 << 10
	b, _ := load()
	if n := len(b.byName["app.js"].gzipped()) + len(b.byName["app.css"].gzipped()); n > budget {
		t.Errorf("bundle is %d bytes gzipped, budget %d", n, budget)
	}
}

func TestHandlerStaleAndUnknown(t *testing.T) {
	for _, tc := range []struct {
		url    string
		status int
		cache  string
	}{
		{"/assets/app.js", 200, "no-cache"},
		{"/assets/app.000000000000.js", 200, "no-cache"},
		{"/assets/nope.js", 404, ""},
		{"/assets/../embed.go", 404, ""},
	} {
		res := get(t, tc.url, nil)
		if res.StatusCode != tc.status {
			t.Errorf("%s: status %d, want %d", tc.url, res.StatusCode, tc.status)
		}
		if tc.cache != "" && res.Header.Get("Cache-Control") != tc.cache {
			t.Errorf("%s: Cache-Control %q, want %q", tc.url, res.Header.Get("Cache-Control"), tc.cache)
		}
	}
}

func TestHandlerNotModified(t *testing.T) {
	first := get(t, URL("app.css"), nil)
	res := get(t, URL("app.css"), map[string]string{"If-None-Match": first.Header.Get("ETag")})
	if res.StatusCode != http.StatusNotModified {
		t.Errorf("status %d, want 304", res.StatusCode)
	}
}

func TestAcceptsGzip(t *testing.T) {
	for h, want := range map[string]bool{
		"":                   false,
		"gzip":               true,
		"deflate, gzip":      true,
		"gzip;q=0":           false,
		"gzip; q=0.5":        true,
		"br":                 false,
		"GZIP":               true,
		"identity, gzip;q=1": true,
	} {
		if got := acceptsGzip(h); got != want {
			t.Errorf("acceptsGzip(%q) = %v, want %v", h, got, want)
		}
	}
}
