// Package ratelimittest is the one behaviour suite every ratelimit.Limiter runs: the in-process
// Memory with a fake clock, the Redis limiter on miniredis with its time set by the test, and the
// Redis limiter on a real Redis (MODELEXEC_TEST_REDIS) where time runs on its own.
//
// Subtests are named after the requirement ids they prove (RL-*, ORD-*). It imports testing and
// the ratelimit package only; it must not import net/http handlers or any store.
package ratelimittest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/ratelimit"
)

// Harness is what an implementation gives the suite.
type Harness struct {
	// New returns a limiter over buckets no other subtest touches, and a function that makes its
	// backend unreachable mid-test (Redis stopped); stop is nil when the backend cannot fail.
	New func(t *testing.T) (l ratelimit.Limiter, stop func())
	// Now is the time the limiter's buckets see: the fake clock, or the wall clock.
	Now func() time.Time
	// Advance moves the fake clock forward. Nil when time cannot be held still (a real Redis):
	// subtests that need it skip, and counts allow for the tokens regained while the test ran.
	Advance func(d time.Duration)
	// Twin returns two limiters on separate clients sharing one store; nil for in-process ones.
	Twin func(t *testing.T) (a, b ratelimit.Limiter)
}

// Spec is the bucket table of spec 02 written out literally (not read from ratelimit.Plans), so
// the suite checks the data against the contract. Burst 0 is "none (capacity 0)".
var Spec = map[string]map[ratelimit.Bucket]ratelimit.Rate{
	"free": {
		ratelimit.Read:     {Burst: 20, Refill: 60, Period: time.Minute},
		ratelimit.Write:    {Burst: 10, Refill: 20, Period: time.Minute},
		ratelimit.Generate: {},
		ratelimit.Egress:   {Burst: 200, Refill: 200, Period: 24 * time.Hour},
	},
	"pro": {
		ratelimit.Read:     {Burst: 60, Refill: 300, Period: time.Minute},
		ratelimit.Write:    {Burst: 20, Refill: 60, Period: time.Minute},
		ratelimit.Generate: {Burst: 5, Refill: 20, Period: time.Minute},
		ratelimit.Egress:   {Burst: 5000, Refill: 5000, Period: 24 * time.Hour},
	},
	"max": {
		ratelimit.Read:     {Burst: 120, Refill: 600, Period: time.Minute},
		ratelimit.Write:    {Burst: 40, Refill: 120, Period: time.Minute},
		ratelimit.Generate: {Burst: 10, Refill: 60, Period: time.Minute},
		ratelimit.Egress:   {Burst: 20000, Refill: 20000, Period: 24 * time.Hour},
	},
	"ultimate": {
		ratelimit.Read:     {Burst: 200, Refill: 1200, Period: time.Minute},
		ratelimit.Write:    {Burst: 60, Refill: 240, Period: time.Minute},
		ratelimit.Generate: {Burst: 20, Refill: 120, Period: time.Minute},
		ratelimit.Egress:   {Burst: 50000, Refill: 50000, Period: 24 * time.Hour},
	},
}

type suite struct {
	h    Harness
	fake bool
}

// Run runs every behaviour test against the harness's limiter.
func Run(t *testing.T, h Harness) {
	s := &suite{h: h, fake: h.Advance != nil}
	tests := []struct {
		name string
		fn   func(t *testing.T)
	}{
		{"RL05_RL06_RL07_RL08_PlanTable", s.planTable},
		{"RL01_BucketsRefillContinuously", s.refill},
		{"RL01_KeysAndBucketsAreSeparate", s.separate},
		{"RL04_EgressWholeMegabytes", s.egress},
		{"RL10_RequestTooLarge", s.tooLarge},
		{"RL04_OverdrawTakesWhatIsPaidFor", s.overdraw},
		{"RL11_ORD06_ZeroCapacity", s.zeroCapacity},
		{"RL12_RL14_RetryAfterFromBucket", s.retryAfter},
		{"RL13_NewAccountMultiplier", s.newAccount},
		{"RL13_FirstDaySpendCountsOnceWhenTheWindowEnds", s.windowEnds},
		{"RL01_RL05_RL08_PlanChangeCountsSpendOnce", s.planChange},
		{"RL15_Headers", s.headers},
		{"RL09_AssetListAdmittedTwice", s.assetList},
		{"RL16_ORD05_InstanceFuse", s.fuse},
		{"RL01_ConcurrentAdmissionsShareOneBucket", s.concurrent},
		{"RL17_RL18_ORD08_LimiterFailure", s.failure},
		{"RL19_TwoInstancesOneBudget", s.twin},
	}
	for _, tc := range tests {
		t.Run(tc.name, tc.fn)
	}
}

