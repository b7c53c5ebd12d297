package plans

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/ratelimit"
)

// Plans are the figures in force.
type Plans struct {
	Rates            ratelimit.Table
	InFlight         map[auth.Plan]int
	Allowance        map[auth.Plan]int64
	Seats            Seats
	ModelConcurrency int
	// Fuse is the per-instance fuse of spec 02's order of checks (step 5): requests per key
	// per bucket per second one process admits before it asks the shared limiter.
	Fuse map[ratelimit.Bucket]int
}

// Seats are the caps on connections held open by synchronous runs (per account, per product,
// for the whole platform).
type Seats struct {
	PerAccount int `json:"per_account"`
	PerProduct int `json:"per_product"`
	Platform   int `json:"platform"`
}

// Default returns the figures as shipped (spec 02's bucket table and DESIGN's decisions).
func Default() *Plans {
	p := &Plans{Rates: ratelimit.Table{}, InFlight: map[auth.Plan]int{}, Allowance: map[auth.Plan]int64{},
		Seats: Seats{PerAccount: 12, PerProduct: 200, Platform: 1000}, ModelConcurrency: 4, Fuse: map[ratelimit.Bucket]int{}}
	for b, n := range ratelimit.DefaultFuseLimits {
		p.Fuse[b] = n
	}
	for name, buckets := range ratelimit.Plans {
		p.Rates[name] = map[ratelimit.Bucket]ratelimit.Rate{}
		for b, r := range buckets {
			p.Rates[name][b] = r
		}
	}
	for plan, n := range map[auth.Plan]int{auth.Free: 0, auth.Pro: 10, auth.Max: 25, auth.Ultimate: 50} {
		p.InFlight[plan] = n
	}
	for _, plan := range names {
		p.Allowance[plan] = auth.DefaultMonthlyAllowance(plan)
	}
	return p
}

// Unpaced lifts plan's pacing for a load tool that measures the service rather than its plans:
// jobs in flight up to inFlight, every rate bucket's burst and refill and every fuse to rate.
func (p *Plans) Unpaced(plan auth.Plan, inFlight, rate int) *Plans {
	p.InFlight[plan] = inFlight
	for b, r := range p.Rates[string(plan)] {
		r.Burst, r.Refill = int64(rate), int64(rate)
		p.Rates[string(plan)][b] = r
	}
	for b := range p.Fuse {
		p.Fuse[b] = rate
	}
	return p
}

// MaxMonthlyAllowance is the largest monthly allowance a plans file may give (auth.MaxMonthlyAllowance).
const MaxMonthlyAllowance = auth.MaxMonthlyAllowance

// names are the plans every file must give, in the order of spec 02.
var names = []auth.Plan{auth.Free, auth.Pro, auth.Max, auth.Ultimate}

// MonthlyAllowance is the allowance of plan (0 for an unknown plan).
func (p *Plans) MonthlyAllowance(plan auth.Plan) int64 { return p.Allowance[plan] }

// file is the JSON shape of a plans file.
type file struct {
	Seats            Seats               `json:"seats"`
	ModelConcurrency int                 `json:"model_concurrency"`
	InstanceFuse     map[string]int      `json:"instance_fuse"`
	Plans            map[string]planFile `json:"plans"`
}

type planFile struct {
	InFlight         int                 `json:"in_flight"`
	MonthlyAllowance int64               `json:"monthly_allowance"`
	Rates            map[string]rateFile `json:"rates"`
}

// rateFile is one bucket: burst tokens when full, refill tokens regained every period
// ("1m" for request buckets, "24h" for egress, in megabytes).
type rateFile struct {
	Burst  int64  `json:"burst"`
	Refill int64  `json:"refill"`
	Period string `json:"period"`
}

// JSON writes the figures in the shape Load reads, indented, with a final newline.
func (p *Plans) JSON() []byte {
	f := file{Seats: p.Seats, ModelConcurrency: p.ModelConcurrency, InstanceFuse: map[string]int{}, Plans: map[string]planFile{}}
	for b, n := range p.Fuse {
		f.InstanceFuse[string(b)] = n
	}
	for name, buckets := range p.Rates {
		pf := planFile{InFlight: p.InFlight[auth.Plan(name)], MonthlyAllowance: int64(p.Allowance[auth.Plan(name)]), Rates: map[string]rateFile{}}
		for b, r := range buckets {
			pf.Rates[string(b)] = rateFile{Burst: r.Burst, Refill: r.Refill, Period: ratelimit.FormatPeriod(r.Period)}
		}
		f.Plans[name] = pf
	}
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil { // maps of plain values always marshal
		panic(err)
	}
	return append(b, '\n')
}

