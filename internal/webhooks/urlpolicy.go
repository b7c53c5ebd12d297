package webhooks

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"code.dny.dev/ssrf"
)

// MaxURLLength is the longest webhook URL accepted (spec 02 "Limits").
const MaxURLLength = 2000

// URLReason names why a webhook URL was refused; it is the `reason` of `invalid_url`.
type URLReason string

const (
	ReasonNotAbsolute URLReason = "not_absolute" // not an absolute URL with a host
	ReasonNotHTTPS    URLReason = "not_https"    // scheme other than https
	ReasonTooLong     URLReason = "too_long"     // over MaxURLLength characters
	ReasonUserInfo    URLReason = "has_userinfo" // user:password@ in the authority
	ReasonPrivateHost URLReason = "private_host" // a private, loopback or otherwise non-public host
	ReasonBadHost     URLReason = "bad_host"     // a host that is not a valid public name or address
	ReasonNotUTF8     URLReason = "not_utf8"     // bytes that are no UTF-8 text (a query value's %FF decoded)
	ReasonUnreadable  URLReason = "unreadable"   // a query whose webhook value could not be decoded at all
)

// URLError is returned by URL checks. Handlers answer it as `invalid_url` with `reason`
// (400 at registration and on submit, 409 on a re-challenge of a stored URL).
type URLError struct {
	Reason URLReason
	Detail string
}

func (e *URLError) Error() string {
	if e.Detail == "" {
		return "webhooks: invalid url: " + string(e.Reason)
	}
	return "webhooks: invalid url: " + string(e.Reason) + ": " + e.Detail
}

// Message says why the URL was refused in words written for the person who sent it: no Go
// error chain, no package names. Detail (the host or length at fault) is added where it helps.
func (e *URLError) Message() string {
	var m string
	switch e.Reason {
	case ReasonNotAbsolute:
		m = "The webhook URL must be an absolute https URL with a host, such as https://example.com/hooks."
	case ReasonNotHTTPS:
		m = "The webhook URL must use https."
	case ReasonTooLong:
		m = fmt.Sprintf("The webhook URL is longer than %d characters.", MaxURLLength)
	case ReasonUserInfo:
		m = "The webhook URL must not carry a user name or password (user:password@)."
	case ReasonPrivateHost:
		m = "The webhook URL must name a public host; private, loopback and local addresses are never contacted."
	case ReasonBadHost:
		m = "The webhook URL's host is not a valid public host name or address."
	case ReasonNotUTF8:
		m = "The webhook URL is not UTF-8 text once its query value is decoded: send it percent-encoded as a query value (% as %25), so that an escape in it such as %FF stays as written."
	case ReasonUnreadable:
		m = "The webhook URL could not be read from the query: a % starts a two-digit hex escape (send % itself as %25) and parameters are separated by & alone (send ; as %3B)."
	default:
		m = "The webhook URL is not an acceptable webhook address."
	}
	if shownDetail(e) {
		m += " (" + e.Detail + ")"
	}
	return m
}

// shownDetail reports whether e's Detail may follow its message: a short fixed phrase or the
// refused address, never the text of a parser's error (which reads as a Go error chain).
func shownDetail(e *URLError) bool {
	d := e.Detail
	if d == "" || e.Reason == ReasonTooLong || e.Reason == ReasonNotAbsolute || len(d) > 100 || !utf8.ValidString(d) {
		return false
	}
	if _, err := netip.ParseAddr(d); err == nil {
		return true
	}
	return !strings.ContainsAny(d, ":\"\n")
}

// URLPolicy decides which webhook destinations may be contacted. The zero value is the
// production policy: public hosts only. Two relaxations exist: loopback receivers for Go
// tests, obtained only from code holding a test handle (AllowLoopbackForTests), and the
// operator's explicit allow-list of private ranges (AllowPrivate, serve
// --webhook-allow-private) for test rigs and private deployments whose receivers sit on a
// private network. Neither relaxes https.
type URLPolicy struct {
	allowLoopback bool
	allowed       []netip.Prefix
}

// AllowPrivate returns the production policy that also accepts destinations inside the given
// ranges (IP literals in the URL, and names resolving there when dialled). Names reserved for
// private use (localhost, .internal, …) stay refused: a receiver on an allowed range is named
// by its address or by a public name.
func AllowPrivate(prefixes ...netip.Prefix) URLPolicy {
	out := make([]netip.Prefix, 0, len(prefixes))
	for _, p := range prefixes {
		out = append(out, p.Masked())
	}
	return URLPolicy{allowed: out}
}

// ParseAllowList reads the operator's comma-separated list of ranges (CIDR, or a single
// address) for AllowPrivate. An empty list is the production policy.
func ParseAllowList(list string) (URLPolicy, error) {
	var prefixes []netip.Prefix
	for _, part := range strings.Split(list, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if p, err := netip.ParsePrefix(part); err == nil {
			prefixes = append(prefixes, p)
			continue
		}
		a, err := netip.ParseAddr(part)
		if err != nil {
			return URLPolicy{}, fmt.Errorf("%q is neither a range (10.0.0.0/8, fd00::/8) nor an address", part)
		}
		prefixes = append(prefixes, netip.PrefixFrom(a, a.BitLen()))
	}
	return AllowPrivate(prefixes...), nil
}

