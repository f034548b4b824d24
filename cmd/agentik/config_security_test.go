package main

import (
	"io"
	"net/netip"
	"strings"
	"testing"
)

func TestTrustedProxiesConfig(t *testing.T) {
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == "AGENTIK_TRUSTED_PROXIES" {
				return v
			}
			return ""
		}
	}
	c, err := parseConfig(nil, env("10.0.0.0/8, 192.168.1.7 ,::1"), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("192.168.1.7/32"), netip.MustParsePrefix("::1/128")}
	if len(c.TrustedProxies) != len(want) {
		t.Fatalf("got %v, want %v", c.TrustedProxies, want)
	}
	for i := range want {
		if c.TrustedProxies[i] != want[i] {
			t.Errorf("proxy %d: %v, want %v", i, c.TrustedProxies[i], want[i])
		}
	}
	if _, err := parseConfig(nil, env("proxy.local"), io.Discard); err == nil || !strings.Contains(err.Error(), "AGENTIK_TRUSTED_PROXIES") {
		t.Errorf("a host name: err %v", err)
	}
}
