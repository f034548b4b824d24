package server

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Limits on failed authentication.
const (
	// AuthFailureBurst failed sign-ins or bad API keys from one client
	// address are answered normally; after that the address waits.
	AuthFailureBurst = 10
	// AuthFailureEvery is how often a waiting address earns one more try
	// (so ten a minute at most, sustained).
	AuthFailureEvery = 6 * time.Second
	// maxLimitedClients bounds the table of addresses with failures: past
	// it, addresses whose budget has refilled are forgotten.
	maxLimitedClients = 10000
	// WSConnsPerClient is how many WebSocket connections one client
	// address (an IPv6 /64) may hold at once. A browser tab holds one.
	WSConnsPerClient = 64
)

// clientAddr is the address a request comes from: the peer, or, when the
// peer is a trusted proxy, the last address in X-Forwarded-For that is not
// one of the trusted proxies.
func (s *Server) clientAddr(r *http.Request) netip.Addr {
	peer := addrOf(r.RemoteAddr)
	if !s.trusted(peer) {
		return peer
	}
	hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			return peer // a forged or broken header: judge the proxy itself
		}
		if a = a.Unmap(); !s.trusted(a) {
			return a
		}
	}
	return peer
}

// secure reports whether the browser reached us over TLS: directly, or
// through a trusted proxy that says so in X-Forwarded-Proto.
func (s *Server) secure(r *http.Request) bool {
	if r.TLS != nil {
		return true
	}
	return s.trusted(addrOf(r.RemoteAddr)) && strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}

func (s *Server) trusted(a netip.Addr) bool {
	for _, p := range s.cfg.TrustedProxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

func addrOf(remote string) netip.Addr {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	a, _ := netip.ParseAddr(host)
	return a.Unmap()
}

// failures rate-limits failed authentication per client address: each
// failure spends a token; an address without tokens is refused before
// its key is even looked at.
type failures struct {
	now   func() time.Time
	every rate.Limit
	burst int

	mu sync.Mutex
	m  map[netip.Prefix]*rate.Limiter
}

func newFailures(now func() time.Time, every time.Duration, burst int) *failures {
	return &failures{now: now, every: rate.Every(every), burst: burst, m: map[netip.Prefix]*rate.Limiter{}}
}

// wait is how long a blocked address waits for its next try; 0 when it
// may try now.
func (f *failures) wait(a netip.Addr) time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	l := f.m[block(a)]
	if l == nil {
		return 0
	}
	now := f.now()
	if l.TokensAt(now) >= 1 {
		return 0
	}
	r := l.ReserveN(now, 1)
	d := r.DelayFrom(now)
	r.CancelAt(now)
	return max(d, time.Second)
}

// fail spends one of a's tokens.
func (f *failures) fail(a netip.Addr) {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.now()
	l := f.m[block(a)]
	if l == nil {
		if len(f.m) >= maxLimitedClients {
			for k, v := range f.m {
				if v.TokensAt(now) >= float64(f.burst) {
					delete(f.m, k)
				}
			}
		}
		if len(f.m) >= maxLimitedClients {
			return // flooded with failing addresses: no room to remember more
		}
		l = rate.NewLimiter(f.every, f.burst)
		f.m[block(a)] = l
	}
	l.AllowN(now, 1)
}

// block is the unit a client address is limited as: itself for IPv4, its
// /64 for IPv6 (one host easily has a whole /64).
func block(a netip.Addr) netip.Prefix {
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p
	}
	return netip.PrefixFrom(a, a.BitLen())
}

// counter counts what each client address holds, up to a limit.
type counter struct {
	limit int
	mu    sync.Mutex
	n     map[netip.Prefix]int
}

func newCounter(limit int) *counter { return &counter{limit: limit, n: map[netip.Prefix]int{}} }

// acquire counts one more for a, or reports false at the limit.
func (c *counter) acquire(a netip.Addr) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := block(a)
	if c.n[k] >= c.limit {
		return false
	}
	c.n[k]++
	return true
}

func (c *counter) release(a netip.Addr) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := block(a)
	if c.n[k]--; c.n[k] <= 0 {
		delete(c.n, k)
	}
}
