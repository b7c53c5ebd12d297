package redis_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	goredis "github.com/redis/go-redis/v9"

	"github.com/modelexec/modelexec/internal/ratelimit"
	"github.com/modelexec/modelexec/internal/ratelimit/ratelimittest"
	rlredis "github.com/modelexec/modelexec/internal/ratelimit/redis"
)

// client fails fast: no retries, short timeouts (what production should configure too).
func client(t testing.TB, addr string, db int) *goredis.Client {
	c := goredis.NewClient(&goredis.Options{
		Addr: addr, DB: db, MaxRetries: -1, DialerRetries: 1,
		DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second,
	})
	t.Cleanup(func() { c.Close() })
	return c
}

// TestMiniredis runs the behaviour suite on miniredis, whose TIME the test sets: the fake-clock
// cases (refill, Retry-After, the 24-hour edge) run exactly, and stopping it mid-test proves the
// limiter-failure fuse. Proves RL-01, RL-04 to RL-19, ORD-05, ORD-06, ORD-08 for the Redis limiter.
func TestMiniredis(t *testing.T) {
	clock := ratelimittest.NewClock()
	var mu sync.Mutex
	var servers []*miniredis.Miniredis
	start := func(t *testing.T) *miniredis.Miniredis {
		m := miniredis.RunT(t)
		m.SetTime(clock.Now())
		mu.Lock()
		servers = append(servers, m)
		mu.Unlock()
		return m
	}
	ratelimittest.Run(t, ratelimittest.Harness{
		New: func(t *testing.T) (ratelimit.Limiter, func()) {
			m := start(t)
			return rlredis.New(client(t, m.Addr(), 0), rlredis.Options{Clock: clock.Now}), m.Close
		},
		Now: clock.Now,
		Advance: func(d time.Duration) {
			clock.Advance(d)
			mu.Lock()
			defer mu.Unlock()
			for _, m := range servers {
				m.SetTime(clock.Now())
				m.FastForward(d)
			}
		},
		Twin: func(t *testing.T) (ratelimit.Limiter, ratelimit.Limiter) {
			m := start(t)
			return rlredis.New(client(t, m.Addr(), 0), rlredis.Options{Clock: clock.Now}),
				rlredis.New(client(t, m.Addr(), 0), rlredis.Options{Clock: clock.Now})
		},
	})
}

// realRedis returns the address and database of MODELEXEC_TEST_REDIS or skips.
func realRedis(t testing.TB) (string, int) {
	url := os.Getenv("MODELEXEC_TEST_REDIS")
	if url == "" {
		t.Skip("MODELEXEC_TEST_REDIS is unset (e.g. redis://127.0.0.1:6379/0): real-Redis tests skipped")
	}
	opts, err := goredis.ParseURL(url)
	if err != nil {
		t.Fatalf("MODELEXEC_TEST_REDIS: %v", err)
	}
	return opts.Addr, opts.DB
}

// TestRedis runs the behaviour suite on the real Redis of MODELEXEC_TEST_REDIS, each subtest
// under its own key prefix. Time is the server's own, so the fake-clock cases skip and counts
// allow for tokens regained while the test ran. Each limiter talks through a TCP proxy the test
// can shut, so "Redis stopped mid-test" is a refused connection, as in production.
// Proves RL-01, RL-04 to RL-19, ORD-05, ORD-06, ORD-08 against Redis itself.
func TestRedis(t *testing.T) {
	addr, db := realRedis(t)
	ratelimittest.Run(t, ratelimittest.Harness{
		New: func(t *testing.T) (ratelimit.Limiter, func()) {
			p := proxy(t, addr)
			return rlredis.New(client(t, p.addr(), db), rlredis.Options{Prefix: ratelimittest.Unique(t)}), p.stop
		},
		Now: time.Now,
		Twin: func(t *testing.T) (ratelimit.Limiter, ratelimit.Limiter) {
			prefix := ratelimittest.Unique(t)
			return rlredis.New(client(t, addr, db), rlredis.Options{Prefix: prefix}),
				rlredis.New(client(t, addr, db), rlredis.Options{Prefix: prefix})
		},
	})
}

