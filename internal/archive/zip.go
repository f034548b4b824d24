package archive

import (
	"archive/zip"
	"bytes"
	"io"
	"path"
	"strings"

	"github.com/agentik/agentik/internal/agent"
)

// IsZIP reports whether an import file is a ZIP archive (a ChatGPT data
// export as downloaded), by its first bytes.
func IsZIP(b []byte) bool {
	return bytes.HasPrefix(b, []byte("PK\x03\x04"))
}

// ChatGPTFile is the file of a ChatGPT data export that holds the
// conversations (the others are HTML, images and account data).
const ChatGPTFile = "conversations.json"

// UnzipConversations returns the conversations.json inside the ChatGPT
// data export ZIP b, read up to max bytes uncompressed: a ZIP whose file
// is bigger, declared or inflated (a zip bomb), fails with too_large
// before more than max bytes are inflated; hint ends that message (what
// the caller's user can do instead). The file is found by its name in any
// folder (the shallowest wins); macOS's __MACOSX copies are ignored.
func UnzipConversations(b []byte, max int64, hint string) ([]byte, error) {
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return nil, agent.Errorf(agent.CodeBadRequest, "the file starts like a ZIP but cannot be read as one (is it complete?): unzip it yourself and import the %s inside", ChatGPTFile)
	}
	var found *zip.File
	var names []string
	for _, f := range zr.File {
		if f.FileInfo().IsDir() || strings.HasPrefix(f.Name, "__MACOSX/") {
			continue
		}
		names = append(names, f.Name)
		if path.Base(f.Name) == ChatGPTFile && (found == nil || strings.Count(f.Name, "/") < strings.Count(found.Name, "/")) {
			found = f
		}
	}
	if found == nil {
		seen := strings.Join(names[:min(len(names), 5)], ", ")
		if len(names) > 5 {
			seen += ", …"
		}
		if seen == "" {
			seen = "nothing"
		}
		return nil, agent.Errorf(agent.CodeBadRequest, "this ZIP holds no %s, so it is not a ChatGPT data export (it holds %s); import a ChatGPT export ZIP, its %s, or an agentik export", ChatGPTFile, agent.Shorten(seen, 200), ChatGPTFile)
	}
	tooBig := func() error {
		return agent.Errorf(agent.CodeTooLarge, "the %s in this ZIP is larger than %d bytes uncompressed%s", ChatGPTFile, max, hint)
	}
	if found.UncompressedSize64 > uint64(max) {
		return nil, tooBig()
	}
	rc, err := found.Open()
	if err != nil {
		return nil, agent.Errorf(agent.CodeBadRequest, "the %s in this ZIP cannot be unpacked (it is compressed in a way this server does not read): unzip it yourself and import the file", ChatGPTFile)
	}
	defer rc.Close()
	out, err := io.ReadAll(io.LimitReader(rc, max+1))
	if int64(len(out)) > max {
		return nil, tooBig()
	}
	if err != nil {
		return nil, agent.Errorf(agent.CodeBadRequest, "the %s in this ZIP is damaged (it does not unpack to what the ZIP declares): download the export again", ChatGPTFile)
	}
	return out, nil
}
