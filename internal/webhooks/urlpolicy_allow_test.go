package webhooks

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

// TestI14_AllowPrivate: the operator's allow-list lets webhooks reach the private ranges it
// names, and nothing else: other private ranges, reserved names and plain http stay refused,
// and the production policy is unchanged.
func TestI14_AllowPrivate(t *testing.T) {
	p, err := ParseAllowList(" 10.0.0.0/8, 127.0.0.1 ,fd00::/8")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Allowed()) != 3 {
		t.Fatalf("allowed %v", p.Allowed())
	}
	for _, c := range []struct {
		url  string
		want URLReason // "" accepted
	}{
		{"https://10.1.2.3/hook", ""},
		{"https://127.0.0.1:8443/hook", ""},
		{"https://[fd00::1]/hook", ""},
		{"https://127.0.0.2/hook", ReasonPrivateHost},
		{"https://192.168.1.1/hook", ReasonPrivateHost},
		{"https://localhost/hook", ReasonPrivateHost},
		{"http://10.1.2.3/hook", ReasonNotHTTPS},
		{"https://example.com/hook", ""},
	} {
		err := p.Validate(c.url)
		var ue *URLError
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s refused: %v", c.url, err)
		case c.want != "" && (!errors.As(err, &ue) || ue.Reason != c.want):
			t.Errorf("%s: %v, want %s", c.url, err, c.want)
		}
	}
	if err := ValidateURL("https://10.1.2.3/hook"); err == nil {
		t.Fatal("the production policy accepted a private address")
	}
	if err := p.guardian().SafeAddr(mustAddr(t, "10.9.9.9")); err != nil {
		t.Fatalf("the dialler refuses an allowed address: %v", err)
	}
	if err := p.guardian().SafeAddr(mustAddr(t, "172.16.0.1")); err == nil {
		t.Fatal("the dialler accepts a range not allowed")
	}
	for _, bad := range []string{"10.0.0.0/33", "not-an-address", "10.0.0"} {
		if _, err := ParseAllowList(bad); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("ParseAllowList(%q) = %v", bad, err)
		}
	}
	if p, err := ParseAllowList(""); err != nil || len(p.Allowed()) != 0 {
		t.Fatalf("empty list: %v %v", p.Allowed(), err)
	}
}

func mustAddr(t *testing.T, s string) netip.Addr {
	t.Helper()
	a, err := netip.ParseAddr(s)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
