package ratelimit

import (
	"testing"
	"time"
)

// TestRL13_MultiplierFloor: 0.2 of a burst below 5 floors at 1; zero stays zero; refill 5x slower.
func TestRL13_MultiplierFloor(t *testing.T) {
	for burst, want := range map[int64]int64{0: 0, 1: 1, 2: 1, 4: 1, 5: 1, 9: 1, 10: 2, 200: 40, 50000: 10000} {
		r := Rate{Burst: burst, Refill: 60, Period: time.Minute}.newAccount()
		if r.Burst != want {
			t.Errorf("burst %d under 0.2 = %d, want %d", burst, r.Burst, want)
		}
		if burst > 0 && r.Interval() != 5*time.Second {
			t.Errorf("burst %d: interval %v, want 5 s (60/min → 12/min)", burst, r.Interval())
		}
	}
	if r := (Rate{Refill: 60, Period: time.Minute}).newAccount(); !r.Zero() {
		t.Errorf("zero capacity not zero under the multiplier: %+v", r)
	}
}
