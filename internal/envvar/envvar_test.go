package envvar

import (
	"strings"
	"testing"
)

func TestExpand(t *testing.T) {
	env := map[string]string{"A": "alpha", "KEY": "sk-1234"}
	var seen []string
	x := Expander{Getenv: func(k string) string { return env[k] }, Seen: func(v string) { seen = append(seen, v) }}
	for _, tc := range []struct{ in, want, err string }{
		{"plain", "plain", ""},
		{"${A}/${env:KEY}", "alpha/sk-1234", ""},
		{"${B:-beta}", "beta", ""},
		{"${B:-}", "", ""},
		{"${B}", "", "B is not set"},
		{"${A", "", "unterminated"},
		{"${1A}", "", "invalid variable"},
	} {
		got, err := x.Expand(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("Expand(%q) error %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("Expand(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	if strings.Join(seen, ",") != "alpha,sk-1234" {
		t.Errorf("seen %v: the values variables expanded to, defaults excluded", seen)
	}
}
