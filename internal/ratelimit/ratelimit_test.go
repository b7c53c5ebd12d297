package ratelimit_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/ratelimit"
	"github.com/modelexec/modelexec/internal/ratelimit/ratelimittest"
)

// TestRL05_RL08_PlanTableMatchesSpec: the data table says what spec 02 says, for every plan and
// bucket, and every plan has every bucket (interactive figures are ours, documented at Plans).
func TestRL05_RL08_PlanTableMatchesSpec(t *testing.T) {
	if len(ratelimit.Plans) != len(ratelimittest.Spec) {
		t.Fatalf("plans %d, spec %d", len(ratelimit.Plans), len(ratelimittest.Spec))
	}
	for plan, buckets := range ratelimittest.Spec {
		for b, want := range buckets {
			got := ratelimit.Plans[plan][b]
			if got.Burst != want.Burst || (want.Burst > 0 && got.Interval() != want.Period/time.Duration(want.Refill)) {
				t.Errorf("%s %s = %+v, spec %+v", plan, b, got, want)
			}
		}
		for _, b := range ratelimit.Buckets {
			if _, ok := ratelimit.Plans[plan][b]; !ok {
				t.Errorf("%s has no %s bucket", plan, b)
			}
		}
	}
	if !ratelimit.Plans["free"][ratelimit.Interactive].Zero() {
		t.Errorf("free interactive should be none (capacity 0)")
	}
}

// TestRL04_EgressCost: whole megabytes of 10^6 bytes, rounded up, minimum 1.
func TestRL04_EgressCost(t *testing.T) {
	for n, want := range map[int64]int64{
		-1: 1, 0: 1, 1: 1, 999_999: 1, 1_000_000: 1, 1_000_001: 2, 5_000_000_000: 5000,
		1<<63 - 1: (1<<63-1)/1_000_000 + 1,
	} {
		if got := ratelimit.EgressCost(n); got != want {
			t.Errorf("EgressCost(%d) = %d, want %d", n, got, want)
		}
	}
}

func TestPolicyErrors(t *testing.T) {
	now := ratelimittest.Start
	if _, err := ratelimit.Policy("gold", ratelimit.Read, time.Time{}, now); !errors.Is(err, ratelimit.ErrUnknownPlan) {
		t.Errorf("unknown plan: %v", err)
	}
	if _, err := ratelimit.Policy("pro", "upload", time.Time{}, now); !errors.Is(err, ratelimit.ErrUnknownBucket) {
		t.Errorf("unknown bucket: %v", err)
	}
	adm := ratelimit.NewAdmission(ratelimit.NewMemory(ratelimit.MemoryOptions{}), ratelimit.AdmissionOptions{})
	_, o, err := adm.Check(context.Background(), ratelimit.Request{Key: "k", Plan: "gold", Bucket: ratelimit.Read}, now)
	if o != ratelimit.OutcomeInvalid || o.Status() != 500 || !errors.Is(err, ratelimit.ErrUnknownPlan) {
		t.Errorf("unknown plan through Admission: %v %v", o, err)
	}
	if adm.Guard.Tripped(now) {
		t.Errorf("a bad plan must not count as a limiter failure")
	}
}

// TestRL15_Headers: delta seconds rounded up; Unix seconds rounded up; never negative.
func TestRL15_Headers(t *testing.T) {
	now := time.Unix(1_800_000_000, 250_000_000)
	cases := []struct {
		d                ratelimit.Decision
		reset, unixReset string
	}{
		{ratelimit.Decision{Limit: 60, Remaining: 60}, "0", "1800000001"},
		{ratelimit.Decision{Limit: 60, Remaining: 59, ResetAfter: 200 * time.Millisecond}, "1", "1800000001"},
		{ratelimit.Decision{Limit: 60, Remaining: 59, ResetAfter: 750 * time.Millisecond}, "1", "1800000001"},
		{ratelimit.Decision{Limit: 60, Remaining: 59, ResetAfter: 751 * time.Millisecond}, "1", "1800000002"},
		{ratelimit.Decision{Limit: 5000, Remaining: -3, ResetAfter: 2 * time.Second}, "2", "1800000003"},
	}
	for _, c := range cases {
		h := ratelimit.Headers(c.d, now)
		names := []string{"RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"}
		for i, n := range names {
			if h[i].Name != n {
				t.Fatalf("header %d = %s, want %s", i, h[i].Name, n)
			}
		}
		lim, rem := fmt.Sprint(c.d.Limit), fmt.Sprint(max(c.d.Remaining, 0))
		if h[0].Value != lim || h[3].Value != lim || h[1].Value != rem || h[4].Value != rem || h[2].Value != c.reset || h[5].Value != c.unixReset {
			t.Errorf("%+v → %v, want reset %s, x-reset %s", c.d, h, c.reset, c.unixReset)
		}
	}
}

