package ratelimit

import (
	"context"
	"hash/maphash"
	"slices"
	"sync"
	"time"
)

// DefaultMaxKeys bounds the in-process limiter: at most this many (key, bucket) entries are held,
// about 110 bytes each (a bucket's state is its TAT and the interval it was written under).
const DefaultMaxKeys = 1 << 18

const shardCount = 64

// MemoryOptions configures the in-process limiter.
type MemoryOptions struct {
	Clock   func() time.Time // defaults to time.Now
	MaxKeys int              // entries held at most; defaults to DefaultMaxKeys
	Plans   Table            // the bucket table; defaults to Plans
}

// Memory is the in-process Limiter, the embedded default: one process's buckets in a sharded
// map. It is safe for concurrent use.
//
// Memory stays bounded: an entry exists only while its bucket is below full (a full bucket is
// the same as no entry), entries whose bucket has refilled are swept when a shard grows, and
// past MaxKeys the entries nearest to full are dropped first, which can only hand their keys
// back the last few tokens they would have regained anyway.
type Memory struct {
	clock    func() time.Time
	plans    Table
	base     time.Time // times are held as nanoseconds since base (monotonic when the clock is)
	seed     maphash.Seed
	perShard int
	shards   [shardCount]shard
}

type entryKey struct {
	key    string
	bucket Bucket
}

type shard struct {
	mu      sync.Mutex
	buckets map[entryKey]State
	sweepAt int
}

var _ Limiter = (*Memory)(nil)

// NewMemory returns an in-process limiter.
func NewMemory(opts MemoryOptions) *Memory {
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if opts.MaxKeys <= 0 {
		opts.MaxKeys = DefaultMaxKeys
	}
	m := &Memory{clock: opts.Clock, plans: opts.Plans, seed: maphash.MakeSeed()}
	m.base = m.clock()
	m.perShard = max(opts.MaxKeys/shardCount, 1)
	for i := range m.shards {
		m.shards[i].buckets = make(map[entryKey]State)
		m.shards[i].sweepAt = min(64, m.perShard)
	}
	return m
}

// Admit takes r.Cost tokens from the key's bucket if they are there. It never fails except for an
// unknown plan or bucket (ErrUnknownPlan, ErrUnknownBucket).
func (m *Memory) Admit(_ context.Context, r Request) (Decision, error) {
	t := m.clock()
	rate, cost, pre, final, err := m.plans.Resolve(r, t)
	if err != nil || final {
		return pre, err
	}
	now := int64(t.Sub(m.base))
	k := entryKey{r.Key, r.Bucket}
	s := &m.shards[maphash.String(m.seed, r.Key)%shardCount]

	s.mu.Lock()
	defer s.mu.Unlock()
	st, held := s.buckets[k]
	if pre.Refusal == RequestTooLarge {
		cost = 0 // read the bucket, take nothing
	}
	d, next := GCRA(rate, st, now, cost, r.Overdraw)
	if next != st {
		if !held && len(s.buckets) >= s.sweepAt {
			m.sweep(s, now)
		}
		s.buckets[k] = next
	}
	if pre.Refusal == RequestTooLarge {
		d.Allowed, d.Refusal, d.RetryAfter = false, RequestTooLarge, 0
	}
	return d, nil
}

// sweep drops the entries whose bucket is full again; if the shard is still at its cap it drops
// the entries nearest to full until a quarter of the cap is free. The next sweep waits until the
// shard has doubled (or reaches the cap), so sweeping costs O(1) per insert amortised.
func (m *Memory) sweep(s *shard, now int64) {
	for k, st := range s.buckets {
		if st.TAT <= now {
			delete(s.buckets, k)
		}
	}
	if len(s.buckets) >= m.perShard {
		keep := m.perShard * 3 / 4
		if keep == 0 {
			clear(s.buckets)
		} else {
			tats := make([]int64, 0, len(s.buckets))
			for _, st := range s.buckets {
				tats = append(tats, st.TAT)
			}
			slices.Sort(tats)
			cut := tats[len(tats)-keep] // keep the entries furthest from full
			for k, st := range s.buckets {
				if st.TAT < cut {
					delete(s.buckets, k)
				}
			}
			for k, st := range s.buckets { // ties at the cut
				if len(s.buckets) <= keep {
					break
				}
				if st.TAT == cut {
					delete(s.buckets, k)
				}
			}
		}
	}
	s.sweepAt = min(max(2*len(s.buckets), 64), m.perShard)
}

// Len is the number of entries held (buckets below full, at most MaxKeys).
func (m *Memory) Len() int {
	n := 0
	for i := range m.shards {
		s := &m.shards[i]
		s.mu.Lock()
		n += len(s.buckets)
		s.mu.Unlock()
	}
	return n
}