// Load reads a plans file (the shape of `modelexec plans`): every plan of spec 02 with every
// bucket, no unknown field, no negative figure, and every figure that feeds the limiter's or the
// ledger's arithmetic within its range (ratelimit.Rate.Check, MaxMonthlyAllowance). Its errors
// name the place in the file and the range.
func Load(r io.Reader) (*Plans, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var f file
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("not a plans file: %w", err)
	}
	var problems []string
	bad := func(format string, a ...any) { problems = append(problems, fmt.Sprintf(format, a...)) }
	if f.Seats.PerAccount < 1 || f.Seats.PerProduct < 1 || f.Seats.Platform < 1 {
		bad("seats: per_account, per_product and platform must each be at least 1")
	}
	if f.ModelConcurrency < 1 {
		bad("model_concurrency: must be at least 1 (jobs of one model a process runs at once)")
	}
	p := &Plans{Rates: ratelimit.Table{}, InFlight: map[auth.Plan]int{}, Allowance: map[auth.Plan]int64{},
		Seats: f.Seats, ModelConcurrency: f.ModelConcurrency, Fuse: map[ratelimit.Bucket]int{}}
	for name := range f.InstanceFuse {
		if !knownBucket(name) {
			bad("instance_fuse.%s: unknown bucket (buckets: %s)", name, bucketList())
		}
	}
	for _, bk := range ratelimit.Buckets {
		n, ok := f.InstanceFuse[string(bk)]
		switch {
		case !ok:
			bad("instance_fuse.%s: missing", bk)
		case n < 1:
			bad("instance_fuse.%s: must be at least 1 (requests per key per second in one process)", bk)
		}
		p.Fuse[bk] = n
	}
	for name := range f.Plans {
		if !known(name) {
			bad("plans.%s: unknown plan (plans: free, pro, max, ultimate)", name)
		}
	}
	for _, plan := range names {
		pf, ok := f.Plans[string(plan)]
		if !ok {
			bad("plans.%s: missing", plan)
			continue
		}
		if pf.InFlight < 0 {
			bad("plans.%s.in_flight: must not be negative", plan)
		}
		if pf.MonthlyAllowance < 0 || pf.MonthlyAllowance > MaxMonthlyAllowance {
			bad("plans.%s.monthly_allowance: %d is out of range 0 to %d", plan, pf.MonthlyAllowance, int64(MaxMonthlyAllowance))
		}
		p.InFlight[plan], p.Allowance[plan] = pf.InFlight, pf.MonthlyAllowance
		buckets := map[ratelimit.Bucket]ratelimit.Rate{}
		for name := range pf.Rates {
			if !knownBucket(name) {
				bad("plans.%s.rates.%s: unknown bucket (buckets: %s)", plan, name, bucketList())
			}
		}
		for _, bk := range ratelimit.Buckets {
			rf, ok := pf.Rates[string(bk)]
			if !ok {
				bad("plans.%s.rates.%s: missing", plan, bk)
				continue
			}
			d, err := time.ParseDuration(rf.Period)
			if err != nil || d <= 0 {
				bad("plans.%s.rates.%s.period: %q is not a positive duration such as \"1m\" or \"24h\"", plan, bk, rf.Period)
				continue // the burst's range depends on the period: it is checked once the period reads
			}
			rate := ratelimit.Rate{Burst: rf.Burst, Refill: rf.Refill, Period: d}
			for _, problem := range rate.Check() {
				bad("plans.%s.rates.%s.%s", plan, bk, problem)
			}
			buckets[bk] = rate
		}
		p.Rates[string(plan)] = buckets
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		return nil, errors.New(strings.Join(problems, "; "))
	}
	return p, nil
}

func known(name string) bool {
	for _, p := range names {
		if string(p) == name {
			return true
		}
	}
	return false
}

func knownBucket(name string) bool {
	for _, b := range ratelimit.Buckets {
		if string(b) == name {
			return true
		}
	}
	return false
}

func bucketList() string {
	var s []string
	for _, b := range ratelimit.Buckets {
		s = append(s, string(b))
	}
	return strings.Join(s, ", ")
}
