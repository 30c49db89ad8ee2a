package hooks

import (
	"net/netip"
	"strings"
	"sync"

	"code.dny.dev/ssrf"
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

// guardian holds the special-purpose ranges of code.dny.dev/ssrf, a
// maintained list generated from IANA's IPv4 and IPv6 special-purpose
// registries: every IPv6 address outside global unicast (2000::/3) is
// special, which covers each IPv6 spelling of an IPv4 address
// (IPv4-compatible ::a.b.c.d, SIIT ::ffff:0:a.b.c.d, NAT64 64:ff9b::/96)
// as well as 6to4 (2002::/16) and Teredo (2001::/32) inside it. Ports
// and networks are checked elsewhere (CheckURL, the dialer), so any is
// fine here. Made on first use, so that a command that sends no hook does
// not build it.
var guardian = sync.OnceValue(func() *ssrf.Guardian { return ssrf.New(ssrf.WithAnyPort(), ssrf.WithAnyNetwork()) })

// Private reports whether a is outside public unicast space. An
// IPv4-mapped address (::ffff:a.b.c.d) is judged as its IPv4 address.
func Private(a netip.Addr) bool {
	return guardian().SafeAddr(a.WithZone("").Unmap()) != nil
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