// TestRedisKeyExpiresWhenFull: a bucket's key lives only until the bucket is full again, so
// idle keys cost Redis nothing.
func TestRedisKeyExpiresWhenFull(t *testing.T) {
	m := miniredis.RunT(t)
	m.SetTime(ratelimittest.Start)
	l := rlredis.New(client(t, m.Addr(), 0), rlredis.Options{Clock: func() time.Time { return ratelimittest.Start }})
	if _, err := l.Admit(context.Background(), ratelimit.Request{Key: "k", Plan: "pro", Bucket: ratelimit.Generate, Cost: 2}); err != nil {
		t.Fatal(err)
	}
	key := l.Key("k", ratelimit.Generate)
	if ttl := m.TTL(key); ttl != 6*time.Second {
		t.Fatalf("TTL = %v, want 6 s (two tokens at 3 s)", ttl)
	}
	m.FastForward(6 * time.Second)
	if m.Exists(key) {
		t.Fatalf("key still there once the bucket is full")
	}
}

// TestRedisErrorsAreReturned: a Redis that cannot be reached is an error, never a refusal.
// Proves RL-18 (the error the Guard turns into limiter_unavailable).
func TestRedisErrorsAreReturned(t *testing.T) {
	m := miniredis.RunT(t)
	l := rlredis.New(client(t, m.Addr(), 0), rlredis.Options{})
	m.Close()
	d, err := l.Admit(context.Background(), ratelimit.Request{Key: "k", Plan: "pro", Bucket: ratelimit.Read, Cost: 1})
	if err == nil {
		t.Fatalf("Admit on a stopped Redis = %+v, nil error", d)
	}
	// refusals decided without state need no Redis: still answered
	if d, err := l.Admit(context.Background(), ratelimit.Request{Key: "k", Plan: "pro", Bucket: ratelimit.Generate, Cost: 6}); err != nil || d.Refusal != ratelimit.RequestTooLarge || d.Limit != 5 {
		t.Fatalf("too large on a stopped Redis = %+v %v", d, err)
	}
	if d, err := l.Admit(context.Background(), ratelimit.Request{Key: "k", Plan: "free", Bucket: ratelimit.Generate, Cost: 1}); err != nil || d.Refusal != ratelimit.PlanHasNoAPIGenerate {
		t.Fatalf("free generate on a stopped Redis = %+v %v", d, err)
	}
}

type tcpProxy struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

// proxy forwards a local port to addr until stop, which closes the listener and every
// connection: the client then sees the refusals of a stopped Redis.
func proxy(t testing.TB, addr string) *tcpProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", addr)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, u)
			p.mu.Unlock()
			go func() { io.Copy(u, c); u.Close() }()
			go func() { io.Copy(c, u); c.Close() }()
		}
	}()
	t.Cleanup(p.stop)
	return p
}

func (p *tcpProxy) addr() string { return p.ln.Addr().String() }