// TestRL14_OutcomeMapping: status, code, reason and Retry-After of every outcome.
func TestRL14_OutcomeMapping(t *testing.T) {
	spent := ratelimit.Decision{RetryAfter: 2100 * time.Millisecond}
	tiny := ratelimit.Decision{RetryAfter: time.Millisecond}
	cases := []struct {
		o      ratelimit.Outcome
		d      ratelimit.Decision
		status int
		code   string
		reason string
		retry  int64
	}{
		{ratelimit.OutcomeAdmitted, ratelimit.Decision{}, 0, "", "", 0},
		{ratelimit.OutcomeInstanceFuse, ratelimit.Decision{}, 429, "rate_limited", "instance_fuse", 1},
		{ratelimit.OutcomeBucketSpent, spent, 429, "rate_limited", "bucket_spent", 3},
		{ratelimit.OutcomeBucketSpent, tiny, 429, "rate_limited", "bucket_spent", 1},
		{ratelimit.OutcomeRequestTooLarge, ratelimit.Decision{}, 413, "request_too_large", "", 0},
		{ratelimit.OutcomePlanHasNoAPIGenerate, ratelimit.Decision{}, 403, "plan_has_no_api_generate", "", 0},
		{ratelimit.OutcomeUnavailable, ratelimit.Decision{}, 503, "limiter_unavailable", "", 5},
		{ratelimit.OutcomeInvalid, ratelimit.Decision{}, 500, "internal", "", 0},
	}
	for _, c := range cases {
		if c.o.Status() != c.status || c.o.Code() != c.code || c.o.Reason() != c.reason || c.o.RetryAfterSeconds(c.d) != c.retry {
			t.Errorf("%s → %d %q %q %d, want %d %q %q %d", c.o, c.o.Status(), c.o.Code(), c.o.Reason(), c.o.RetryAfterSeconds(c.d), c.status, c.code, c.reason, c.retry)
		}
	}
}

// flaky fails on the calls it is told to.
type flaky struct {
	mu   sync.Mutex
	fail bool
}

func (f *flaky) set(fail bool) { f.mu.Lock(); f.fail = fail; f.mu.Unlock() }

func (f *flaky) Admit(context.Context, ratelimit.Request) (ratelimit.Decision, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail {
		return ratelimit.Decision{}, errors.New("dial tcp 127.0.0.1:6379: connection refused")
	}
	return ratelimit.Decision{Allowed: true, Limit: 60, Remaining: 59}, nil
}

