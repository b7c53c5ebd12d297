package webhooks

import (
	"context"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"

	"golang.org/x/net/dns/dnsmessage"
)

func urlReason(err error) URLReason {
	var ue *URLError
	if errors.As(err, &ue) {
		return ue.Reason
	}
	return ""
}

// Proves WH-01, LIM-05, SUB-08 (shape: absolute https, at most 2000 characters, no user-info).
func TestWH01_URLShape(t *testing.T) {
	long := "https://example.com/" + strings.Repeat("a", MaxURLLength-len("https://example.com/"))
	cases := []struct {
		url  string
		want URLReason
	}{
		{"https://hooks.example.com/receive", ""},
		{"https://hooks.example.com:8443/receive?x=1", ""},
		{"https://8.8.8.8/hook", ""},
		{"https://[2606:4700:4700::1111]/hook", ""},
		{long, ""},
		{long + "b", ReasonTooLong},
		{"http://hooks.example.com/", ReasonNotHTTPS},
		{"ftp://hooks.example.com/", ReasonNotHTTPS},
		{"HTTPS://hooks.example.com/", ""},
		{"/relative/path", ReasonNotAbsolute},
		{"hooks.example.com/path", ReasonNotAbsolute},
		{"https:hooks.example.com", ReasonNotAbsolute},
		{"", ReasonNotAbsolute},
		{" https://hooks.example.com/", ReasonNotAbsolute},
		{"https://user:pass@hooks.example.com/", ReasonUserInfo},
		{"https://user@hooks.example.com/", ReasonUserInfo},
		{"https://user:pass@hooks.example.com:99999/", ReasonUserInfo},
		{"https://hooks.example.com:0/", ReasonBadHost},
		{"https://exa mple.com/", ReasonNotAbsolute},
		{"https://-bad-.example.com/", ReasonBadHost},
		{"https://bücher.example.com/", ReasonBadHost},
		{"https://hooks.example.com/\xff", ReasonNotUTF8},
		{"https://example.123/", ReasonBadHost},
		{"https:///path", ReasonNotAbsolute},
	}
	for _, c := range cases {
		got := urlReason(ValidateURL(c.url))
		if got != c.want {
			t.Errorf("ValidateURL(%.60q) reason %q, want %q", c.url, got, c.want)
		}
	}
}

// Proves WH-02, LIM-05, SUB-08: every recognised private form is refused.
func TestWH02_PrivateHostsRefused(t *testing.T) {
	hosts := []string{
		// names
		"localhost", "LOCALHOST", "localhost.", "api.localhost", "printer.local", "db.internal",
		"router.home.arpa", "home.arpa", "nas.localdomain", "intranet", "box.lan",
		// private, loopback, link-local, CGNAT, this-network IPv4
		"10.0.0.1", "10.255.255.255", "172.16.0.1", "172.31.255.254", "192.168.1.1", "127.0.0.1",
		"127.255.255.254", "169.254.169.254", "100.64.0.1", "100.127.255.255", "0.0.0.0", "0.1.2.3",
		"224.0.0.1", "255.255.255.255", "192.0.0.8", "198.18.0.1",
		// numeric spellings of loopback and metadata addresses
		"2130706433", "0x7f000001", "0x7f.1", "0x7f.0.0.1", "017700000001", "0177.0.0.1", "0177.0.0.01",
		"127.1", "127.0.1", "2852039166", "0xa9.0xfe.0xa9.0xfe", "012.0.0.1", "0", "0x0",
		// IPv6 loopback, unspecified, unique-local, link-local, IPv4-mapped and -compatible, NAT64
		"[::1]", "[0:0:0:0:0:0:0:1]", "[::]", "[fc00::1]", "[fd12:3456:789a::1]", "[fe80::1]",
		"[fe80::1%25eth0]", "[::ffff:127.0.0.1]", "[::ffff:7f00:1]", "[::ffff:10.0.0.1]",
		"[::ffff:8.8.8.8]", "[::127.0.0.1]", "[64:ff9b::7f00:1]", "[ff02::1]", "[2001:db8::1]",
	}
	for _, host := range hosts {
		raw := "https://" + host + "/hook"
		err := ValidateURL(raw)
		if r := urlReason(err); r != ReasonPrivateHost {
			t.Errorf("ValidateURL(%q) = %v (reason %q), want private_host", raw, err, r)
		}
	}
	// Percent-encoded hosts are refused too (Go's parser rejects them outright).
	if ValidateURL("https://%6c%6fcalhost/hook") == nil {
		t.Error("percent-encoded localhost passed")
	}
	// Numeric spellings that decode to public addresses are still refused (not canonical).
	for _, host := range []string{"134744072", "0x8.0x8.0x8.0x8", "8.8.2056"} {
		if r := urlReason(ValidateURL("https://" + host + "/")); r != ReasonBadHost {
			t.Errorf("%s: reason %q, want bad_host", host, r)
		}
	}
}

