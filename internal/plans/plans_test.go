package plans_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/plans"
	"github.com/modelexec/modelexec/internal/ratelimit"
)

// TestI10_PlansRoundTrip: the printed figures load back unchanged, and they are the shipped
// ones (spec 02's bucket table, DESIGN 28's in-flight limits and seats, the allowances).
func TestI10_PlansRoundTrip(t *testing.T) {
	d := plans.Default()
	p, err := plans.Load(bytes.NewReader(d.JSON()))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(p.JSON(), d.JSON()) {
		t.Fatalf("round trip changed the figures:\n%s\n%s", d.JSON(), p.JSON())
	}
	if p.Rates["max"][ratelimit.Generate] != ratelimit.Plans["max"][ratelimit.Generate] || p.InFlight[auth.Ultimate] != 50 ||
		p.MonthlyAllowance(auth.Pro) != auth.DefaultMonthlyAllowance(auth.Pro) || p.Fuse[ratelimit.Generate] != 3 || p.ModelConcurrency != 4 {
		t.Fatalf("default figures: %+v", p)
	}
}

// TestI10_PlansRefused: a broken file is refused with every problem named by its place.
func TestI10_PlansRefused(t *testing.T) {
	good := string(plans.Default().JSON())
	for name, c := range map[string]struct{ from, to, want string }{
		"unknown field":    {`"seats": {`, `"seatz": 1, "seats": {`, "seatz"},
		"negative burst":   {`"burst": 60`, `"burst": -60`, "plans.pro.rates.read.burst: -60 is out of range 0 to 1576800000 at refill 300 per 1m"},
		"bad period":       {`"period": "1m"`, `"period": "soon"`, `.period: "soon" is not a positive duration`},
		"unknown plan":     {`"pro": {`, `"gold": {`, "plans.gold: unknown plan"},
		"zero concurrency": {`"model_concurrency": 4`, `"model_concurrency": 0`, "model_concurrency: must be at least 1"},
		"zero fuse":        {`"generate": 3`, `"generate": 0`, "instance_fuse.generate: must be at least 1"},
		"no seats":         {`"platform": 1000`, `"platform": 0`, "seats:"},
	} {
		t.Run(name, func(t *testing.T) { refusedEdit(t, good, c.from, c.to, c.want) })
	}
}

// TestI30_PlansFiguresBounded: every figure that feeds the limiter's or the ledger's arithmetic
// is refused outside the range that arithmetic holds to, naming the plan, the field and the
// range; the top of each range loads.
func TestI30_PlansFiguresBounded(t *testing.T) {
	good := string(plans.Default().JSON())
	const read = `"read": {
          "burst": 60,
          "refill": 300,
          "period": "1m"
        }`
	for name, c := range map[string]struct{ from, to, want string }{
		"huge burst": {read, `"read": {"burst": 1099511627776, "refill": 300, "period": "1m"}`,
			"plans.pro.rates.read.burst: 1099511627776 is out of range 0 to 1576800000 at refill 300 per 1m"},
		"huge refill": {read, `"read": {"burst": 60, "refill": 1000000000001, "period": "1m"}`,
			"plans.pro.rates.read.refill: 1000000000001 is out of range 0 to 1000000000000"},
		"long period": {read, `"read": {"burst": 60, "refill": 300, "period": "8785h"}`,
			"plans.pro.rates.read.period: 8785h is out of range: more than 0, at most 8784h"},
		"slow fill": {read, `"read": {"burst": 60, "refill": 1, "period": "8784h"}`,
			"plans.pro.rates.read.burst: 60 is out of range 0 to 9 at refill 1 per 8784h"},
		"huge allowance": {`"monthly_allowance": 2000`, `"monthly_allowance": 1000000000001`,
			"plans.pro.monthly_allowance: 1000000000001 is out of range 0 to 1000000000000"},
		"negative allowance": {`"monthly_allowance": 2000`, `"monthly_allowance": -1`,
			"plans.pro.monthly_allowance: -1 is out of range 0 to 1000000000000"},
	} {
		t.Run(name, func(t *testing.T) { refusedEdit(t, good, c.from, c.to, c.want) })
	}
	top := strings.Replace(good, read, `"read": {"burst": 1000000000000, "refill": 1000000000000, "period": "1s"}`, 1)
	top = strings.Replace(top, `"monthly_allowance": 2000`, `"monthly_allowance": 1000000000000`, 1)
	p, err := plans.Load(strings.NewReader(top))
	if err != nil {
		t.Fatal(err)
	}
	if r := p.Rates["pro"][ratelimit.Read]; r.Burst != 1_000_000_000_000 || r.Interval() != time.Microsecond {
		t.Fatalf("top of the range: %+v, interval %v", r, r.Interval())
	}
}

// TestI10_LimiterUsesPlansTable: a limiter given another table enforces its figures.
func TestI10_LimiterUsesPlansTable(t *testing.T) {
	p := plans.Default()
	r := p.Rates["pro"][ratelimit.Read]
	r.Burst = 2
	p.Rates["pro"][ratelimit.Read] = r
	now := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	m := ratelimit.NewMemory(ratelimit.MemoryOptions{Clock: func() time.Time { return now }, Plans: p.Rates})
	req := ratelimit.Request{Key: "k1", Plan: "pro", Bucket: ratelimit.Read, AccountCreated: now.Add(-72 * time.Hour), Cost: 1}
	for i := range 3 {
		d, err := m.Admit(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if d.Limit != 2 || d.Allowed != (i < 2) {
			t.Fatalf("request %d: %+v, want limit 2 and the third refused", i+1, d)
		}
	}
}

// refusedEdit loads good with from replaced by to and wants the error to name want.
func refusedEdit(t *testing.T, good, from, to, want string) {
	t.Helper()
	if !strings.Contains(good, from) {
		t.Fatalf("fixture: %q not in the printed file", from)
	}
	_, err := plans.Load(strings.NewReader(strings.Replace(good, from, to, 1)))
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v, want an error naming %q", err, want)
	}
}
