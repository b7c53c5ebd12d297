package httpapi

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// Proxies are the addresses of the load balancers in front of the service (serve
// --trusted-proxies). Behind one, every connection comes from the balancer: the client's own
// address is what the balancer appended to X-Forwarded-For. The header is believed only from
// a trusted peer, and only as far back as trusted hops go: a client may write anything at its
// start.
type Proxies []netip.Prefix

// ParseProxies reads a list of addresses or CIDR ranges ("127.0.0.1", "10.0.0.0/8", "::1").
func ParseProxies(list []string) (Proxies, error) {
	var ps Proxies
	for _, s := range list {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if p, err := netip.ParsePrefix(s); err == nil {
			ps = append(ps, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(s)
		if err != nil {
			return nil, fmt.Errorf("trusted proxy %q is neither an address nor a CIDR range (e.g. 10.0.0.0/8)", s)
		}
		ps = append(ps, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
	}
	return ps, nil
}

func (ps Proxies) trusts(a netip.Addr) bool {
	a = a.Unmap()
	for _, p := range ps {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// ClientAddr is the address a request came from: the connection's peer, or, when that peer
// is a trusted proxy, the last address of X-Forwarded-For that is not one (read from the
// right: each proxy appends the peer it saw).
func (ps Proxies) ClientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	peer, err := netip.ParseAddr(host)
	if err != nil || len(ps) == 0 || !ps.trusts(peer) {
		return host
	}
	hops := r.Header.Values("X-Forwarded-For")
	for i := len(hops) - 1; i >= 0; i-- {
		parts := strings.Split(hops[i], ",")
		for j := len(parts) - 1; j >= 0; j-- {
			a, err := netip.ParseAddr(strings.TrimSpace(parts[j]))
			if err != nil {
				return host // a hop we cannot read: trust nothing before it
			}
			if !ps.trusts(a) {
				return a.Unmap().String()
			}
		}
	}
	return host
}
