package redisnotify_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/modelexec/modelexec/internal/jobs"
	"github.com/modelexec/modelexec/internal/jobs/redisnotify"
)

// realRedis is a client of MODELEXEC_TEST_REDIS; the test is skipped without one (and fails
// under CI=true, where .ci/run starts Redis).
func realRedis(t *testing.T) *goredis.Client {
	t.Helper()
	raw := os.Getenv("MODELEXEC_TEST_REDIS")
	if raw == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("MODELEXEC_TEST_REDIS is not set under CI=true")
		}
		t.Skip("MODELEXEC_TEST_REDIS not set (redis://host:port/db); skipping")
	}
	opt, err := goredis.ParseURL(raw)
	if err != nil {
		t.Fatal(err)
	}
	c := goredis.NewClient(opt)
	t.Cleanup(func() { c.Close() })
	return c
}

// heard collects the notices one process hears.
type heard struct {
	mu  sync.Mutex
	got []jobs.Notice
	ch  chan struct{}
}

func (h *heard) add(n jobs.Notice) {
	h.mu.Lock()
	h.got = append(h.got, n)
	h.mu.Unlock()
	select {
	case h.ch <- struct{}{}:
	default:
	}
}

// wait returns the notices heard once there are at least n, failing after 10 s.
func (h *heard) wait(t *testing.T, n int) []jobs.Notice {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		h.mu.Lock()
		got := append([]jobs.Notice(nil), h.got...)
		h.mu.Unlock()
		if len(got) >= n {
			return got
		}
		select {
		case <-h.ch:
		case <-deadline:
			t.Fatalf("heard %d of %d notices: %v", len(got), n, got)
		}
	}
}

// listening starts Listen and returns once Redis counts n subscribers on the channel.
func listening(t *testing.T, ctx context.Context, rdb *goredis.Client, n *redisnotify.Notifier, channel string, subs int64, fn func(jobs.Notice)) {
	t.Helper()
	go func() { _ = n.Listen(ctx, fn) }()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		counts, err := rdb.PubSubNumSub(ctx, channel).Result()
		if err != nil {
			t.Fatal(err)
		}
		if counts[channel] >= subs {
			return
		}
		time.Sleep(time.Millisecond) // polling a condition; no outcome depends on the time
	}
	t.Fatalf("fewer than %d subscribers on %s", subs, channel)
}

// TestI26_RedisNotices: two processes' notifiers on one channel of a real Redis. A notice
// given on one is heard, kind and key intact, by both (the engine acts on its own notices the
// same way as on others'); a burst of notices given at one moment arrives whole and in order;
// a notifier on another deployment's channel hears none of it.
func TestI26_RedisNotices(t *testing.T) {
	rdb := realRedis(t)
	var b [6]byte
	_, _ = rand.Read(b[:])
	channel := "modelexec:jobs:test-" + hex.EncodeToString(b[:])
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	a, bn, other := redisnotify.New(rdb, channel), redisnotify.New(rdb, channel), redisnotify.New(rdb, channel+"-other")
	ha, hb, ho := &heard{ch: make(chan struct{}, 1)}, &heard{ch: make(chan struct{}, 1)}, &heard{ch: make(chan struct{}, 1)}
	listening(t, ctx, rdb, a, channel, 1, ha.add)
	listening(t, ctx, rdb, bn, channel, 2, hb.add)
	listening(t, ctx, rdb, other, channel+"-other", 1, ho.add)

	a.Notify(jobs.Notice{Kind: jobs.HandOff, Key: "image-4b"})
	for _, h := range []*heard{ha, hb} {
		if got := h.wait(t, 1); got[0] != (jobs.Notice{Kind: jobs.HandOff, Key: "image-4b"}) {
			t.Fatalf("first notice heard as %+v", got[0])
		}
	}
	const burst = 2000
	for i := range burst {
		bn.Notify(jobs.Notice{Kind: jobs.Changed, Key: fmt.Sprintf("req-%04d", i)})
	}
	got := ha.wait(t, 1+burst)[1:]
	for i, n := range got {
		if want := (jobs.Notice{Kind: jobs.Changed, Key: fmt.Sprintf("req-%04d", i)}); n != want {
			t.Fatalf("notice %d of the burst: %+v, want %+v", i, n, want)
		}
	}
	other.Notify(jobs.Notice{Kind: jobs.CancelAsked, Key: "elsewhere"})
	if h := ho.wait(t, 1); len(h) != 1 || h[0].Key != "elsewhere" {
		t.Fatalf("the other deployment heard %v", h)
	}
	for _, h := range []*heard{ha, hb} {
		h.mu.Lock()
		for _, n := range h.got {
			if n.Key == "elsewhere" {
				t.Errorf("a notice of another deployment's channel was heard: %+v", n)
			}
		}
		h.mu.Unlock()
	}
}