func (s *suite) needClock(t *testing.T) {
	t.Helper()
	if !s.fake {
		t.Skip("needs a clock the test controls; the real Redis keeps its own time (covered on miniredis)")
	}
}

// slack is how many tokens the bucket may have regained since start: 0 on a fake clock.
func (s *suite) slack(start time.Time, interval time.Duration) int64 {
	if s.fake {
		return 0
	}
	return int64(s.h.Now().Sub(start)/interval) + 1
}

func (s *suite) limiter(t *testing.T) ratelimit.Limiter {
	l, _ := s.h.New(t)
	return l
}

func admit(t *testing.T, l ratelimit.Limiter, r ratelimit.Request) ratelimit.Decision {
	t.Helper()
	d, err := l.Admit(context.Background(), r)
	if err != nil {
		t.Fatalf("Admit(%+v): %v", r, err)
	}
	if d.Allowed != (d.Refusal == "") {
		t.Fatalf("Admit(%+v) = %+v: Allowed and Refusal disagree", r, d)
	}
	return d
}

func req(key, plan string, b ratelimit.Bucket, cost int64) ratelimit.Request {
	return ratelimit.Request{Key: key, Plan: plan, Bucket: b, Cost: cost}
}

func within(got, want, slack int64) bool { return got >= want && got <= want+slack }

// planTable: each plan's bucket holds its burst, refills at its rate, and says so in Limit.
func (s *suite) planTable(t *testing.T) {
	l := s.limiter(t)
	for plan, buckets := range Spec {
		for _, b := range []ratelimit.Bucket{ratelimit.Read, ratelimit.Write, ratelimit.Generate, ratelimit.Egress} {
			want := buckets[b]
			key := "k-" + plan + "-" + string(b)
			if want.Burst == 0 {
				d := admit(t, l, req(key, plan, b, 1))
				if d.Refusal != ratelimit.PlanHasNoAPIGenerate || d.Limit != 0 {
					t.Errorf("%s %s = %+v, want plan_has_no_api_generate with limit 0", plan, b, d)
				}
				continue
			}
			interval := want.Period / time.Duration(want.Refill)
			start := s.h.Now()
			d := admit(t, l, req(key, plan, b, 1))
			if !d.Allowed || d.Limit != want.Burst || d.Remaining != want.Burst-1 {
				t.Errorf("%s %s first = %+v, want allowed, limit %d, remaining %d", plan, b, d, want.Burst, want.Burst-1)
			}
			if s.fake && d.ResetAfter != interval {
				t.Errorf("%s %s first ResetAfter = %v, want one interval %v", plan, b, d.ResetAfter, interval)
			}
			d = admit(t, l, req(key, plan, b, want.Burst-1))
			if !d.Allowed || !within(d.Remaining, 0, s.slack(start, interval)) {
				t.Errorf("%s %s rest of burst = %+v, want allowed, remaining 0", plan, b, d)
			}
			d = admit(t, l, req(key, plan, b, 1))
			if !s.fake && s.h.Now().Sub(start) >= interval {
				continue // a real clock ran past a whole interval: a token may be back
			}
			if d.Allowed {
				t.Errorf("%s %s past burst admitted: %+v", plan, b, d)
				continue
			}
			if d.Refusal != ratelimit.BucketSpent || d.Remaining != 0 || d.RetryAfter <= 0 || d.RetryAfter > interval {
				t.Errorf("%s %s past burst = %+v, want bucket_spent, remaining 0, retry in (0, %v]", plan, b, d, interval)
			}
			if s.fake && (d.RetryAfter != interval || d.ResetAfter != time.Duration(want.Burst)*interval) {
				t.Errorf("%s %s past burst retry %v reset %v, want %v and %v", plan, b, d.RetryAfter, d.ResetAfter, interval, time.Duration(want.Burst)*interval)
			}
		}
	}
}