// TestRL17_GuardWindow: the guard trips on the fifth failure among the last ten calls, not on
// failures that have left the window, stays tripped thirty seconds after the last failure that
// kept the condition, and the fuse follows it.
func TestRL17_GuardWindow(t *testing.T) {
	ctx := context.Background()
	now := ratelimittest.Start
	r := ratelimit.Request{Key: "k", Plan: "pro", Bucket: ratelimit.Read, Cost: 1}
	f := &flaky{}
	g := ratelimit.NewGuard(f)
	call := func(fail bool) error {
		f.set(fail)
		_, err := g.Admit(ctx, r, now)
		return err
	}
	// F F F F then 6 successes: 4 in 10
	for _, fail := range []bool{true, true, true, true, false, false, false, false, false, false} {
		call(fail)
	}
	if g.Tripped(now) {
		t.Fatal("tripped on 4 failures in 10")
	}
	// the four old failures leave the window as new calls come: F S F S F S F S keeps at most 4
	for i := 0; i < 8; i++ {
		call(i%2 == 0)
	}
	if g.Tripped(now) {
		t.Fatal("tripped on 4 failures in the last 10")
	}
	err := call(true) // 5 failures among the last 10: F S F S F S F S F (+ the S before)
	if !errors.Is(err, ratelimit.ErrUnavailable) {
		t.Fatalf("failure not wrapped in ErrUnavailable: %v", err)
	}
	if !g.Tripped(now) || g.Trips() != 1 {
		t.Fatalf("not tripped on the fifth failure in ten (trips %d)", g.Trips())
	}
	fuse := ratelimit.NewFuse(ratelimit.FuseOptions{Guard: g})
	if fuse.Limit(ratelimit.Generate, now) != 1 || fuse.Limit(ratelimit.Read, now.Add(29*time.Second)) != 1 {
		t.Fatal("fuse not at 1 while tripped")
	}
	if fuse.Limit(ratelimit.Read, now.Add(30*time.Second)) != 30 {
		t.Fatal("fuse still low after thirty seconds")
	}
	// a failure while the condition holds pushes the end out
	now = now.Add(20 * time.Second)
	call(true)
	if !g.Tripped(now.Add(29*time.Second)) || g.Trips() != 1 {
		t.Fatal("continued failures did not extend the trip")
	}
	// recovery: successes push the failures out; no new trip
	for i := 0; i < 10; i++ {
		call(false)
	}
	if g.Tripped(now.Add(30*time.Second)) || g.Trips() != 1 {
		t.Fatal("still tripped after recovery")
	}
}

// TestRL17_CancelledCallerIsNotAFailure: a client that went away says nothing about the limiter.
func TestRL17_CancelledCallerIsNotAFailure(t *testing.T) {
	f := &flaky{fail: true}
	g := ratelimit.NewGuard(f)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for i := 0; i < 10; i++ {
		if _, err := g.Admit(ctx, ratelimit.Request{Key: "k", Plan: "pro", Bucket: ratelimit.Read}, ratelimittest.Start); !errors.Is(err, ratelimit.ErrUnavailable) {
			t.Fatalf("cancelled call: %v, want ErrUnavailable", err)
		}
	}
	if g.Tripped(ratelimittest.Start) {
		t.Fatal("cancelled calls tripped the guard")
	}
}

// TestRL16_FuseBoundedMemory: counts of past seconds are swept and the cap holds.
func TestRL16_FuseBoundedMemory(t *testing.T) {
	f := ratelimit.NewFuse(ratelimit.FuseOptions{MaxKeys: 64 * 100})
	now := ratelimittest.Start
	for i := 0; i < 20_000; i++ {
		if !f.Allow(fmt.Sprint("key", i), ratelimit.Read, now) {
			t.Fatalf("fresh key %d refused", i)
		}
		if f.Len() > 64*100 {
			t.Fatalf("fuse holds %d counts, cap %d", f.Len(), 64*100)
		}
	}
	later := now.Add(time.Second)
	for i := 0; i < 64*10; i++ {
		f.Allow(fmt.Sprint("new", i), ratelimit.Read, later)
	}
	if n := f.Len(); n > 64*100 {
		t.Fatalf("fuse holds %d counts after a second passed", n)
	}
	// unknown bucket: no fuse (the limiter refuses it)
	for i := 0; i < 100; i++ {
		if !f.Allow("k", "upload", now) {
			t.Fatal("unknown bucket fused")
		}
	}
}

// TestRL01_MemoryEvictsIdleKeys: a key whose bucket has refilled is dropped, and past MaxKeys the
// entries nearest to full go first, so memory stays bounded whatever the key count.
func TestRL01_MemoryEvictsIdleKeys(t *testing.T) {
	clock := ratelimittest.NewClock()
	const maxKeys = 64 * 50
	m := ratelimit.NewMemory(ratelimit.MemoryOptions{Clock: clock.Now, MaxKeys: maxKeys})
	ctx := context.Background()
	for i := 0; i < 10*maxKeys; i++ {
		if d, err := m.Admit(ctx, ratelimit.Request{Key: fmt.Sprint("k", i), Plan: "pro", Bucket: ratelimit.Write, Cost: 1}); err != nil || !d.Allowed {
			t.Fatalf("fresh key %d: %+v %v", i, d, err)
		}
		if m.Len() > maxKeys {
			t.Fatalf("holds %d entries, cap %d", m.Len(), maxKeys)
		}
	}
	// an active key (far from full) survives the churn of new keys
	hot := ratelimit.Request{Key: "hot", Plan: "pro", Bucket: ratelimit.Write, Cost: 20}
	if d, _ := m.Admit(ctx, hot); !d.Allowed {
		t.Fatal("hot key refused")
	}
	for i := 0; i < 10*maxKeys; i++ {
		m.Admit(ctx, ratelimit.Request{Key: fmt.Sprint("churn", i), Plan: "pro", Bucket: ratelimit.Write, Cost: 1})
	}
	hot.Cost = 1
	if d, _ := m.Admit(ctx, hot); d.Allowed {
		t.Fatal("hot key's spent bucket was evicted before keys nearer to full")
	}
	// once every bucket is full again, new inserts sweep the idle entries away
	clock.Advance(time.Minute)
	for i := 0; i < 64*64; i++ {
		m.Admit(ctx, ratelimit.Request{Key: fmt.Sprint("late", i), Plan: "pro", Bucket: ratelimit.Write, Cost: 1})
	}
	if n := m.Len(); n > 64*64+64*64 {
		t.Fatalf("holds %d entries after every old bucket refilled", n)
	}
}

