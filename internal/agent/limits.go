package agent

import (
	"encoding/base64"
	"strings"
	"unicode/utf8"
)

// Limits on what a client may send. They are checked before anything is
// written.
const (
	MaxContentParts = 32       // parts per message
	MaxTextBytes    = 1 << 20  // bytes of text per message
	MaxImageBytes   = 10 << 20 // decoded bytes per image
	MaxTitleRunes   = 200      // runes per title
	MaxPageSize     = 1000     // largest limit of a list
	DefaultPageSize = 100      // limit when none is given
	MaxToolRounds   = 24       // model rounds per turn before giving up
)

// DefaultMaxAnswerBytes is the default cap on one answer of the model
// (Config.MaxAnswerBytes): far above any real answer, far below what would
// strain memory or the clients.
const DefaultMaxAnswerBytes = 1 << 20

// DefaultSystemPrompt is the system prompt when none is configured.
const DefaultSystemPrompt = "You are a helpful assistant. Answer concisely and use Markdown where it helps."

func cleanTitle(title string, empty bool) (string, error) {
	title = strings.TrimSpace(title)
	if title == "" && !empty {
		return "", Errorf(CodeBadRequest, "title must not be empty")
	}
	if !utf8.ValidString(title) {
		return "", Errorf(CodeBadRequest, "title must be valid UTF-8")
	}
	if n := utf8.RuneCountInString(title); n > MaxTitleRunes {
		return "", Errorf(CodeBadRequest, "title is %d characters long; at most %d are allowed", n, MaxTitleRunes)
	}
	return title, nil
}

func checkPage(offset, limit int) error {
	if offset < 0 {
		return Errorf(CodeBadRequest, "offset must be 0 or more, got %d", offset)
	}
	if limit < 1 || limit > MaxPageSize {
		return Errorf(CodeBadRequest, "limit must be between 1 and %d, got %d", MaxPageSize, limit)
	}
	return nil
}

// titleRunes is about how long a title taken from the first message is.
const titleRunes = 60

// autoTitle names a conversation by its first message's first words.
func autoTitle(content []Content) string { return firstWords(content, titleRunes) }

// firstWords is the first line of content's first text, its spaces
// folded, cut at a word to about n runes and marked with one "…" (the
// line's own trailing dots, ellipses and punctuation are dropped first,
// so a pasted "wait..." never becomes "wait... …").
func firstWords(content []Content, n int) string {
	for _, c := range content {
		if c.Type != ContentText {
			continue
		}
		line, _, _ := strings.Cut(strings.TrimSpace(c.Body), "\n")
		line = strings.Join(strings.Fields(line), " ")
		r := []rune(line)
		if len(r) <= n {
			return line
		}
		cut := n
		for i := n; i > n/2; i-- {
			if r[i] == ' ' {
				cut = i
				break
			}
		}
		return strings.TrimRight(string(r[:cut]), " ,.;:…") + "…"
	}
	return ""
}

// CheckContent validates the content of a user message.
func CheckContent(content []Content) error {
	if len(content) == 0 {
		return Errorf(CodeBadRequest, "content must have at least one part, e.g. [{\"type\":\"text\",\"body\":\"hello\"}]")
	}
	if len(content) > MaxContentParts {
		return Errorf(CodeBadRequest, "content has %d parts; at most %d are allowed", len(content), MaxContentParts)
	}
	text, empty := 0, true
	for i, c := range content {
		switch c.Type {
		case ContentText:
			text += len(c.Body)
			if strings.TrimSpace(c.Body) != "" {
				empty = false
			}
			if !utf8.ValidString(c.Body) {
				return Errorf(CodeBadRequest, "content[%d].body must be valid UTF-8", i)
			}
		case ContentImage:
			switch c.Mime {
			case "image/png", "image/jpeg", "image/gif", "image/webp":
			default:
				return Errorf(CodeBadRequest, "content[%d].mime must be image/png, image/jpeg, image/gif or image/webp, got %q", i, c.Mime)
			}
			if base64.StdEncoding.DecodedLen(len(c.Data)) > MaxImageBytes+3 {
				return Errorf(CodeTooLarge, "content[%d] image is larger than %d bytes", i, MaxImageBytes)
			}
			if _, err := base64.StdEncoding.DecodeString(c.Data); err != nil || c.Data == "" {
				return Errorf(CodeBadRequest, "content[%d].data must be standard base64 image data", i)
			}
			empty = false
		case ContentResource:
			if err := checkResourceRef(c.Server, c.URI); err != nil {
				return Errorf(CodeBadRequest, "content[%d]: %s", i, err.(*Error).Message)
			}
			if len(c.Mime) > maxResourceMime {
				return Errorf(CodeBadRequest, "content[%d].mime is %d bytes long; at most %d are allowed", i, len(c.Mime), maxResourceMime)
			}
			empty = false
		case ContentFile:
			switch {
			case c.FileID == "" && c.Data == "":
				return Errorf(CodeBadRequest, "content[%d] (a file) needs file_id (a file you uploaded) or data (its bytes in base64, with name)", i)
			case c.FileID != "" && c.Data != "":
				return Errorf(CodeBadRequest, "content[%d] (a file) has both file_id and data; send one", i)
			case len(c.FileID) > 200 || len(c.Mime) > maxResourceMime:
				return Errorf(CodeBadRequest, "content[%d].file_id or .mime is too long", i)
			}
			empty = false
		default:
			return Errorf(CodeBadRequest, "content[%d].type %q is unknown; use \"text\", \"image\", \"resource\" or \"file\"", i, c.Type)
		}
	}
	if text > MaxTextBytes {
		return Errorf(CodeTooLarge, "content has %d bytes of text; at most %d are allowed", text, MaxTextBytes)
	}
	if empty {
		return Errorf(CodeBadRequest, "content must not be empty: send some text, an image or a file")
	}
	return nil
}
