package hooks

import (
	"net/netip"
	"strings"
	"sync"

	"github.com/dont-cli/dont/internal/errs"
)

// AddrPolicy says which addresses a delivery may dial. Public unicast
// addresses always; an address in a private, loopback, link-local,
// shared (CGNAT), unspecified, multicast or otherwise special range only
// if one of Allow contains it (config `[hooks] allow_private`,
// DONT_HOOKS_ALLOW_PRIVATE). A receiver on this machine therefore needs
// allow_private = ["127.0.0.1/32"].
type AddrPolicy struct {
	Allow []netip.Prefix
}

// ParsePrefixes reads a comma-separated list of CIDR prefixes or single
// addresses.
func ParsePrefixes(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if a, err := netip.ParseAddr(f); err == nil {
			out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
			continue
		}
		p, err := netip.ParsePrefix(f)
		if err != nil {
			return nil, errs.E(errs.ConfigInvalid, "allow_private: not a CIDR prefix: "+quote(f)).Unmet("allow_private lists prefixes such as 127.0.0.1/32")
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// special are the ranges that are not public unicast, parsed on first
// use: parsing an IPv6 prefix interns its zone (package unique), which
// starts the runtime's cleanup goroutines, and a CLI command that sends
// no hook should not pay for that at start.
var special = sync.OnceValue(func() []netip.Prefix {
	var out []netip.Prefix
	for _, s := range []string{
		"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
		"192.0.0.0/24", "192.0.2.0/24", "192.88.99.0/24", "192.168.0.0/16", "198.18.0.0/15", "198.51.100.0/24",
		"203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4", "255.255.255.255/32",
		"::/128", "::1/128", "64:ff9b::/96", "64:ff9b:1::/48", "100::/64", "2001::/23", "2001:db8::/32",
		"fc00::/7", "fe80::/10", "ff00::/8",
	} {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
})

// Private reports whether a is outside public unicast space.
func Private(a netip.Addr) bool {
	a = a.Unmap()
	for _, p := range special() {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// Check refuses a private address the policy does not allow.
func (p AddrPolicy) Check(a netip.Addr) error {
	a = a.Unmap()
	if !Private(a) {
		return nil
	}
	for _, al := range p.Allow {
		if al.Contains(a) {
			return nil
		}
	}
	return errs.E(InvalidURL, "refused: "+a.String()+" is a private or special address").
		Unmet("a hook targets a public address unless allow_private lists its range")
}

// IsLoopbackHost reports a loopback host name or literal.
func IsLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return true
	}
	a, ok := literal(host)
	return ok && a.IsLoopback()
}

func literal(host string) (netip.Addr, bool) {
	a, err := netip.ParseAddr(strings.Trim(host, "[]"))
	if err != nil {
		return netip.Addr{}, false
	}
	return a.WithZone("").Unmap(), true
}
