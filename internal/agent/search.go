package agent

import (
	"context"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Limits of a search.
const (
	// MaxSearchQueryBytes caps a search query: a search box holds a few
	// words; a longer query is a mistake or an attack and is bad_request.
	MaxSearchQueryBytes = 1024
	// MaxSearchTerms caps the words of a query (each is one more index
	// lookup).
	MaxSearchTerms = 32
	// DefaultSearchLimit and MaxSearchLimit bound the results of a search.
	DefaultSearchLimit = 20
	MaxSearchLimit     = 100
	// PrefixMinRunes is the length from which a query's last word also
	// matches the words it begins ("agen" finds "agentik"): a shorter
	// prefix matches too many words to be useful or fast.
	PrefixMinRunes = 3
)

// Markers around the matched words of a SearchResult's Snippet: the
// snippet is HTML-escaped text in which only these tags are markup.
const (
	MarkStart = "<mark>"
	MarkEnd   = "</mark>"
)

// SearchQuery is a parsed search: the words every result contains (the
// last one as a prefix when Prefix is set), at most Limit results.
type SearchQuery struct {
	Terms  []string
	Prefix bool
	Limit  int
	// Owner: only that user's conversations ("" everyone's); set by
	// Runner.Search from the principal (access.go).
	Owner string
	// Projects: also the conversations of these projects (the member's
	// reach, access.go); only with Owner.
	Projects []string
}

// SearchResult is one conversation that matches a search, with its best
// match: the title (MessageID empty) or one message's text.
type SearchResult struct {
	ConversationID string    `wire:"conversation_id,*"`
	Title          string    `wire:"title,*"`
	MessageID      string    `wire:"message_id,*?"`
	Snippet        string    `wire:"snippet,*"`
	Date           time.Time `wire:"date,*"` // the message's; the conversation's updated_at for a title
}

// MarshalJSON implements json.Marshaler.
func (r SearchResult) MarshalJSON() ([]byte, error) { return encodeWire(r) }

// UnmarshalJSON implements json.Unmarshaler.
func (r *SearchResult) UnmarshalJSON(b []byte) error { return decodeWire(b, r) }

// Searcher finds stored conversations by the words of their titles and of
// their user and assistant messages, best match first, one result per
// conversation. Temp conversations are never stored, so never found.
type Searcher interface {
	Search(ctx context.Context, q SearchQuery) ([]SearchResult, error)
}

// ParseSearch checks a search box's text and limit (0: the default) and
// splits the text into words: runs of letters, digits and marks. Anything
// else (quotes, operators, punctuation) only separates words, so no input
// reaches a database as query syntax. A blank or too long text, or a limit
// out of range, is bad_request; text without any word is a query without
// terms, which finds nothing.
func ParseSearch(text string, limit int) (SearchQuery, error) {
	if len(text) > MaxSearchQueryBytes {
		return SearchQuery{}, Errorf(CodeBadRequest, "the search query is %d bytes long; at most %d are allowed", len(text), MaxSearchQueryBytes)
	}
	if !utf8.ValidString(text) {
		return SearchQuery{}, Errorf(CodeBadRequest, "the search query must be valid UTF-8")
	}
	if strings.TrimSpace(text) == "" {
		return SearchQuery{}, Errorf(CodeBadRequest, "the search query must not be empty")
	}
	if limit == 0 {
		limit = DefaultSearchLimit
	}
	if limit < 1 || limit > MaxSearchLimit {
		return SearchQuery{}, Errorf(CodeBadRequest, "limit must be between 1 and %d, got %d", MaxSearchLimit, limit)
	}
	terms := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && !unicode.IsMark(r)
	})
	if len(terms) > MaxSearchTerms {
		return SearchQuery{}, Errorf(CodeBadRequest, "the search query has %d words; at most %d are allowed", len(terms), MaxSearchTerms)
	}
	q := SearchQuery{Terms: terms, Limit: limit}
	if n := len(terms); n > 0 {
		last := []rune(text)
		endsInWord := unicode.IsLetter(last[len(last)-1]) || unicode.IsDigit(last[len(last)-1]) || unicode.IsMark(last[len(last)-1])
		q.Prefix = endsInWord && utf8.RuneCountInString(terms[n-1]) >= PrefixMinRunes
	}
	return q, nil
}

// MessageText is the searchable text of a message: the text parts of a
// user or assistant message, one per line; "" for every other message.
func MessageText(m Message) string {
	if m.Type != MessageUser && m.Type != MessageAssistant {
		return ""
	}
	var b strings.Builder
	for _, c := range m.Content {
		if c.Type != ContentText || c.Body == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(c.Body)
	}
	return b.String()
}
