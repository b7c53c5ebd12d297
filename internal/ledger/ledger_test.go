package ledger

import (
	"math/big"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/catalog"
)

// JOB-05 / QST-09: the charge settles at or below the quote; a failure refunds everything.
func TestSettleNeverAboveQuote(t *testing.T) {
	for _, c := range []struct {
		reserved     int64
		done         float64
		charge, back int64
	}{{10, 1, 10, 0}, {10, 0, 0, 10}, {10, 0.5, 5, 5}, {10, 0.01, 1, 9}, {10, 1.5, 10, 0}, {7, 0.999, 7, 0}, {0, 0.5, 0, 0}} {
		ch, back := Settle(c.reserved, c.done, nil)
		if ch != c.charge || back != c.back || ch > c.reserved || ch+back != c.reserved {
			t.Errorf("Settle(%d, %v) = %d, %d; want %d, %d", c.reserved, c.done, ch, back, c.charge, c.back)
		}
	}
}

// PRICE-02 / PRICE-10: a job stopped part way is charged the exact price of its quoted work
// times the share done, rounded up once, never above the quote. image-4b at 2048×2048, 50
// steps: 2048×2048×50/28/1e6 units × 1.2715 = 9.5233… credits, quoted 10; the rounded quote
// times the share (ceil(10 × k/50)) charged one credit more at each of these step counts.
func TestPRICE10_SettlePartlyDoneRoundsOnce(t *testing.T) {
	exact := new(big.Rat).Mul(big.NewRat(2048*2048*50, 28*1_000_000), big.NewRat(12715, 10000))
	for _, c := range []struct {
		steps  int
		charge int64
	}{{21, 4}, {26, 5}, {31, 6}, {36, 7}, {41, 8}, {42, 8}, {46, 9}, {47, 9}, {1, 1}, {25, 5}, {49, 10}, {50, 10}, {0, 0}} {
		done := float64(c.steps) / 50
		ch, back := Settle(10, done, exact)
		// The model's own rule for the steps done, in exact arithmetic.
		rule := new(big.Rat).Mul(big.NewRat(2048*2048*int64(c.steps), 28*1_000_000), big.NewRat(12715, 10000))
		if ch != c.charge || back != 10-ch || ch != min(catalog.CeilCredits(rule), 10) {
			t.Errorf("%d of 50 steps: Settle = %d, %d; want %d, %d (the rule: %s)", c.steps, ch, back, c.charge, 10-c.charge, rule.FloatString(4))
		}
	}
	// The exact price is never charged above the quote; a pass-covered job (nothing reserved)
	// costs nothing.
	if ch, back := Settle(9, 0.99, big.NewRat(10, 1)); ch != 9 || back != 0 {
		t.Errorf("exact above the reserve: %d, %d", ch, back)
	}
	if ch, back := Settle(0, 0.5, exact); ch != 0 || back != 0 {
		t.Errorf("pass-covered job: %d, %d", ch, back)
	}
	// A fraction whose float is a hair above it (5/7 → 0.7142857142857143) costs what the
	// fraction does: 7 credits × 5/7 = 5, not 6.
	if ch, _ := Settle(7, 5.0/7, big.NewRat(7, 1)); ch != 5 {
		t.Errorf("5/7 of 7 credits = %d, want 5", ch)
	}
	if ch, _ := Settle(10, 0.1, big.NewRat(10, 1)); ch != 1 {
		t.Errorf("0.1 of 10 credits = %d, want 1", ch)
	}
}

func TestCoverPromotionThenPassThenMiss(t *testing.T) {
	now := time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)
	pass := Pass{ID: "p1", Name: "studio", Models: []string{"image-4b"}, MaxCredits: 50, UsesLeft: -1}
	if c := Cover([]Pass{pass}, "image-4b", 10, now); !c.Covered() || *c.By != "pass" || c.Pass != "studio" {
		t.Fatalf("pass should cover: %+v", c)
	}
	if c := Cover([]Pass{pass}, "music-turbo", 10, now); c.Covered() || c.Miss.Why != "door" {
		t.Fatalf("door miss: %+v", c)
	}
	if c := Cover([]Pass{pass}, "image-4b", 60, now); c.Covered() || c.Miss.Why != "shape" {
		t.Fatalf("shape miss: %+v", c)
	}
	promo := Pass{ID: "p2", Name: "launch", Promotion: true, UsesLeft: 1}
	if c := Cover([]Pass{pass, promo}, "image-4b", 10, now); *c.By != "promotion" {
		t.Fatalf("promotion first: %+v", c)
	}
	spent := promo
	spent.UsesLeft = 0
	if c := Cover([]Pass{spent}, "image-4b", 10, now); c != nil {
		t.Fatalf("a spent promotion covers nothing: %+v", c)
	}
	expired := pass
	expired.ExpiresAt = now
	if c := Cover([]Pass{expired}, "image-4b", 10, now); c != nil {
		t.Fatalf("an expired pass covers nothing: %+v", c)
	}
}
