package ledger

import (
	"testing"
	"time"
)

// JOB-05 / QST-09: the charge settles at or below the quote; a failure refunds everything.
func TestSettleNeverAboveQuote(t *testing.T) {
	for _, c := range []struct {
		reserved     int64
		done         float64
		charge, back int64
	}{{10, 1, 10, 0}, {10, 0, 0, 10}, {10, 0.5, 5, 5}, {10, 0.01, 1, 9}, {10, 1.5, 10, 0}, {7, 0.999, 7, 0}, {0, 0.5, 0, 0}} {
		ch, back := Settle(c.reserved, c.done)
		if ch != c.charge || back != c.back || ch > c.reserved || ch+back != c.reserved {
			t.Errorf("Settle(%d, %v) = %d, %d; want %d, %d", c.reserved, c.done, ch, back, c.charge, c.back)
		}
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
