package tool

import (
	"strings"
	"testing"
)

// TestPerUserConfig: "auth" and ${user.secret} in mcp.json, and the bad
// entries each stopped naming the server and the field.
func TestPerUserConfig(t *testing.T) {
	t.Parallel()
	env := func(k string) string { return map[string]string{"ORG": "acme"}[k] }
	c, err := ParseConfig([]byte(`{"mcpServers":{"gh":{"url":"https://gh.example/mcp","auth":"per_user","headers":{"Authorization":"Bearer ${user.secret}","X-Org":"${ORG}"}}}}`), env)
	if err != nil {
		t.Fatal(err)
	}
	sc := c.Servers[0]
	if !sc.PerUser || !sc.UserSecret {
		t.Fatalf("per_user entry %+v", sc)
	}
	if got := userConfig(sc, "tok-ann").Headers; got["Authorization"] != "Bearer tok-ann" || got["X-Org"] != "acme" {
		t.Fatalf("ann's headers %v", got)
	}
	if got := userConfig(sc, "").Headers; len(got) != 1 || got["X-Org"] != "acme" {
		t.Fatalf("headers without a secret %v", got)
	}
	if got := userConfig(sc, "tok-ann").redact("refused tok-ann"); got != "refused [redacted]" {
		t.Fatalf("redacted %q", got)
	}
	for _, bad := range []struct{ entry, want string }{
		{`{"url":"https://x.example","auth":"mine"}`, `auth: unknown value "mine"`},
		{`{"url":"https://x.example","headers":{"Authorization":"Bearer ${user.secret}"}}`, `headers.Authorization: ${user.secret}`},
		{`{"command":"srv","auth":"per_user"}`, `auth: "per_user" needs a remote server`},
		{`{"url":"https://x.example","auth":1}`, `auth: must be a string`},
	} {
		_, err := ParseConfig([]byte(`{"mcpServers":{"s":`+bad.entry+`}}`), env)
		if err == nil || !strings.Contains(err.Error(), `server "s"`) || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: %v, want %q", bad.entry, err, bad.want)
		}
	}
}
