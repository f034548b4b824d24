// Package envvar expands ${VAR} references in configuration files (mcp.json,
// the providers file) the same way everywhere: ${VAR}, ${VAR:-default} and
// VS Code's ${env:VAR}; an unset or empty VAR without a default is an error.
package envvar

import (
	"fmt"
	"strings"
)

// Expander expands the variables of configuration values.
type Expander struct {
	// Getenv resolves a variable; nil resolves none.
	Getenv func(string) string
	// Seen, when set, receives every non-empty value a variable expanded
	// to: such values are usually secrets, which the caller redacts.
	Seen func(string)
}

// Expand returns s with its variables expanded.
func (x Expander) Expand(s string) (string, error) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		b.WriteString(s[:i])
		rest := s[i+2:]
		j := strings.IndexByte(rest, '}')
		if j < 0 {
			return "", fmt.Errorf("unterminated ${ in %q", s)
		}
		expr := rest[:j]
		s = rest[j+1:]
		name, def, hasDef := strings.Cut(expr, ":-")
		if n, ok := strings.CutPrefix(name, "env:"); ok {
			name = n
		}
		if !validName(name) {
			return "", fmt.Errorf("invalid variable ${%s}", expr)
		}
		v := ""
		if x.Getenv != nil {
			v = x.Getenv(name)
		}
		if v == "" {
			if !hasDef {
				return "", fmt.Errorf("variable %s is not set (write ${%s:-default} for a default)", name, name)
			}
			v = def
		} else if x.Seen != nil {
			x.Seen(v)
		}
		b.WriteString(v)
	}
}

func validName(name string) bool {
	if name == "" {
		return false
	}
	for i, c := range name {
		switch {
		case c == '_', c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}
