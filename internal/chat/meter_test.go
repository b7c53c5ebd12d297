package chat

import (
	"math"
	"testing"

	"github.com/modelexec/modelexec/internal/ledger"
)

// The engine settles ceil(quote × done): Fraction must land on the cost exactly, never above.
func TestFractionSettlesToTheCost(t *testing.T) {
	for _, q := range []int64{1, 3, 7, 49, 100, 1000, 12345, 99991} {
		for _, c := range []int64{1, 2, q / 3, q / 2, q - 1, q} {
			if c <= 0 || c > q {
				continue
			}
			got, refund := ledger.Settle(q, Fraction(c, q), nil)
			if got != c || got+refund != q {
				t.Fatalf("quote %d cost %d: settled %d (refund %d)", q, c, got, refund)
			}
		}
	}
	if d := Fraction(0, 10); d <= 0 || math.Ceil(10*d) != 1 {
		t.Fatalf("Fraction(0, 10) = %v", d)
	}
}

func TestHubDeliversInOrder(t *testing.T) {
	h := NewHub()
	s := h.Subscribe("chat_k1")
	other := h.Subscribe("chat_k2")
	w := h.Writer("chat_k1")
	w("a")
	w("b")
	<-s.Ready()
	if got := s.Drain(); len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Fatalf("drained %q", got)
	}
	if got := other.Drain(); len(got) != 0 {
		t.Fatalf("another job's subscriber got %q", got)
	}
	s.Close()
	other.Close()
	w("c") // nobody listening: dropped
	if len(h.subs) != 0 {
		t.Fatalf("subscriptions left: %v", h.subs)
	}
}