// refill: tokens come back one interval at a time, continuously, up to the burst and no more.
func (s *suite) refill(t *testing.T) {
	s.needClock(t)
	l := s.limiter(t)
	for _, b := range ratelimit.Buckets {
		rate := ratelimit.Plans["pro"][b]
		interval := rate.Interval()
		key := "refill-" + string(b)
		if d := admit(t, l, req(key, "pro", b, rate.Burst)); !d.Allowed || d.Remaining != 0 || d.ResetAfter != time.Duration(rate.Burst)*interval {
			t.Fatalf("%s whole burst = %+v", b, d)
		}
		s.h.Advance(interval / 2)
		if d := admit(t, l, req(key, "pro", b, 1)); d.Allowed || d.RetryAfter != interval/2 {
			t.Fatalf("%s half an interval later = %+v, want refused, retry %v", b, d, interval/2)
		}
		s.h.Advance(interval / 2)
		if d := admit(t, l, req(key, "pro", b, 1)); !d.Allowed || d.Remaining != 0 {
			t.Fatalf("%s one interval later = %+v, want one token", b, d)
		}
		s.h.Advance(3 * interval)
		if d := admit(t, l, req(key, "pro", b, 3)); !d.Allowed || d.Remaining != 0 {
			t.Fatalf("%s three intervals later, cost 3 = %+v", b, d)
		}
		s.h.Advance(time.Duration(rate.Burst) * interval * 3)
		if d := admit(t, l, req(key, "pro", b, 1)); !d.Allowed || d.Remaining != rate.Burst-1 || d.ResetAfter != interval {
			t.Fatalf("%s long idle = %+v, want full (remaining %d), no more", b, d, rate.Burst-1)
		}
	}
}

func (s *suite) separate(t *testing.T) {
	l := s.limiter(t)
	if d := admit(t, l, req("a", "pro", ratelimit.Generate, 5)); !d.Allowed {
		t.Fatalf("a generate = %+v", d)
	}
	if d := admit(t, l, req("a", "pro", ratelimit.Generate, 1)); d.Allowed {
		t.Fatalf("a generate past burst admitted: %+v", d)
	}
	if d := admit(t, l, req("b", "pro", ratelimit.Generate, 1)); !d.Allowed || d.Remaining != 4 {
		t.Fatalf("b generate = %+v, want its own bucket", d)
	}
	if d := admit(t, l, req("a", "pro", ratelimit.Write, 1)); !d.Allowed || d.Remaining != 19 {
		t.Fatalf("a write = %+v, want its own bucket", d)
	}
	if d := admit(t, l, req("a", "pro", ratelimit.Read, 0)); !d.Allowed || d.Remaining != 59 {
		t.Fatalf("cost 0 = %+v, want counted as 1", d)
	}
}

func (s *suite) egress(t *testing.T) {
	l := s.limiter(t)
	// free: 200 MB a day. 150 MB and one byte is 151 MB.
	if d := admit(t, l, req("e", "free", ratelimit.Egress, ratelimit.EgressCost(150*ratelimit.MB+1))); !d.Allowed || d.Remaining != 49 {
		t.Fatalf("151 MB = %+v, want remaining 49", d)
	}
	if d := admit(t, l, req("e", "free", ratelimit.Egress, ratelimit.EgressCost(49*ratelimit.MB+1))); d.Refusal != ratelimit.BucketSpent {
		t.Fatalf("50 MB with 49 left = %+v, want bucket_spent", d)
	}
	if d := admit(t, l, req("e", "free", ratelimit.Egress, ratelimit.EgressCost(1))); !d.Allowed || d.Remaining != 48 {
		t.Fatalf("1 byte = %+v, want 1 MB taken", d)
	}
	if s.fake {
		// the day's allowance refills evenly over 24 h: one MB every 432 s
		s.h.Advance(432 * time.Second)
		if d := admit(t, l, req("e", "free", ratelimit.Egress, 49)); !d.Allowed || d.Remaining != 0 {
			t.Fatalf("after 432 s, 49 MB = %+v", d)
		}
		s.h.Advance(24 * time.Hour)
		if d := admit(t, l, req("e", "free", ratelimit.Egress, ratelimit.EgressCost(200*ratelimit.MB))); !d.Allowed || d.Remaining != 0 {
			t.Fatalf("a day later, 200 MB = %+v", d)
		}
	}
}

// overdraw: a paid output's megabytes are taken whatever the bucket holds, past empty and past
// its capacity, never refused; the debt refuses what follows until the bucket refills past it.
func (s *suite) overdraw(t *testing.T) {
	l := s.limiter(t)
	paid := func(cost int64) ratelimit.Request {
		r := req("o", "free", ratelimit.Egress, cost)
		r.Overdraw = true
		return r
	}
	if d := admit(t, l, req("o", "free", ratelimit.Egress, 190)); !d.Allowed || d.Remaining != 10 {
		t.Fatalf("190 MB = %+v", d)
	}
	if d := admit(t, l, paid(250)); !d.Allowed || d.Remaining != 0 { // more than the bucket holds (200) and has (10)
		t.Fatalf("a paid 250 MB = %+v, want taken", d)
	}
	d := admit(t, l, req("o", "free", ratelimit.Egress, 1))
	if d.Refusal != ratelimit.BucketSpent || d.RetryAfter < 240*432*time.Second-time.Second {
		t.Fatalf("1 MB after a 240 MB debt = %+v, want bucket_spent until the debt is repaid (~%v)", d, 240*432*time.Second)
	}
}