func (p *tcpProxy) stop() {
	p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

func benchAdmit(b *testing.B, l ratelimit.Limiter) {
	ctx := context.Background()
	ks := make([]string, 10_000)
	for i := range ks {
		ks[i] = fmt.Sprintf("key%dabcdefgh", i)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := l.Admit(ctx, ratelimit.Request{Key: ks[i%len(ks)], Plan: "ultimate", Bucket: ratelimit.Read, Cost: 1}); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkAdmitRedis is one admission on the real Redis of MODELEXEC_TEST_REDIS: one EVALSHA
// round trip.
func BenchmarkAdmitRedis(b *testing.B) {
	addr, db := realRedis(b)
	benchAdmit(b, rlredis.New(client(b, addr, db), rlredis.Options{Prefix: fmt.Sprintf("rlbench:%d:", time.Now().UnixNano())}))
}

// BenchmarkAdmitRedisParallel is the same from many goroutines sharing one client pool.
func BenchmarkAdmitRedisParallel(b *testing.B) {
	addr, db := realRedis(b)
	l := rlredis.New(client(b, addr, db), rlredis.Options{Prefix: fmt.Sprintf("rlbench:%d:", time.Now().UnixNano())})
	ctx := context.Background()
	b.ReportAllocs()
	b.SetParallelism(8)
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			if _, err := l.Admit(ctx, ratelimit.Request{Key: "key" + strconv.Itoa(i%10_000), Plan: "ultimate", Bucket: ratelimit.Read, Cost: 1}); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
}

// BenchmarkAdmitMiniredis is the Redis limiter on miniredis (the Lua script in gopher-lua).
func BenchmarkAdmitMiniredis(b *testing.B) {
	m := miniredis.RunT(b)
	benchAdmit(b, rlredis.New(client(b, m.Addr(), 0), rlredis.Options{}))
}

// TestRL13_RedisScriptIsGCRA: the script is ratelimit.GCRA in microseconds. For buckets written
// under the first day's rate or another plan's, the script answers what GCRA answers and stores
// the state GCRA returns.
func TestRL13_RedisScriptIsGCRA(t *testing.T) {
	m := miniredis.RunT(t)
	m.SetTime(ratelimittest.Start)
	l := rlredis.New(client(t, m.Addr(), 0), rlredis.Options{Clock: func() time.Time { return ratelimittest.Start }})
	now := ratelimittest.Start.UnixNano()
	n := 0
	for _, plan := range []string{"free", "pro", "ultimate"} {
		for _, b := range []ratelimit.Bucket{ratelimit.Read, ratelimit.Generate, ratelimit.Egress} {
			rate := ratelimit.Plans[plan][b]
			if rate.Zero() {
				continue
			}
			young, _ := ratelimit.Policy(plan, b, ratelimittest.Start, ratelimittest.Start)
			for _, was := range []ratelimit.Rate{young, ratelimit.Plans["free"][ratelimit.Read], ratelimit.Plans["max"][b]} {
				for _, debt := range []int64{int64(was.Interval()) / 2, int64(was.Fill()), int64(rate.Fill()) * 3 / 2} {
					for _, c := range []struct {
						cost     int64
						overdraw bool
					}{{1, false}, {rate.Burst, false}, {1, true}, {rate.Burst, true}, {3 * rate.Burst, true}} {
						cost := c.cost
						st := ratelimit.State{TAT: now + debt, Interval: int64(was.Interval())}
						key := fmt.Sprintf("k%d", n)
						n++
						stored := fmt.Sprintf("%d:%d", st.TAT/1000, st.Interval/1000)
						m.Set(l.Key(key, b), stored)
						want, wantState := ratelimit.GCRA(rate, st, now, cost, c.overdraw)
						got, err := l.Admit(context.Background(), ratelimit.Request{Key: key, Plan: plan, Bucket: b, Cost: cost, Overdraw: c.overdraw})
						if err != nil {
							t.Fatal(err)
						}
						what := fmt.Sprintf("%s %s, stored %q (%+v), cost %d, overdraw %v", plan, b, stored, st, cost, c.overdraw)
						if got != want {
							t.Errorf("%s:\nscript %+v\n  GCRA %+v", what, got, want)
						}
						after, _ := m.Get(l.Key(key, b))
						wantStored := stored
						if wantState != st {
							wantStored = fmt.Sprintf("%d:%d", wantState.TAT/1000, wantState.Interval/1000)
						}
						if after != wantStored {
							t.Errorf("%s: stored %q after, want %q (%+v)", what, after, wantStored, wantState)
						}
					}
				}
			}
		}
	}
}
