// Package redisseats counts held-connection seats (jobs.Seats) in Redis (`--redis`), so that
// every process sharing the Redis gives an account, a product and the platform one set of
// seats, not one per process.
//
// Each cap is a sorted set (<prefix>{seats}:all, :p:<product>, :a:<account>) of the seats held
// under it, each scored with the time its lease ends. One Lua script drops the ended leases,
// checks the three caps in the order jobs.LocalSeats does and takes the seat in all three, with
// the Redis server's clock. A process renews its seats' leases every Lease/3 (Run); a process
// that dies holding seats leaves them until their leases end, within Lease.
//
// When Redis cannot be reached a seat is counted in this process instead (jobs.LocalSeats with
// the same caps), and the failure is logged: held connections keep working, bounded per
// process, while the rate limiter in front of them answers limiter_unavailable.
//
// It must not import net/http handlers, database/sql or any store.
package redisseats

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/modelexec/modelexec/internal/jobs"
)

// acquire drops the ended leases of each cap's set, refuses the first cap that is full, and
// otherwise adds the seat to all three sets under a lease of ARGV[2] ms. The keys expire twice
// a lease after their last seat, so an idle account leaves nothing behind.
//
// KEYS: platform, product, account sets. ARGV: member, lease ms, platform, product, account caps.
var acquire = goredis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lease = tonumber(ARGV[2])
local refusals = {'` + jobs.PlatformBusy + `', '` + jobs.ProductBusy + `', '` + jobs.AccountBusy + `'}
for i = 1, 3 do
  redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', now)
  if redis.call('ZCARD', KEYS[i]) >= tonumber(ARGV[i + 2]) then
    return refusals[i]
  end
end
for i = 1, 3 do
  redis.call('ZADD', KEYS[i], now + lease, ARGV[1])
  redis.call('PEXPIRE', KEYS[i], 2 * lease)
end
return ''
`)

// renew extends the leases of seats still held (XX: a seat released meanwhile stays released).
//
// KEYS: the sets of the seats, three a seat. ARGV: lease ms, then one member per seat.
var renew = goredis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lease = tonumber(ARGV[1])
for i = 1, #KEYS do
  local member = ARGV[2 + math.floor((i - 1) / 3)]
  redis.call('ZADD', KEYS[i], 'XX', now + lease, member)
  redis.call('PEXPIRE', KEYS[i], 2 * lease)
end
return 0
`)

// Options configure Seats.
type Options struct {
	PerAccount, PerProduct, Platform int
	// Lease is how long a seat of a process that stopped renewing it stays taken (default 30 s).
	Lease time.Duration
	// Prefix starts every key (default "modelexec:").
	Prefix string
	Log    *slog.Logger
}

// Seats are jobs.Seats shared through Redis.
type Seats struct {
	rdb   goredis.UniversalClient
	opt   Options
	local *jobs.LocalSeats // where seats are counted while Redis cannot be reached
	self  string           // this process's part of every member it adds
	next  atomic.Uint64

	mu   sync.Mutex
	held map[string][3]string // member → its three keys
}

var _ jobs.Seats = (*Seats)(nil)

// New counts seats in rdb.
func New(rdb goredis.UniversalClient, o Options) *Seats {
	if o.Lease <= 0 {
		o.Lease = 30 * time.Second
	}
	if o.Prefix == "" {
		o.Prefix = "modelexec:"
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	return &Seats{rdb: rdb, opt: o, local: jobs.NewSeats(o.PerAccount, o.PerProduct, o.Platform), self: hex.EncodeToString(b[:]),
		held: map[string][3]string{}}
}

// keys are the sets of the three caps a seat of account and product is counted under; one
// hash tag, so a cluster keeps them on one node for the script.
func (s *Seats) keys(account, product string) [3]string {
	p := s.opt.Prefix + "{seats}:"
	return [3]string{p + "all", p + "p:" + product, p + "a:" + account}
}

// Acquire takes one seat under the three caps.
func (s *Seats) Acquire(account, product string) (release func(), declined string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	keys := s.keys(account, product)
	member := s.self + ":" + strconv.FormatUint(s.next.Add(1), 36)
	o := s.opt
	res, err := acquire.Run(ctx, s.rdb, keys[:], member, o.Lease.Milliseconds(), o.Platform, o.PerProduct, o.PerAccount).Text()
	if err != nil {
		o.Log.Warn("seats: Redis cannot be reached; counting this seat in this process", "error", err)
		return s.local.Acquire(account, product)
	}
	if res != "" {
		return nil, res
	}
	s.mu.Lock()
	s.held[member] = keys
	s.mu.Unlock()
	var once sync.Once
	return func() { once.Do(func() { s.release(member, keys) }) }, ""
}

// release gives a seat back; when Redis cannot be reached its lease ends it.
func (s *Seats) release(member string, keys [3]string) {
	s.mu.Lock()
	delete(s.held, member)
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	pipe := s.rdb.Pipeline()
	for _, k := range keys {
		pipe.ZRem(ctx, k, member)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		s.opt.Log.Warn("seats: a seat could not be given back; its lease will end it", "error", err)
	}
}

// InUse is how many held connections of this process hold a seat.
func (s *Seats) InUse() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.held) + s.local.InUse()
}

// Run renews this process's seats every Lease/3 until ctx ends.
func (s *Seats) Run(ctx context.Context) error {
	t := time.NewTicker(s.opt.Lease / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if err := s.Renew(ctx); err != nil {
				s.opt.Log.Warn("seats: leases could not be renewed", "error", err)
			}
		}
	}
}

// Renew extends the leases of every seat this process holds.
func (s *Seats) Renew(ctx context.Context) error {
	s.mu.Lock()
	keys := make([]string, 0, 3*len(s.held))
	args := []any{s.opt.Lease.Milliseconds()}
	for member, ks := range s.held {
		keys = append(keys, ks[:]...)
		args = append(args, member)
	}
	s.mu.Unlock()
	if len(args) == 1 {
		return nil
	}
	return renew.Run(ctx, s.rdb, keys, args...).Err()
}