// Allowed is the operator's allow-list of private ranges (empty in production).
func (p URLPolicy) Allowed() []netip.Prefix { return append([]netip.Prefix(nil), p.allowed...) }

// TB is the part of testing.TB that AllowLoopbackForTests asks for, so that only test code
// (which holds a *testing.T) can relax the policy.
type TB interface {
	Helper()
	Name() string
}

// AllowLoopbackForTests returns a policy that also accepts loopback IP literals (127.0.0.0/8,
// ::1) on any port, so tests can deliver to httptest servers. Names such as localhost stay
// refused.
func AllowLoopbackForTests(t TB) URLPolicy {
	t.Helper()
	return URLPolicy{allowLoopback: true}
}

// AllowsLoopback reports whether the test-only allowance is on.
func (p URLPolicy) AllowsLoopback() bool { return p.allowLoopback }

// guardian is the address check shared by the static URL check and the dialer, so that both
// refuse exactly the same ranges: every IANA special-purpose IPv4 prefix (private, loopback,
// link-local, CGNAT, 0.0.0.0/8, multicast, documentation, ...) and every IPv6 address outside
// global unicast (loopback, unique-local, link-local, IPv4-mapped, NAT64).
func (p URLPolicy) guardian() *ssrf.Guardian {
	opts := []ssrf.Option{ssrf.WithAnyPort()}
	var v4, v6 []netip.Prefix
	if p.allowLoopback {
		v4 = append(v4, netip.MustParsePrefix("127.0.0.0/8"))
		v6 = append(v6, netip.MustParsePrefix("::1/128"))
	}
	for _, a := range p.allowed {
		if a.Addr().Is4() {
			v4 = append(v4, a)
		} else {
			v6 = append(v6, a)
		}
	}
	if len(v4) > 0 {
		opts = append(opts, ssrf.WithAllowedV4Prefixes(v4...))
	}
	if len(v6) > 0 {
		opts = append(opts, ssrf.WithAllowedV6Prefixes(v6...))
	}
	return ssrf.New(opts...)
}

// ValidateURL checks a webhook URL under the production policy: absolute https, at most 2000
// characters, no user-info, and a publicly reachable host in every recognised spelling. It
// returns a *URLError. The resolved address is checked again when dialling (see Sender).
func ValidateURL(raw string) error { return URLPolicy{}.Validate(raw) }

// privateSuffixes are name suffixes that never name a public host: special-use names of
// RFC 6761/6762/8375, the ICANN-reserved .internal, and suffixes common on private networks.
var privateSuffixes = []string{
	"localhost", "local", "internal", "home.arpa", "localdomain", "lan", "intranet", "corp",
	"home", "private", "test", "invalid", "example", "onion",
}

// Validate checks raw under this policy; see ValidateURL.
func (p URLPolicy) Validate(raw string) error {
	if !utf8.ValidString(raw) {
		// No address to call, and a value a job's record cannot hold (PostgreSQL refuses it).
		return &URLError{Reason: ReasonNotUTF8}
	}
	// The limit is in characters (code points of the JSON string), not bytes.
	if n := utf8.RuneCountInString(raw); n > MaxURLLength {
		return &URLError{Reason: ReasonTooLong, Detail: fmt.Sprintf("%d characters, at most %d", n, MaxURLLength)}
	}
	if strings.TrimSpace(raw) != raw || raw == "" {
		return &URLError{Reason: ReasonNotAbsolute}
	}
	u, err := url.Parse(raw)
	if err != nil {
		// The authority may still reveal user-info that made parsing fail (e.g. a bad port).
		if strings.Contains(authority(raw), "@") {
			return &URLError{Reason: ReasonUserInfo}
		}
		return &URLError{Reason: ReasonNotAbsolute, Detail: err.Error()}
	}
	if !u.IsAbs() || u.Opaque != "" || u.Host == "" {
		if u.Scheme != "" && u.Scheme != "https" {
			return &URLError{Reason: ReasonNotHTTPS}
		}
		return &URLError{Reason: ReasonNotAbsolute}
	}
	if u.Scheme != "https" {
		return &URLError{Reason: ReasonNotHTTPS}
	}
	if u.User != nil || strings.Contains(u.Host, "@") {
		return &URLError{Reason: ReasonUserInfo}
	}
	if port := u.Port(); port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			return &URLError{Reason: ReasonBadHost, Detail: "port"}
		}
	}
	return p.checkHost(u.Hostname())
}

func authority(raw string) string {
	_, rest, ok := strings.Cut(raw, "//")
	if !ok {
		return ""
	}
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		rest = rest[:i]
	}
	return rest
}

