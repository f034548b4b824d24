package tool

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
)

// MaxNameLen is the longest tool name the model sees: OpenAI's limit.
const MaxNameLen = 64

// nameSep joins the server's and the tool's names.
const nameSep = "__"

// sanitize maps every rune outside [A-Za-z0-9_-] to '_'.
func sanitize(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, c := range s {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '-':
			b.WriteRune(c)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

// shortHash is 8 hex digits identifying s.
func shortHash(s string) string {
	h := fnv.New32a()
	h.Write([]byte(s))
	return fmt.Sprintf("%08x", h.Sum32())
}

// withSuffix cuts name so that name + "_" + suffix fits MaxNameLen.
func withSuffix(name, suffix string) string {
	if keep := MaxNameLen - 1 - len(suffix); len(name) > keep {
		name = name[:keep]
	}
	return name + "_" + suffix
}

// baseName is the name the model sees for a server's tool, before
// uniqueness: <server>__<tool> sanitized, and cut to MaxNameLen with a hash
// of the original when longer.
func baseName(server, tool string) string {
	raw := server + nameSep + tool
	name := sanitize(raw)
	if len(name) > MaxNameLen {
		name = withSuffix(name, shortHash(raw))
	}
	return name
}

// uniqueName returns baseName(server, tool), or, if taken already, a variant
// with a hash of the original names and then a counter.
func uniqueName(server, tool string, taken map[string]bool) string {
	name := baseName(server, tool)
	if !taken[name] {
		return name
	}
	raw := server + nameSep + tool
	name = withSuffix(baseName(server, tool), shortHash(raw))
	for i := 2; taken[name]; i++ {
		name = withSuffix(baseName(server, tool), shortHash(raw)+"_"+strconv.Itoa(i))
	}
	return name
}