// TestI30_RateBounds: Check names every figure outside the range the bucket arithmetic holds to,
// with the range; GCRA over figures past those bounds (built in code, not read from a file)
// saturates instead of wrapping, and a refill faster than a token a microsecond regains one a
// microsecond instead of dividing by zero. Proves issue 30 item 1.
func TestI30_RateBounds(t *testing.T) {
	for _, c := range []struct {
		rate ratelimit.Rate
		want []string
	}{
		{ratelimit.Rate{Burst: 60, Refill: 300, Period: time.Minute}, nil},
		{ratelimit.Rate{Period: time.Minute}, nil}, // none (capacity 0)
		{ratelimit.Rate{Burst: 1e12, Refill: 1e12, Period: time.Second}, nil},
		{ratelimit.Rate{Burst: 1 << 40, Refill: 60, Period: time.Minute},
			[]string{"burst: 1099511627776 is out of range 0 to 315360000 at refill 60 per 1m (an empty bucket must fill again within 87600h)"}},
		{ratelimit.Rate{Burst: -1, Refill: 1e12 + 1, Period: 8785 * time.Hour}, []string{
			"refill: 1000000000001 is out of range 0 to 1000000000000 (0 is a bucket that admits nothing)",
			"period: 8785h is out of range: more than 0, at most 8784h",
			"burst: -1 is out of range 0 to 1000000000000 (0 is a bucket that admits nothing)"}},
	} {
		if got := c.rate.Check(); fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%+v: Check = %q, want %q", c.rate, got, c.want)
		}
	}
	now := int64(1e18)
	for _, rate := range []ratelimit.Rate{
		{Burst: 1 << 40, Refill: 60, Period: time.Minute},
		{Burst: 1 << 62, Refill: 1, Period: 1 << 62},
		{Burst: 1e12, Refill: 1e12, Period: time.Second},
	} {
		d, st := ratelimit.GCRA(rate, ratelimit.State{}, now, 1, false)
		if !d.Allowed || d.Remaining < 0 || d.ResetAfter <= 0 || st.TAT <= now {
			t.Errorf("%+v: first request %+v, state %+v", rate, d, st)
		}
		d, _ = ratelimit.GCRA(rate, st, now, rate.Burst, false)
		if d.Remaining < 0 || d.ResetAfter < 0 || d.RetryAfter < 0 {
			t.Errorf("%+v: a whole bucket's worth %+v", rate, d)
		}
		// the same debt, written at one token a nanosecond, rescales to at most a full bucket
		d, _ = ratelimit.GCRA(rate, ratelimit.State{TAT: st.TAT, Interval: 1}, now, 1, false)
		if d.Remaining < 0 || d.ResetAfter < 0 || d.RetryAfter < 0 {
			t.Errorf("%+v: a whole bucket's worth %+v", rate, d)
		}
	}
	if i := (ratelimit.Rate{Burst: 1e12, Refill: 1e12, Period: time.Second}).Interval(); i != time.Microsecond {
		t.Errorf("a trillion a second regains one token every %v, want 1µs", i)
	}
}