func (p URLPolicy) checkHost(host string) error {
	host = strings.ToLower(host)
	if host == "" {
		return &URLError{Reason: ReasonBadHost, Detail: "empty host"}
	}
	// An IPv6 literal (brackets already removed), possibly with a zone.
	if strings.Contains(host, ":") {
		addr, err := netip.ParseAddr(host)
		if err != nil {
			return &URLError{Reason: ReasonBadHost, Detail: "ipv6 literal"}
		}
		if addr.Zone() != "" {
			return &URLError{Reason: ReasonPrivateHost, Detail: "zoned address"}
		}
		return p.checkAddr(addr)
	}
	name := strings.TrimSuffix(host, ".")
	if name == "" || strings.HasSuffix(name, ".") {
		return &URLError{Reason: ReasonBadHost}
	}
	// Any numeric spelling of IPv4 (decimal 2130706433, octal 0177.0.0.1, hex 0x7f.1, short
	// 127.1) is read the way inet_aton and browsers read it, then judged as an address.
	if addr, ok, err := parseLooseIPv4(name); ok {
		if err != nil {
			return &URLError{Reason: ReasonBadHost, Detail: err.Error()}
		}
		if perr := p.checkAddr(addr); perr != nil {
			return perr
		}
		if addr.String() != name {
			return &URLError{Reason: ReasonBadHost, Detail: "non-canonical IPv4 spelling"}
		}
		return nil
	}
	labels := strings.Split(name, ".")
	if len(labels) < 2 {
		return &URLError{Reason: ReasonPrivateHost, Detail: "single-label name"}
	}
	for _, s := range privateSuffixes {
		if name == s || strings.HasSuffix(name, "."+s) {
			return &URLError{Reason: ReasonPrivateHost, Detail: "reserved name ." + s}
		}
	}
	if len(name) > 253 {
		return &URLError{Reason: ReasonBadHost, Detail: "name too long"}
	}
	for _, l := range labels {
		if !validLabel(l) {
			return &URLError{Reason: ReasonBadHost, Detail: "label " + strconv.Quote(l)}
		}
	}
	if last := labels[len(labels)-1]; allDigits(last) {
		return &URLError{Reason: ReasonBadHost, Detail: "numeric top-level label"}
	}
	return nil
}

func (p URLPolicy) checkAddr(addr netip.Addr) error {
	if err := p.guardian().SafeAddr(addr); err != nil {
		return &URLError{Reason: ReasonPrivateHost, Detail: addr.String()}
	}
	return nil
}

func validLabel(l string) bool {
	if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
		return false
	}
	for i := 0; i < len(l); i++ {
		c := l[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// parseLooseIPv4 reads s as inet_aton does: one to four parts, each decimal, octal (leading
// 0) or hex (0x), the last part filling the remaining bytes. ok reports whether s looks like
// a numeric address at all (every part numeric); err whether it overflowed.
func parseLooseIPv4(s string) (addr netip.Addr, ok bool, err error) {
	parts := strings.Split(s, ".")
	if len(parts) > 4 {
		for _, p := range parts {
			if _, isNum := parseIPv4Part(p); !isNum {
				return netip.Addr{}, false, nil
			}
		}
		return netip.Addr{}, true, errors.New("too many parts")
	}
	vals := make([]uint64, len(parts))
	for i, p := range parts {
		v, isNum := parseIPv4Part(p)
		if !isNum {
			return netip.Addr{}, false, nil
		}
		vals[i] = v
	}
	var n uint64
	for i, v := range vals[:len(vals)-1] {
		if v > 255 {
			return netip.Addr{}, true, errors.New("part over 255")
		}
		n |= v << (8 * (3 - i))
	}
	last := vals[len(vals)-1]
	if last >= 1<<(8*(5-len(vals))) {
		return netip.Addr{}, true, errors.New("last part too large")
	}
	n |= last
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}), true, nil
}

func parseIPv4Part(p string) (uint64, bool) {
	if p == "" {
		return 0, false
	}
	base := 10
	digits := p
	switch {
	case len(p) >= 2 && (p[:2] == "0x" || p[:2] == "0X"):
		base, digits = 16, p[2:]
		if digits == "" {
			return 0, true // "0x" alone is 0 in inet_aton
		}
	case len(p) > 1 && p[0] == '0':
		base, digits = 8, p[1:]
	}
	for i := 0; i < len(digits); i++ {
		c := digits[i]
		ok := (base == 10 && c >= '0' && c <= '9') || (base == 8 && c >= '0' && c <= '7') ||
			(base == 16 && (c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'))
		if !ok {
			if base == 8 && c >= '8' && c <= '9' {
				return 1 << 40, true // a malformed octal part is still a numeric spelling
			}
			return 0, false
		}
	}
	v, err := strconv.ParseUint(digits, base, 64)
	if err != nil {
		return 1 << 40, true // overflow: numeric, but out of range
	}
	return v, true
}
