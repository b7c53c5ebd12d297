package studio

import (
	"testing"
	"time"
)

// Issue 27 item 5: AdmitEdit, the one decision of the edit budget, by operations and bytes over
// a window refilled evenly.
func TestI27_AdmitEdit(t *testing.T) {
	l := EditLimits{Window: 10 * time.Second, Ops: 600, Bytes: 1000}
	full := NewEditBudget(l, t0)
	spent := EditBudget{Ops: 0, Bytes: 0, At: t0}
	for _, c := range []struct {
		name       string
		budget     EditBudget
		at         time.Duration
		bytes, ops int
		ok         bool
		left       EditBudget
	}{
		{"a key on a full budget", full, 0, 20, 1, true, EditBudget{599, 980, t0}},
		{"the last operation", EditBudget{1, 1000, t0}, 0, 20, 1, true, EditBudget{0, 980, t0}},
		{"one operation too many", spent, 0, 1, 1, false, spent},
		{"too many bytes", EditBudget{600, 10, t0}, 0, 11, 1, false, EditBudget{600, 10, t0}},
		{"a tenth of the window refills a tenth", spent, time.Second, 100, 60, true, EditBudget{0, 0, t0.Add(time.Second)}},
		{"refill stops at full", EditBudget{590, 1000, t0}, time.Minute, 0, 1, true, EditBudget{599, 1000, t0.Add(time.Minute)}},
		{"a burst of the whole budget", full, 0, 1000, 600, true, EditBudget{0, 0, t0}},
		{"more than the budget can hold", full, time.Hour, 1001, 1, false, EditBudget{600, 1000, t0.Add(time.Hour)}},
	} {
		got, ok := AdmitEdit(l, c.budget, t0.Add(c.at), c.bytes, c.ops)
		if ok != c.ok || got != c.left {
			t.Errorf("%s: %v %+v, want %v %+v", c.name, ok, got, c.ok, c.left)
		}
	}
	// Twenty keys a second for a minute never meets the default budget.
	b := NewEditBudget(DefaultEditLimits, t0)
	for i := 1; i <= 20*60; i++ {
		var ok bool
		if b, ok = AdmitEdit(DefaultEditLimits, b, t0.Add(time.Duration(i)*50*time.Millisecond), 30, 1); !ok {
			t.Fatalf("key %d refused", i)
		}
	}
}