func (s *suite) tooLarge(t *testing.T) {
	l := s.limiter(t)
	d := admit(t, l, req("t", "pro", ratelimit.Generate, 6))
	if d.Allowed || d.Refusal != ratelimit.RequestTooLarge || d.Limit != 5 || d.RetryAfter != 0 || d.Remaining != 5 {
		t.Fatalf("cost 6 on burst 5 = %+v, want request_too_large, limit 5, remaining 5", d)
	}
	if d := admit(t, l, req("t", "pro", ratelimit.Generate, 2)); !d.Allowed || d.Remaining != 3 {
		t.Fatalf("after too large, cost 2 = %+v: the refusal must take nothing", d)
	}
	// still too large, never bucket_spent, even with the bucket part spent
	if d := admit(t, l, req("t", "pro", ratelimit.Generate, 6)); d.Refusal != ratelimit.RequestTooLarge || d.Remaining != 3 {
		t.Fatalf("cost 6 part spent = %+v, want request_too_large, remaining 3", d)
	}
	if d := admit(t, l, req("t", "free", ratelimit.Egress, ratelimit.EgressCost(200*ratelimit.MB+1))); d.Refusal != ratelimit.RequestTooLarge || d.Limit != 200 {
		t.Fatalf("201 MB on free = %+v, want request_too_large, limit 200", d)
	}
	young := req("t2", "pro", ratelimit.Generate, 2)
	young.AccountCreated = s.h.Now().Add(-time.Hour)
	if d := admit(t, l, young); d.Refusal != ratelimit.RequestTooLarge || d.Limit != 1 {
		t.Fatalf("cost 2 on a new account's burst 1 = %+v, want request_too_large, limit 1", d)
	}
}

func (s *suite) zeroCapacity(t *testing.T) {
	l := s.limiter(t)
	for _, r := range []ratelimit.Request{
		req("z", "free", ratelimit.Generate, 1),
		req("z", "free", ratelimit.Generate, 1000), // plan before size (ORD-06)
		req("z", "free", ratelimit.Interactive, 1),
		{Key: "z", Plan: "free", Bucket: ratelimit.Generate, Cost: 1, AccountCreated: s.h.Now().Add(-time.Hour)},
	} {
		for i := 0; i < 3; i++ {
			d := admit(t, l, r)
			if d.Refusal != ratelimit.PlanHasNoAPIGenerate || d.Limit != 0 || d.Remaining != 0 || d.RetryAfter != 0 {
				t.Fatalf("%+v = %+v, want plan_has_no_api_generate, never a wait", r, d)
			}
		}
	}
	if s.fake {
		s.h.Advance(48 * time.Hour)
		if d := admit(t, l, req("z", "free", ratelimit.Generate, 1)); d.Refusal != ratelimit.PlanHasNoAPIGenerate {
			t.Fatalf("two days later = %+v: a zero bucket never refills", d)
		}
	}
}

func (s *suite) retryAfter(t *testing.T) {
	s.needClock(t)
	l := s.limiter(t)
	adm := ratelimit.NewAdmission(l, ratelimit.AdmissionOptions{})
	ctx := context.Background()
	// pro write: burst 20, one token a second
	if d, o, err := adm.Check(ctx, req("r", "pro", ratelimit.Write, 20), s.h.Now()); err != nil || o != ratelimit.OutcomeAdmitted || d.Remaining != 0 {
		t.Fatalf("burst = %+v %v %v", d, o, err)
	}
	d, o, err := adm.Check(ctx, req("r", "pro", ratelimit.Write, 3), s.h.Now())
	if err != nil || o != ratelimit.OutcomeBucketSpent || d.RetryAfter != 3*time.Second || o.RetryAfterSeconds(d) != 3 {
		t.Fatalf("cost 3 on empty = %+v %v %v, want bucket_spent, retry 3 s", d, o, err)
	}
	if o.Status() != 429 || o.Code() != "rate_limited" || o.Reason() != "bucket_spent" {
		t.Fatalf("bucket spent maps to %d %s %s", o.Status(), o.Code(), o.Reason())
	}
	s.h.Advance(1500 * time.Millisecond)
	d, o, _ = adm.Check(ctx, req("r", "pro", ratelimit.Write, 3), s.h.Now())
	if o != ratelimit.OutcomeBucketSpent || d.RetryAfter != 1500*time.Millisecond || o.RetryAfterSeconds(d) != 2 {
		t.Fatalf("1.5 s later = %+v, want retry 1.5 s, header 2", d)
	}
	s.h.Advance(1500 * time.Millisecond)
	if d, o, _ := adm.Check(ctx, req("r", "pro", ratelimit.Write, 3), s.h.Now()); o != ratelimit.OutcomeAdmitted {
		t.Fatalf("after Retry-After = %+v %v, want admitted", d, o)
	}
}

