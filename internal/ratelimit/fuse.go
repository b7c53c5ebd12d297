package ratelimit

import (
	"hash/maphash"
	"sync"
	"time"
)

// DefaultFuseLimits are the per-instance fuse figures of spec 02 "Order of checks" step 5:
// requests per key per bucket per second, counted by one process. Egress counts requests, not
// megabytes (DESIGN decision 24). The spec names no interactive figure; 5 a second is chosen:
// above generate (3), since a chat turn is cheaper than a job, and far below read (30).
var DefaultFuseLimits = map[Bucket]int{
	Read:        30,
	Write:       10,
	Generate:    3,
	Egress:      30,
	Interactive: 5,
}

// DegradedFuseLimit is the fuse figure for every bucket while the Guard has tripped.
const DegradedFuseLimit = 1

// FuseOptions configures a Fuse.
type FuseOptions struct {
	Limits  map[Bucket]int // defaults to DefaultFuseLimits
	MaxKeys int            // entries held at most; defaults to DefaultMaxKeys
	Guard   *Guard         // when set and tripped, every limit drops to DegradedFuseLimit
}

// Fuse is the per-instance fuse: a count per key per bucket per wall-clock second, kept in this
// process only and checked before the shared limiter is asked, so a burst from one key cannot
// flood the limiter. It is safe for concurrent use.
//
// Memory stays bounded: counts of past seconds are dead and swept when a shard grows, and a
// shard that is still at its cap with counts of the current second is cleared (the fuse is a
// guard rail, not an account; forgetting a count for one second is the cheapest way out).
type Fuse struct {
	limits   map[Bucket]int
	guard    *Guard
	seed     maphash.Seed
	perShard int
	shards   [shardCount]fuseShard
}

type fuseCount struct {
	sec int64 // Unix second the count belongs to
	n   int
}

type fuseShard struct {
	mu      sync.Mutex
	counts  map[entryKey]fuseCount
	sweepAt int
}

// NewFuse returns a Fuse.
func NewFuse(opts FuseOptions) *Fuse {
	if opts.Limits == nil {
		opts.Limits = DefaultFuseLimits
	}
	if opts.MaxKeys <= 0 {
		opts.MaxKeys = DefaultMaxKeys
	}
	f := &Fuse{limits: opts.Limits, guard: opts.Guard, seed: maphash.MakeSeed()}
	f.perShard = max(opts.MaxKeys/shardCount, 1)
	for i := range f.shards {
		f.shards[i].counts = make(map[entryKey]fuseCount)
		f.shards[i].sweepAt = min(64, f.perShard)
	}
	return f
}

// Limit is the fuse figure in force for a bucket at now: DegradedFuseLimit while the guard has
// tripped, else the configured figure. An unknown bucket has no fuse (0).
func (f *Fuse) Limit(b Bucket, now time.Time) int {
	l, ok := f.limits[b]
	if !ok {
		return 0
	}
	if f.guard != nil && f.guard.Tripped(now) {
		return min(l, DegradedFuseLimit)
	}
	return l
}

// Allow counts one request of key against bucket b in now's second and reports whether it is
// within the fuse. A refused request is not counted. An unknown bucket is always allowed (the
// limiter refuses it with ErrUnknownBucket).
func (f *Fuse) Allow(key string, b Bucket, now time.Time) bool {
	limit := f.Limit(b, now)
	if limit == 0 {
		_, ok := f.limits[b]
		return !ok
	}
	sec := now.Unix()
	k := entryKey{key, b}
	s := &f.shards[maphash.String(f.seed, key)%shardCount]

	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.counts[k]
	if !ok || c.sec != sec {
		if !ok && len(s.counts) >= s.sweepAt {
			f.sweep(s, sec)
		}
		c = fuseCount{sec: sec}
	}
	if c.n >= limit {
		return false
	}
	c.n++
	s.counts[k] = c
	return true
}

func (f *Fuse) sweep(s *fuseShard, sec int64) {
	for k, c := range s.counts {
		if c.sec != sec {
			delete(s.counts, k)
		}
	}
	if len(s.counts) >= f.perShard {
		clear(s.counts)
	}
	s.sweepAt = min(max(2*len(s.counts), 64), f.perShard)
}

// Len is the number of counts held (at most MaxKeys).
func (f *Fuse) Len() int {
	n := 0
	for i := range f.shards {
		s := &f.shards[i]
		s.mu.Lock()
		n += len(s.counts)
		s.mu.Unlock()
	}
	return n
}
