package web

import (
	"strconv"
	"strings"
)

func emailOf(e string) string {
	if e == "" {
		return ""
	}
	return " · " + e
}

// formatTokens writes n with thousands separators.
func formatTokens(n int64) string {
	s := strconv.FormatInt(n, 10)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

func usageText(u PersonRow) string {
	if u.ResetsAt == "" {
		return formatTokens(u.Used) + " tokens in the last 31 days; no budget"
	}
	return formatTokens(u.Used) + " tokens used of " + u.Budget + "; resets " + u.ResetsAt
}

func lastUsedText(k KeyRow) string {
	if k.LastUsed == "" {
		return "never used"
	}
	return "used " + k.LastUsed
}