func (s *suite) newAccount(t *testing.T) {
	l := s.limiter(t)
	created := s.h.Now().Add(-time.Hour)
	young := func(key, plan string, b ratelimit.Bucket, cost int64) ratelimit.Request {
		r := req(key, plan, b, cost)
		r.AccountCreated = created
		return r
	}
	for plan, buckets := range Spec {
		for b, want := range buckets {
			d := admit(t, l, young("n-"+plan, plan, b, 1))
			wantLimit := max(want.Burst/5, 1)
			if want.Burst == 0 {
				wantLimit = 0
			}
			if d.Limit != wantLimit {
				t.Errorf("%s %s new account limit = %d, want %d", plan, b, d.Limit, wantLimit)
			}
			if s.fake && want.Burst > 0 && d.ResetAfter != 5*want.Period/time.Duration(want.Refill) {
				t.Errorf("%s %s new account interval = %v, want five times %v", plan, b, d.ResetAfter, want.Period/time.Duration(want.Refill))
			}
		}
	}
	// pro generate: burst 5 → 1 (and never below 1), 20/min → 4/min
	if d := admit(t, l, young("g", "pro", ratelimit.Generate, 1)); !d.Allowed || d.Limit != 1 || d.Remaining != 0 {
		t.Fatalf("new pro generate = %+v, want burst 1", d)
	}
	if d := admit(t, l, young("g", "pro", ratelimit.Generate, 1)); d.Refusal != ratelimit.BucketSpent {
		t.Fatalf("second new pro generate = %+v, want bucket_spent", d)
	} else if s.fake && d.RetryAfter != 15*time.Second {
		t.Fatalf("new pro generate retry = %v, want 15 s (4/min)", d.RetryAfter)
	}
	if !s.fake {
		return
	}
	// the multiplier is about the account's age: a day after creation the plan's figures apply
	edge := req("edge", "pro", ratelimit.Read, 1)
	edge.AccountCreated = s.h.Now().Add(-24*time.Hour + time.Second)
	if d := admit(t, l, edge); d.Limit != 12 {
		t.Fatalf("one second before 24 h: limit %d, want 12", d.Limit)
	}
	s.h.Advance(time.Second)
	if d := admit(t, l, edge); d.Limit != 60 || !d.Allowed {
		t.Fatalf("at 24 h: %+v, want limit 60", d)
	}
}

// plans lists the plans of Spec in the spec's order.
var plans = []string{"free", "pro", "max", "ultimate"}

// windowEnds: a bucket holds tokens, whatever the rate in force. A new account that spent its
// whole first-day bucket finds, when its 24 hours end, the plan's bucket less what it spent, once
// (not five times over: the first day's tokens took five times longer to come back), refilling
// at the plan's rate. For every plan and bucket kind, per minute and per day.
//
// On a fake clock the bucket is spent half a first-day interval before the 24 hours end and read
// at the end, exactly; on a real clock (where the test cannot wait a day) the same key is read at
// once as an account a day old.
func (s *suite) windowEnds(t *testing.T) {
	l := s.limiter(t)
	for _, plan := range plans {
		for _, b := range []ratelimit.Bucket{ratelimit.Read, ratelimit.Write, ratelimit.Generate, ratelimit.Egress} {
			rate := Spec[plan][b]
			if rate.Burst == 0 {
				continue
			}
			interval := rate.Period / time.Duration(rate.Refill)
			young := max(rate.Burst/5, 1) // the first day's bucket, refilling every 5 intervals
			r := req("w-"+plan+"-"+string(b), plan, b, young)
			start := s.h.Now()
			r.AccountCreated = start.Add(-ratelimit.NewAccountWindow + time.Hour)
			if s.fake {
				r.AccountCreated = start.Add(-ratelimit.NewAccountWindow + 5*interval/2)
			}
			if d := admit(t, l, r); !d.Allowed || d.Limit != young || d.Remaining != 0 {
				t.Errorf("%s %s first day, whole bucket = %+v, want allowed, limit %d, remaining 0", plan, b, d, young)
				continue
			}
			if s.fake {
				s.h.Advance(5 * interval / 2) // the 24 hours end; half a first-day token is back
			} else {
				r.AccountCreated = start.Add(-ratelimit.NewAccountWindow - time.Hour)
			}
			r.Cost = 1
			d := admit(t, l, r)
			// young tokens spent (less half of one on the fake clock), one more taken now
			if !d.Allowed || d.Limit != rate.Burst || !within(d.Remaining, rate.Burst-young-1, s.slack(start, 5*interval)) {
				t.Errorf("%s %s at the end of the first day, having spent %d = %+v, want allowed, limit %d, remaining %d", plan, b, young, d, rate.Burst, rate.Burst-young-1)
				continue
			}
			if !s.fake {
				continue
			}
			if want := time.Duration(2*young+1) * interval / 2; d.ResetAfter != want {
				t.Errorf("%s %s at the end of the first day: reset %v, want %v (%d.5 tokens at %v)", plan, b, d.ResetAfter, want, young, interval)
			}
			r.Cost = d.Remaining
			if d := admit(t, l, r); !d.Allowed || d.Remaining != 0 {
				t.Errorf("%s %s the rest of the bucket = %+v, want allowed, remaining 0", plan, b, d)
			}
			r.Cost = 1
			if d := admit(t, l, r); d.Refusal != ratelimit.BucketSpent || d.RetryAfter != interval/2 {
				t.Errorf("%s %s past the bucket = %+v, want bucket_spent, retry %v (the half token, at the plan's rate)", plan, b, d, interval/2)
			}
		}
	}
}

