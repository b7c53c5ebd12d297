package studio

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// Issue 27 item 1: tickets are signed with a key derived from the deployment secret; any other
// secret, an altered payload or signature, and a late ticket are refused.
func TestI27_Tickets(t *testing.T) {
	now := t0
	clock := func() time.Time { return now }
	tickets := NewTickets([]byte("deployment-secret-0123456789"), clock)
	token, tk, err := tickets.Mint("acct_a", "key123456789", "launch")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(token, "stk_") || tk.Expires != t0.Add(TicketTTL) || TicketTTL > time.Minute {
		t.Fatalf("minted %q %+v", token, tk)
	}
	got, err := tickets.Verify(token)
	if err != nil || got != tk {
		t.Fatalf("verify: %+v %v", got, err)
	}
	other, _, _ := tickets.Mint("acct_a", "key123456789", "launch")
	if other == token {
		t.Fatal("two tickets alike: the nonce is not random")
	}
	payload, sig, _ := strings.Cut(strings.TrimPrefix(token, "stk_"), ".")
	// alter changes the first character of s: every bit of it counts (the last one of an
	// unpadded base64 text may carry bits a decoder ignores), and never to itself.
	alter := func(s string) string {
		if s[0] == 'A' {
			return "B" + s[1:]
		}
		return "A" + s[1:]
	}
	for name, bad := range map[string]string{
		"another secret": func() string {
			s, _, _ := NewTickets([]byte("another-secret-0123456789"), clock).Mint("acct_a", "key123456789", "launch")
			return s
		}(),
		"altered payload": "stk_" + alter(payload) + "." + sig,
		"altered sig":     "stk_" + payload + "." + alter(sig),
		"no prefix":       strings.TrimPrefix(token, "stk_"),
		"no signature":    "stk_" + payload,
		"an API key":      "svc_sk_" + strings.Repeat("a", 64),
		"empty":           "",
	} {
		if _, err := tickets.Verify(bad); !errors.Is(err, ErrTicketInvalid) {
			t.Errorf("%s: %v, want ErrTicketInvalid", name, err)
		}
	}
	now = t0.Add(TicketTTL)
	if _, err := tickets.Verify(token); !errors.Is(err, ErrTicketExpired) {
		t.Fatalf("at expiry: %v, want ErrTicketExpired", err)
	}
}