// Proves the test-only allowance: loopback literals only, names still refused, and the zero
// value (what configuration produces) refuses loopback.
func TestWH02_LoopbackAllowanceIsTestOnly(t *testing.T) {
	var prod URLPolicy
	if prod.AllowsLoopback() || urlReason(prod.Validate("https://127.0.0.1:8443/")) != ReasonPrivateHost {
		t.Fatal("zero policy must refuse loopback")
	}
	p := AllowLoopbackForTests(t)
	for _, ok := range []string{"https://127.0.0.1:8443/", "https://[::1]:8443/"} {
		if err := p.Validate(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"https://localhost:8443/", "https://10.0.0.1/", "https://[fe80::1]/", "http://127.0.0.1/"} {
		if p.Validate(bad) == nil {
			t.Errorf("%s passed with the loopback allowance", bad)
		}
	}
}

// fakeDNS answers every A query with addr over an in-memory stream connection.
func fakeDNS(addr [4]byte) *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, address string) (net.Conn, error) {
		client, server := net.Pipe()
		go func() {
			defer server.Close()
			var l [2]byte
			if _, err := ioReadFull(server, l[:]); err != nil {
				return
			}
			q := make([]byte, binary.BigEndian.Uint16(l[:]))
			if _, err := ioReadFull(server, q); err != nil {
				return
			}
			var msg dnsmessage.Message
			if err := msg.Unpack(q); err != nil || len(msg.Questions) == 0 {
				return
			}
			msg.Header.Response, msg.Header.Authoritative = true, true
			if msg.Questions[0].Type == dnsmessage.TypeA {
				msg.Answers = []dnsmessage.Resource{{
					Header: dnsmessage.ResourceHeader{Name: msg.Questions[0].Name, Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET, TTL: 60},
					Body:   &dnsmessage.AResource{A: addr},
				}}
			}
			out, err := msg.Pack()
			if err != nil {
				return
			}
			binary.BigEndian.PutUint16(l[:], uint16(len(out)))
			server.Write(append(l[:], out...))
		}()
		return client, nil
	}}
}

func ioReadFull(c net.Conn, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := c.Read(b[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// Proves WH-52: a public-looking name that resolves to a private address passes the static
// check but is refused on the resolved address when dialling; the receiver sees nothing.
func TestWH52_ResolvedPrivateAddressNotContacted(t *testing.T) {
	rcv := newReceiver(t, &fakeClock{t: t0})
	_, port, _ := net.SplitHostPort(rcv.srv.Listener.Addr().String())
	target := "https://example.com:" + port + "/hook" // the httptest certificate names example.com
	if err := ValidateURL(target); err != nil {
		t.Fatalf("static check should pass a public name: %v", err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(rcv.srv.Certificate())
	prod := NewSender(SenderConfig{RootCAs: pool, Resolver: fakeDNS([4]byte{127, 0, 0, 1})})
	ans := prod.Post(context.Background(), target, http.Header{}, []byte(`{}`))
	if ans.StatusCode != 0 || ans.Failure != FailBlocked {
		t.Fatalf("answer %+v, want blocked_address", ans)
	}
	if n := len(rcv.all()); n != 0 {
		t.Fatalf("receiver contacted %d times", n)
	}
	// Other private answers are refused the same way.
	for _, a := range [][4]byte{{10, 0, 0, 7}, {169, 254, 169, 254}, {192, 168, 0, 1}, {100, 64, 1, 1}} {
		s := NewSender(SenderConfig{Resolver: fakeDNS(a)})
		if ans := s.Post(context.Background(), "https://hooks.example.com/hook", http.Header{}, nil); ans.Failure != FailBlocked {
			t.Errorf("%v: %+v, want blocked", a, ans)
		}
	}
	// The resolver is the only difference: with the test allowance the same name is delivered.
	test := NewSender(SenderConfig{Policy: AllowLoopbackForTests(t), RootCAs: pool, Resolver: fakeDNS([4]byte{127, 0, 0, 1})})
	if ans := test.Post(context.Background(), target, http.Header{}, []byte(`{}`)); ans.StatusCode != 200 {
		t.Fatalf("with allowance: %+v", ans)
	}
	// A per-request URL refused by policy at send time is never dialled.
	if ans := prod.Post(context.Background(), "https://10.0.0.1/hook", http.Header{}, nil); ans.Failure != FailURLRefused {
		t.Fatalf("static refusal at send: %+v", ans)
	}
}

// Proves WH-01, LIM-05: the 2000 limit counts characters, not bytes: a URL of 2000
// characters passes even when some take two bytes in UTF-8, and one of 2001 does not.
func TestWH01_LengthCountsCharacters(t *testing.T) {
	prefix := "https://example.com/"
	wide := prefix + strings.Repeat("é", MaxURLLength-len(prefix))
	if len(wide) <= MaxURLLength {
		t.Fatalf("test URL is only %d bytes", len(wide))
	}
	if err := ValidateURL(wide); err != nil {
		t.Fatalf("2000 characters (%d bytes) refused: %v", len(wide), err)
	}
	if got := urlReason(ValidateURL(wide + "é")); got != ReasonTooLong {
		t.Fatalf("2001 characters: reason %q, want %q", got, ReasonTooLong)
	}
}