// planChange: when a key's plan changes, what it spent counts once under the new plan's figures:
// an upgrade finds the new bucket less the tokens spent, a downgrade past the new bucket finds it
// empty (never more than empty), refilling at the new rate. For every pair of plans with the
// bucket and every bucket kind, per minute and per day.
func (s *suite) planChange(t *testing.T) {
	l := s.limiter(t)
	for _, b := range []ratelimit.Bucket{ratelimit.Read, ratelimit.Write, ratelimit.Generate, ratelimit.Egress} {
		for _, from := range plans {
			for _, to := range plans {
				p, q := Spec[from][b], Spec[to][b]
				if from == to || p.Burst == 0 || q.Burst == 0 {
					continue
				}
				pi, qi := p.Period/time.Duration(p.Refill), q.Period/time.Duration(q.Refill)
				key := "pc-" + string(b) + "-" + from + "-" + to
				start := s.h.Now()
				if d := admit(t, l, req(key, from, b, p.Burst)); !d.Allowed {
					t.Errorf("%s on %s, whole bucket = %+v", b, from, d)
					continue
				}
				if s.fake {
					s.h.Advance(pi / 2) // half a token back at the old rate
				}
				d := admit(t, l, req(key, to, b, 1))
				what := fmt.Sprintf("%s: %d spent on %s, then 1 on %s", b, p.Burst, from, to)
				if p.Burst < q.Burst {
					if !d.Allowed || d.Limit != q.Burst || !within(d.Remaining, q.Burst-p.Burst-1, s.slack(start, pi)) {
						t.Errorf("%s = %+v, want allowed, limit %d, remaining %d", what, d, q.Burst, q.Burst-p.Burst-1)
					} else if want := time.Duration(2*p.Burst+1) * qi / 2; s.fake && d.ResetAfter != want {
						t.Errorf("%s: reset %v, want %v (%d.5 tokens at %v)", what, d.ResetAfter, want, p.Burst, qi)
					}
					continue
				}
				if d.Refusal != ratelimit.BucketSpent || d.Limit != q.Burst || d.Remaining != 0 || d.RetryAfter <= 0 || d.RetryAfter > qi {
					t.Errorf("%s = %+v, want bucket_spent, limit %d, remaining 0, retry in (0, %v]", what, d, q.Burst, qi)
					continue
				}
				if !s.fake {
					continue
				}
				if d.RetryAfter != qi || d.ResetAfter != time.Duration(q.Burst)*qi {
					t.Errorf("%s: retry %v, reset %v, want %v and %v (an empty bucket of %d)", what, d.RetryAfter, d.ResetAfter, qi, time.Duration(q.Burst)*qi, q.Burst)
				}
				s.h.Advance(qi)
				if d := admit(t, l, req(key, to, b, 1)); !d.Allowed || d.Remaining != 0 {
					t.Errorf("%s, one %s interval later = %+v, want allowed, remaining 0", what, to, d)
				}
			}
		}
	}
}

