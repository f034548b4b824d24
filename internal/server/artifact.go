package server

import (
	"io"
	"net/http"
)

// artifactPath serves the frame an artifact (an answer's HTML, SVG or
// Markdown document, assets/src/artifacts.js) is rendered in, and the
// Mermaid renderer runs in (assets/src/diagram.js). The page is
// static and holds no data: the chat posts the artifact to it, and it
// writes it into its own document. It is public (a shared conversation's
// reader may be signed out) and answers the same to everyone.
const artifactPath = "/artifact"

// artifactPolicy confines an artifact: an opaque origin (sandbox without
// allow-same-origin: no cookies, no storage, no access to the app's page,
// no top navigation, no popups, no forms), no network (connect-src,
// default-src 'none'), nothing loaded but inline script and style and
// data: images and fonts, and framed only by the app's own pages. The
// iframe's sandbox attribute says the same; the header also holds when
// the URL is opened on its own.
const artifactPolicy = "sandbox allow-scripts; " +
	"default-src 'none'; " +
	"script-src 'unsafe-inline'; " +
	"style-src 'unsafe-inline'; " +
	"img-src data:; " +
	"font-src data:; " +
	"media-src data:; " +
	"connect-src 'none'; " +
	"form-action 'none'; " +
	"base-uri 'none'; " +
	"frame-ancestors 'self'"

// artifactFrame takes one message from the page that framed it (its
// parent: the only window that holds a reference to it) and writes the
// document it carries in place of its own.
const artifactFrame = `<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>Artifact</title>
<script>
addEventListener('message', function show(e) {
  if (e.source !== parent || !e.data || typeof e.data.agentikArtifact !== 'string') return;
  removeEventListener('message', show);
  document.open();
  document.write(e.data.agentikArtifact);
  document.close();
});
</script></head><body></body></html>
`

func (s *Server) handleArtifactFrame(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", artifactPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-cache")
	io.WriteString(w, artifactFrame)
}
