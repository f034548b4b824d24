package a2a

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestPushAddresses: what a push may reach, by address; the allow-list
// opens prefixes and IPs; a NAT64 address is judged by its IPv4 one.
func TestPushAddresses(t *testing.T) {
	allow, err := ParsePushAllow(" 10.1.0.0/16, 127.0.0.1, hooks.internal. ")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		ip       string
		refused  bool
		allowing bool // refused unless allowed
	}{
		{"8.8.8.8", false, false},
		{"2606:4700::1111", false, false},
		{"127.0.0.1", true, true},
		{"127.0.0.2", true, false},
		{"::1", true, false},
		{"::ffff:127.0.0.1", true, true},
		{"169.254.169.254", true, false},
		{"fe80::1", true, false},
		{"10.0.0.1", true, false},
		{"10.1.2.3", true, true},
		{"172.16.0.1", true, false},
		{"192.168.1.1", true, false},
		{"fd00::1", true, false},
		{"0.0.0.0", true, false},
		{"::", true, false},
		{"100.100.100.200", true, false},
		{"224.0.0.1", true, false},
		{"64:ff9b::a9fe:a9fe", true, false}, // 169.254.169.254 behind NAT64
		{"64:ff9b::808:808", false, false},  // 8.8.8.8 behind NAT64
	} {
		ip := netip.MustParseAddr(tt.ip)
		if got := (PushAllow{}).refused(ip) != ""; got != tt.refused {
			t.Errorf("%s: refused %v, want %v", tt.ip, got, tt.refused)
		}
		if got := allow.refused(ip) != ""; got != (tt.refused && !tt.allowing) {
			t.Errorf("%s with %+v: refused %v, want %v", tt.ip, allow, got, tt.refused && !tt.allowing)
		}
	}
	if !allow.host("HOOKS.internal") || allow.host("other.internal") {
		t.Errorf("hosts %v", allow.Hosts)
	}
	if _, err := ParsePushAllow("http://x/"); err == nil {
		t.Error("a URL in AGENTIK_PUSH_ALLOW was taken")
	}
}

// TestPushURLAtCreate: a config's URL is refused when it names or
// resolves to an internal address, in JSON-RPC's invalid-params shape
// naming the address and AGENTIK_PUSH_ALLOW.
func TestPushURLAtCreate(t *testing.T) {
	ctx := context.Background()
	for _, u := range []string{"http://127.0.0.1:9/hook", "http://localhost:9/hook", "http://[::1]/", "http://169.254.169.254/latest/meta-data", "http://10.0.0.1/", "http://0.0.0.0:80/"} {
		err := PushAllow{}.checkURL(ctx, u)
		var re *rpcError
		if !errors.As(err, &re) || re.Code != codeInvalidParams || !strings.Contains(re.Message, "AGENTIK_PUSH_ALLOW") {
			t.Errorf("%s: %v, want invalid params naming AGENTIK_PUSH_ALLOW", u, err)
		}
	}
	if err := (PushAllow{Hosts: []string{"localhost"}}).checkURL(ctx, "http://localhost:9/hook"); err != nil {
		t.Errorf("an allowed host: %v", err)
	}
	if err := (PushAllow{}).checkURL(ctx, "http://93.184.215.14/hook"); err != nil {
		t.Errorf("a public address: %v", err)
	}
}

// TestPushDialRefusesAfterResolution: the push client checks the address
// it connects to, after DNS: a name that resolves to loopback is refused
// at connect time (what a rebinding name does after the create check);
// the allow-list opens the address, or the name.
func TestPushDialRefusesAfterResolution(t *testing.T) {
	var got atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { got.Add(1) }))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	byName := "http://localhost:" + u.Port() + "/hook"
	post := func(a PushAllow, target string) error {
		resp, err := a.client(5*time.Second).Post(target, "application/json", strings.NewReader("{}"))
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	for _, target := range []string{srv.URL, byName} {
		if err := post(PushAllow{}, target); !errors.Is(err, errPushAddr) {
			t.Errorf("%s without the allow-list: %v, want refused at connect", target, err)
		}
	}
	if n := got.Load(); n != 0 {
		t.Fatalf("the receiver got %d pushes through the guard", n)
	}
	if err := post(PushAllow{Nets: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}}, byName); err != nil {
		t.Errorf("loopback allowed: %v", err)
	}
	if err := post(PushAllow{Hosts: []string{"localhost"}}, byName); err != nil {
		t.Errorf("localhost allowed by name: %v", err)
	}
	if n := got.Load(); n != 2 {
		t.Errorf("the receiver got %d pushes, want 2", n)
	}
}