func (s *suite) headers(t *testing.T) {
	l := s.limiter(t)
	now := s.h.Now()
	d := admit(t, l, req("h", "pro", ratelimit.Read, 1)) // 300/min: a token every 200 ms
	got := map[string]string{}
	for _, h := range ratelimit.Headers(d, now) {
		got[h.Name] = h.Value
	}
	want := map[string]string{
		"RateLimit-Limit": "60", "RateLimit-Remaining": "59", "RateLimit-Reset": "1",
		"X-RateLimit-Limit": "60", "X-RateLimit-Remaining": "59",
		"X-RateLimit-Reset": strconv.FormatInt(now.Add(200*time.Millisecond-1).Unix()+1, 10),
	}
	if len(got) != 6 {
		t.Fatalf("headers = %v, want six", got)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if !s.fake {
		return
	}
	d = admit(t, l, req("h", "pro", ratelimit.Read, 10)) // 11 taken: full in 2.2 s
	got = map[string]string{}
	for _, h := range ratelimit.Headers(d, s.h.Now()) {
		got[h.Name] = h.Value
	}
	full := s.h.Now().Add(2200 * time.Millisecond)
	unix := full.Unix()
	if full.Nanosecond() != 0 {
		unix++
	}
	if got["RateLimit-Remaining"] != "49" || got["RateLimit-Reset"] != "3" || got["X-RateLimit-Reset"] != strconv.FormatInt(unix, 10) {
		t.Fatalf("after 11 reads: %v, want remaining 49, reset 3, x-reset %d", got, unix)
	}
}

func (s *suite) assetList(t *testing.T) {
	l := s.limiter(t)
	adm := ratelimit.NewAdmission(l, ratelimit.AdmissionOptions{})
	ctx, now := context.Background(), s.h.Now()
	if _, o := adm.CheckFuse("al", ratelimit.Read, now); o != ratelimit.OutcomeAdmitted {
		t.Fatalf("fuse = %v", o)
	}
	if d, o, err := adm.Check(ctx, req("al", "pro", ratelimit.Read, 1), now); err != nil || o != ratelimit.OutcomeAdmitted || d.Limit != 60 {
		t.Fatalf("read admission = %+v %v %v", d, o, err)
	}
	d, o, err := adm.Admit(ctx, req("al", "pro", ratelimit.Egress, ratelimit.EgressCost(3_500_000)), now)
	if err != nil || o != ratelimit.OutcomeAdmitted {
		t.Fatalf("egress admission = %+v %v %v", d, o, err)
	}
	hs := ratelimit.Headers(d, now)
	if hs[0].Value != "5000" || hs[1].Value != "4996" {
		t.Fatalf("asset list headers = %v, want the egress admission's (5000, 4996)", hs)
	}
}

func (s *suite) fuse(t *testing.T) {
	l := s.limiter(t)
	adm := ratelimit.NewAdmission(l, ratelimit.AdmissionOptions{})
	now := s.h.Now().Truncate(time.Second) // the fuse counts per wall-clock second
	for b, n := range map[ratelimit.Bucket]int{ratelimit.Read: 30, ratelimit.Write: 10, ratelimit.Generate: 3, ratelimit.Egress: 30, ratelimit.Interactive: 5} {
		for i := 0; i < n; i++ {
			if _, o := adm.CheckFuse("f", b, now); o != ratelimit.OutcomeAdmitted {
				t.Fatalf("%s request %d refused by the fuse", b, i+1)
			}
		}
		d, o := adm.CheckFuse("f", b, now.Add(999*time.Millisecond))
		if o != ratelimit.OutcomeInstanceFuse || o.Status() != 429 || o.Code() != "rate_limited" || o.Reason() != "instance_fuse" || o.RetryAfterSeconds(d) != 1 {
			t.Fatalf("%s request %d in one second = %+v %v, want instance_fuse, Retry-After 1", b, n+1, d, o)
		}
		if d.Limit != int64(n) || d.Remaining != 0 || d.Refusal != ratelimit.InstanceFuse {
			t.Fatalf("%s fuse decision = %+v, want limit %d", b, d, n)
		}
		if _, o := adm.CheckFuse("other", b, now); o != ratelimit.OutcomeAdmitted {
			t.Fatalf("%s: another key tripped by the first one's fuse", b)
		}
	}
	if _, o := adm.CheckFuse("f", ratelimit.Read, now.Truncate(time.Second).Add(time.Second)); o != ratelimit.OutcomeAdmitted {
		t.Fatalf("next second still fused")
	}
	// the fuse is checked before, and independently of, the bucket: a fused request takes nothing
	if d, o, err := adm.Admit(context.Background(), req("f", "pro", ratelimit.Generate, 1), now); o != ratelimit.OutcomeInstanceFuse || err != nil {
		t.Fatalf("Admit over the fuse = %+v %v %v", d, o, err)
	}
	if d := admit(t, l, req("f", "pro", ratelimit.Generate, 1)); d.Remaining != 4 {
		t.Fatalf("bucket after a fused request = %+v, want untouched", d)
	}
}

func (s *suite) concurrent(t *testing.T) {
	l := s.limiter(t)
	start := s.h.Now()
	var admitted atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 60)
	for i := 0; i < 60; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := l.Admit(context.Background(), req("c", "pro", ratelimit.Write, 1))
			if err != nil {
				errs <- err
				return
			}
			if d.Allowed {
				admitted.Add(1)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := admitted.Load(); !within(n, 20, s.slack(start, time.Second)) {
		t.Fatalf("60 concurrent writes admitted %d, want the burst of 20", n)
	}
}

func (s *suite) failure(t *testing.T) {
	l, stop := s.h.New(t)
	if stop == nil {
		t.Skip("this limiter cannot fail (in process); the Guard is tested with a failing fake in package ratelimit")
	}
	adm := ratelimit.NewAdmission(l, ratelimit.AdmissionOptions{})
	ctx, now := context.Background(), s.h.Now()
	r := req("x", "pro", ratelimit.Read, 1)
	if _, o, err := adm.Check(ctx, r, now); err != nil || o != ratelimit.OutcomeAdmitted {
		t.Fatalf("before the stop: %v %v", o, err)
	}
	stop()
	for i := 1; i <= ratelimit.GuardFailures; i++ {
		if adm.Guard.Tripped(now) {
			t.Fatalf("tripped after %d failures, want %d", i-1, ratelimit.GuardFailures)
		}
		d, o, err := adm.Check(ctx, r, now)
		if !errors.Is(err, ratelimit.ErrUnavailable) || o != ratelimit.OutcomeUnavailable {
			t.Fatalf("stopped limiter, call %d = %v %v, want limiter_unavailable", i, o, err)
		}
		if o.Status() != 503 || o.Code() != "limiter_unavailable" || o.RetryAfterSeconds(d) != 5 || d.Limit != 60 {
			t.Fatalf("limiter_unavailable maps to %d %s retry %d, decision %+v", o.Status(), o.Code(), o.RetryAfterSeconds(d), d)
		}
	}
	if !adm.Guard.Tripped(now) {
		t.Fatalf("5 failures in the last 10 calls: guard not tripped")
	}
	// the fuse is one request a second per key per bucket for thirty seconds
	for _, b := range ratelimit.Buckets {
		if _, o := adm.CheckFuse("y", b, now); o != ratelimit.OutcomeAdmitted {
			t.Fatalf("%s first request while tripped refused", b)
		}
		if d, o := adm.CheckFuse("y", b, now); o != ratelimit.OutcomeInstanceFuse || d.Limit != 1 {
			t.Fatalf("%s second request in the second while tripped = %+v %v, want instance_fuse, limit 1", b, d, o)
		}
	}
	later := now.Add(ratelimit.GuardTrippedFor - time.Millisecond)
	if adm.Fuse.Limit(ratelimit.Read, later) != 1 {
		t.Fatalf("fuse back up before thirty seconds")
	}
	later = now.Add(ratelimit.GuardTrippedFor)
	if got := adm.Fuse.Limit(ratelimit.Read, later); got != 30 {
		t.Fatalf("fuse after thirty seconds = %d, want 30", got)
	}
}

func (s *suite) twin(t *testing.T) {
	if s.h.Twin == nil {
		t.Skip("in-process limiters share nothing by design; two processes share only a Redis")
	}
	a, b := s.h.Twin(t)
	start := s.h.Now()
	n := int64(0)
	for i := 0; i < 10; i++ {
		l := a
		if i%2 == 1 {
			l = b
		}
		if d := admit(t, l, req("twin", "pro", ratelimit.Generate, 1)); d.Allowed {
			n++
		}
	}
	if !within(n, 5, s.slack(start, 3*time.Second)) {
		t.Fatalf("two instances admitted %d generates, want one burst of 5 between them", n)
	}
	if d := admit(t, b, req("twin", "pro", ratelimit.Generate, 1)); d.Allowed && s.fake {
		t.Fatalf("b admitted past the shared budget: %+v", d)
	}
}

// Unique returns a key prefix no other test uses, for stores shared between tests.
func Unique(t *testing.T) string {
	return fmt.Sprintf("rltest:%s:%d:", t.Name(), time.Now().UnixNano())
}

// Clock is a fake clock for the harnesses, safe for concurrent use.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// Start is where fake clocks begin: a quarter past a whole second, so roundings show.
var Start = time.Date(2026, 11, 21, 10, 0, 0, 250_000_000, time.UTC)

// NewClock returns a fake clock at Start.
func NewClock() *Clock { return &Clock{t: Start} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}
