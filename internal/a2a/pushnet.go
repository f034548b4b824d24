package a2a

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/agentik/agentik/internal/agent"
)

// Where pushes may go: a member chooses a push config's URL, and agentik
// POSTs from inside the operator's network, so a URL that reaches
// loopback, link-local (cloud metadata at 169.254.169.254), private,
// shared (CGNAT), unspecified or multicast addresses is refused when the
// config is made, and again when a push connects, after DNS resolution
// (a name may resolve elsewhere by then: the dialer's Control hook sees
// the address it connects to). The operator opens such addresses with
// AGENTIK_PUSH_ALLOW (PushAllow).

// PushAllow is the operator's allow-list (AGENTIK_PUSH_ALLOW): host names
// and IP prefixes that pushes may reach although they are internal.
type PushAllow struct {
	Hosts []string       // host names, lowercase: a URL naming one is pushed to wherever it resolves
	Nets  []netip.Prefix // addresses
}

// ParsePushAllow reads AGENTIK_PUSH_ALLOW: comma-separated host names,
// IP addresses and CIDR prefixes.
func ParsePushAllow(s string) (PushAllow, error) {
	var a PushAllow
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if p, err := netip.ParsePrefix(f); err == nil {
			a.Nets = append(a.Nets, p.Masked())
			continue
		}
		if ip, err := netip.ParseAddr(f); err == nil {
			a.Nets = append(a.Nets, netip.PrefixFrom(ip.Unmap(), ip.Unmap().BitLen()))
			continue
		}
		if strings.ContainsAny(f, "/:@ ") {
			return PushAllow{}, fmt.Errorf("%q is neither a host name, an IP address nor a CIDR prefix (e.g. hooks.internal, 10.0.0.5, 10.1.0.0/16)", f)
		}
		a.Hosts = append(a.Hosts, strings.ToLower(strings.TrimSuffix(f, ".")))
	}
	return a, nil
}

func (a PushAllow) host(h string) bool {
	h = strings.ToLower(strings.TrimSuffix(h, "."))
	for _, x := range a.Hosts {
		if x == h {
			return true
		}
	}
	return false
}

// internalNets are the addresses no push reaches unless allowed, besides
// what netip's predicates name.
var internalNets = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),     // "this network"
	netip.MustParsePrefix("100.64.0.0/10"), // shared address space (CGNAT; some clouds' metadata)
	netip.MustParsePrefix("192.0.0.0/24"),  // IETF protocol assignments
	netip.MustParsePrefix("198.18.0.0/15"), // benchmarking
	netip.MustParsePrefix("240.0.0.0/4"),   // reserved, broadcast
}

var nat64 = netip.MustParsePrefix("64:ff9b::/96")

// refused says why ip is no address to push to ("" when it is one).
func (a PushAllow) refused(ip netip.Addr) string {
	ip = ip.Unmap()
	for _, p := range a.Nets {
		if p.Contains(ip) {
			return ""
		}
	}
	if nat64.Contains(ip) { // an IPv4 address behind a NAT64 prefix
		b := ip.As16()
		return a.refused(netip.AddrFrom4([4]byte(b[12:])))
	}
	switch {
	case ip.IsLoopback():
		return "a loopback address"
	case ip.IsLinkLocalUnicast(), ip.IsLinkLocalMulticast():
		return "a link-local address"
	case ip.IsPrivate():
		return "a private address"
	case ip.IsUnspecified():
		return "the unspecified address"
	case ip.IsMulticast(), ip.IsInterfaceLocalMulticast():
		return "a multicast address"
	}
	for _, p := range internalNets {
		if p.Contains(ip) {
			return "a reserved address"
		}
	}
	return ""
}

// errPushAddr is a push refused for where it would connect.
var errPushAddr = errors.New("push address refused")

// checkURL checks a push config's URL when it is made: http(s), and a
// host that is allowed, or whose every address is one to push to.
func (a PushAllow) checkURL(ctx context.Context, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return rpcErr(codeInvalidParams, "url must be an http(s) URL, got %q", agent.Shorten(raw, 100))
	}
	host := u.Hostname()
	if a.host(host) {
		return nil
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if why := a.refused(ip); why != "" {
			return refusedURL(raw, ip, why)
		}
		return nil
	}
	lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	ips, err := net.DefaultResolver.LookupNetIP(lctx, "ip", host)
	if err != nil {
		return rpcErr(codeInvalidParams, "url's host %q does not resolve (%v): give a receiver this server can reach", agent.Shorten(host, 80), err)
	}
	for _, ip := range ips {
		if why := a.refused(ip); why != "" {
			return refusedURL(raw, ip, why)
		}
	}
	return nil
}

func refusedURL(raw string, ip netip.Addr, why string) error {
	return rpcErr(codeInvalidParams, "url %q reaches %s, %s, where agentik does not push: give a public receiver (the operator may open internal ones with AGENTIK_PUSH_ALLOW)",
		agent.Shorten(raw, 100), ip, why)
}

// client is the HTTP client of pushes: no proxy from the environment (it
// would connect for us, past the check), no redirects (a receiver could
// send us on inward), timeout per try, and a dialer whose Control hook
// refuses every address a push may not reach, after DNS resolution; a
// host on the allow-list is dialled without it.
func (a PushAllow) client(timeout time.Duration) *http.Client {
	guarded := &net.Dialer{Timeout: timeout, Control: func(network, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("%w: %s: %v", errPushAddr, address, err)
		}
		if why := a.refused(ap.Addr()); why != "" {
			return fmt.Errorf("%w: %s is %s (AGENTIK_PUSH_ALLOW opens it)", errPushAddr, ap.Addr(), why)
		}
		return nil
	}}
	open := &net.Dialer{Timeout: timeout}
	tr := &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if host, _, err := net.SplitHostPort(addr); err == nil && a.host(host) {
				return open.DialContext(ctx, network, addr)
			}
			return guarded.DialContext(ctx, network, addr)
		},
		TLSHandshakeTimeout:   timeout,
		ResponseHeaderTimeout: timeout,
		MaxIdleConnsPerHost:   2,
		IdleConnTimeout:       time.Minute,
	}
	return &http.Client{Transport: tr, Timeout: timeout, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}
