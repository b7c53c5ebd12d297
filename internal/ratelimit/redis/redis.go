package redis

import (
	"context"
	"fmt"
	"math"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/modelexec/modelexec/internal/ratelimit"
)

// script is ratelimit.GCRA, line for line, in microseconds since the Unix epoch: the bucket is
// stored as "<tat>:<interval>" (ratelimit.State: the time it will be full again and the time one
// token took to come back when it was written). A debt written under another interval (the
// new-account window ended, the plan changed) is rescaled to the one in force (ratelimit.Rescale),
// so a token spent counts once. The clock is the Redis server's, so every process
// sharing the Redis agrees. Microseconds stay exact in Lua's doubles (below 2^53): debt × to /
// from is worked as whole intervals plus the remainder's share, and figures are written with
// %.0f, never the %.14g of Lua's number-to-string. The key expires when the bucket is full
// again: a full bucket and a missing key are the same.
//
// ARGV: interval (µs per token), burst, cost (0 reads the bucket without taking), overdraw (1
// takes the cost whatever the bucket holds, ratelimit.Request.Overdraw).
// Returns {allowed, remaining, reset µs, retry µs}.
var script = goredis.NewScript(`
local interval = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local overdraw = tonumber(ARGV[4]) == 1
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local tau = interval * burst
local tat = now
local rescaled = false
local stored = redis.call('GET', KEYS[1])
if stored then
  local at, was = string.match(stored, '^(%d+):(%d+)$')
  if at then tat, was = tonumber(at), tonumber(was) end
  if tat < now then tat = now end
  if tat > now and was > 0 and was ~= interval then
    local debt = tat - now
    local q = math.floor(debt / was)
    debt = q * interval + math.ceil((debt - q * was) * interval / was)
    if debt > tau then debt = tau end
    tat = now + debt
    rescaled = true
  end
end
local function store(at)
  redis.call('SET', KEYS[1], string.format('%.0f:%.0f', at, interval), 'PX', string.format('%.0f', math.ceil((at - now) / 1000)))
end
local new_tat = tat + cost * interval
local debt = new_tat - now
if debt <= tau or overdraw then
  if cost > 0 or rescaled then store(new_tat) end
  local left = tau - debt
  if left < 0 then left = 0 end
  return {1, math.floor(left / interval), debt, 0}
end
local held = tat - now
local remaining = math.floor((tau - held) / interval)
if remaining < 0 then remaining = 0 end
if rescaled then store(tat) end
return {0, remaining, held, debt - tau}
`)

// Options configures the Redis limiter.
type Options struct {
	// Prefix is put before every key ("ratelimit:v2:" by default); tests give each its own.
	// The default names the stored form: a bucket is "<tat>:<interval>" since v2, which a
	// process of an earlier build cannot read, so during a rolling upgrade the two builds keep
	// buckets of their own instead of one answering limiter_unavailable on the other's.
	Prefix string
	// Clock decides only whether an account is inside its first 24 hours; bucket time is the
	// Redis server's. Defaults to time.Now.
	Clock func() time.Time
	// Plans is the bucket table (ratelimit.Plans when nil).
	Plans ratelimit.Table
}

// Limiter is the Redis implementation of ratelimit.Limiter: one key per (public key id, bucket)
// holding the GCRA state (theoretical arrival time and interval), updated atomically by one Lua
// script in one round trip.
type Limiter struct {
	rdb    goredis.Scripter
	prefix string
	clock  func() time.Time
	plans  ratelimit.Table
}

var _ ratelimit.Limiter = (*Limiter)(nil)

// New returns a Redis limiter on a client the caller owns (and closes). Give the client short
// timeouts and no retries (for example ReadTimeout 200ms, MaxRetries -1,
// DialerRetries 1): a slow limiter is a
// failed one, the Guard handles it, and the request answers 503 limiter_unavailable at once.
func New(rdb goredis.Scripter, opts Options) *Limiter {
	if opts.Prefix == "" {
		opts.Prefix = "ratelimit:v2:"
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	return &Limiter{rdb: rdb, prefix: opts.Prefix, clock: opts.Clock, plans: opts.Plans}
}

// Key is the Redis key of one bucket. The braces make the public key id a cluster hash tag.
func (l *Limiter) Key(key string, b ratelimit.Bucket) string {
	return l.prefix + "{" + key + "}:" + string(b)
}

// Admit runs the script. A zero-capacity bucket is refused without asking Redis. Any Redis error
// (refused connection, timeout, closed client) is returned as is; the Guard turns it into
// 503 limiter_unavailable.
func (l *Limiter) Admit(ctx context.Context, r ratelimit.Request) (ratelimit.Decision, error) {
	rate, cost, pre, final, err := l.plans.Resolve(r, l.clock())
	if err != nil || final {
		return pre, err
	}
	tooLarge := pre.Refusal == ratelimit.RequestTooLarge
	if tooLarge {
		cost = 0
	}
	interval := int64(math.Ceil(float64(rate.Interval()) / float64(time.Microsecond)))
	overdraw := 0
	if r.Overdraw {
		overdraw = 1
	}
	res, err := script.Run(ctx, l.rdb, []string{l.Key(r.Key, r.Bucket)}, interval, rate.Burst, cost, overdraw).Int64Slice()
	if err != nil {
		if tooLarge {
			// The refusal needs no stored state; only the headers' Remaining and Reset do. A 413
			// the client must not retry beats a 503 it would: answer it, with nothing promised.
			return ratelimit.Decision{Refusal: ratelimit.RequestTooLarge, Limit: rate.Burst}, nil
		}
		return ratelimit.Decision{}, err
	}
	if len(res) != 4 {
		return ratelimit.Decision{}, fmt.Errorf("ratelimit/redis: script returned %d values", len(res))
	}
	d := ratelimit.Decision{
		Allowed:    res[0] == 1,
		Limit:      rate.Burst,
		Remaining:  res[1],
		ResetAfter: time.Duration(res[2]) * time.Microsecond,
		RetryAfter: time.Duration(res[3]) * time.Microsecond,
	}
	switch {
	case tooLarge:
		d.Allowed, d.Refusal, d.RetryAfter = false, ratelimit.RequestTooLarge, 0
	case !d.Allowed:
		d.Refusal = ratelimit.BucketSpent
	}
	return d, nil
}