// TestRL13_GCRAReadsDebtInTokens: a stored bucket means tokens whatever rate is in force when it
// is read. A debt written under another interval (the first day's, another plan's) is rescaled
// to the rate in force, capped at the bucket; a state without its interval reads as before.
func TestRL13_GCRAReadsDebtInTokens(t *testing.T) {
	const now = int64(1e15)
	s := int64(time.Second)
	proGenerate := ratelimit.Rate{Burst: 5, Refill: 20, Period: time.Minute} // a token every 3 s
	freeRead := ratelimit.Rate{Burst: 20, Refill: 60, Period: time.Minute}   // a token every 1 s
	for _, c := range []struct {
		name      string
		rate      ratelimit.Rate
		st        ratelimit.State
		cost      int64
		want      ratelimit.Decision
		wantState ratelimit.State
	}{
		{"first day's 14/15 token read under the plan's 3 s", proGenerate, ratelimit.State{TAT: now + 14*s, Interval: 15 * s}, 1,
			ratelimit.Decision{Allowed: true, Limit: 5, Remaining: 3, ResetAfter: 5800 * time.Millisecond},
			ratelimit.State{TAT: now + 5800*time.Millisecond.Nanoseconds(), Interval: 3 * s}},
		{"no interval stored: read as written", proGenerate, ratelimit.State{TAT: now + 14*s}, 1,
			ratelimit.Decision{Refusal: ratelimit.BucketSpent, Limit: 5, ResetAfter: 14 * time.Second, RetryAfter: 2 * time.Second},
			ratelimit.State{TAT: now + 14*s}},
		{"60 tokens spent at 200 ms on a bucket of 20: empty, not more", freeRead, ratelimit.State{TAT: now + 12*s, Interval: s / 5}, 1,
			ratelimit.Decision{Refusal: ratelimit.BucketSpent, Limit: 20, ResetAfter: 20 * time.Second, RetryAfter: time.Second},
			ratelimit.State{TAT: now + 20*s, Interval: s}},
		{"refused under its own interval: nothing to store", freeRead, ratelimit.State{TAT: now + 20*s, Interval: s}, 1,
			ratelimit.Decision{Refusal: ratelimit.BucketSpent, Limit: 20, ResetAfter: 20 * time.Second, RetryAfter: time.Second},
			ratelimit.State{TAT: now + 20*s, Interval: s}},
		{"a read of cost 0 under its own interval: nothing to store", freeRead, ratelimit.State{TAT: now + 5*s, Interval: s}, 0,
			ratelimit.Decision{Allowed: true, Limit: 20, Remaining: 15, ResetAfter: 5 * time.Second},
			ratelimit.State{TAT: now + 5*s, Interval: s}},
		{"a read of cost 0 under another interval stores the rescaled debt", freeRead, ratelimit.State{TAT: now + 5*s, Interval: 5 * s}, 0,
			ratelimit.Decision{Allowed: true, Limit: 20, Remaining: 19, ResetAfter: time.Second},
			ratelimit.State{TAT: now + s, Interval: s}},
		{"full under another interval: nothing to rescale", proGenerate, ratelimit.State{TAT: now - s, Interval: 15 * s}, 1,
			ratelimit.Decision{Allowed: true, Limit: 5, Remaining: 4, ResetAfter: 3 * time.Second},
			ratelimit.State{TAT: now + 3*s, Interval: 3 * s}},
	} {
		d, st := ratelimit.GCRA(c.rate, c.st, now, c.cost, false)
		if d != c.want || st != c.wantState {
			t.Errorf("%s:\n got %+v %+v\nwant %+v %+v", c.name, d, st, c.want, c.wantState)
		}
	}
	for _, c := range []struct{ debt, from, to, tau, want int64 }{
		{14, 15, 3, 15, 3}, // 2.8 rounds up: rounding never hands a token back
		{14000, 15000, 3000, 15000, 2800},
		{12, 1, 5, 20, 20}, // capped at the bucket
		{0, 15, 3, 15, 0},
		{1 << 62, 1, 1 << 40, 99, 99}, // the product does not fit in 64 bits
		{7, 0, 3, 15, 7},              // no interval: unscaled
	} {
		if got := ratelimit.Rescale(c.debt, c.from, c.to, c.tau); got != c.want {
			t.Errorf("Rescale(%d, %d, %d, %d) = %d, want %d", c.debt, c.from, c.to, c.tau, got, c.want)
		}
	}
}
