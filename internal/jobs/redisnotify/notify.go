// Package redisnotify carries the jobs engine's notices between processes through Redis
// pub/sub (`serve --redis`), the jobs.Notifier beside the one PostgreSQL's LISTEN/NOTIFY
// gives (store/postgres). Every process of a deployment subscribes to one channel; the notices
// a process gives at one moment go out in one PUBLISH (one line each), sent by Listen's own
// loop, so a busy process publishes a few messages a second, not one a job.
//
// Pub/sub keeps nothing: a process that is not subscribed at the moment (restarting, or cut
// from Redis while the client reconnects) misses what was published meanwhile. The engine
// covers that as it does for PostgreSQL: workers look for hand-offs, and held requests and
// streams read their job, on a slow poll besides.
//
// It owns the channel's message format only; it must not import net/http, database/sql or any
// store.
package redisnotify

import (
	"context"
	"strings"
	"sync"

	goredis "github.com/redis/go-redis/v9"

	"github.com/modelexec/modelexec/internal/jobs"
)

const (
	// maxMessage bounds one PUBLISH: notices beyond it go in the next.
	maxMessage = 32 << 10
	// maxPending bounds the notices waiting to be published; past it the oldest are dropped
	// (each process's sweep and waiters' polls find what a lost notice would have told).
	maxPending = 10000
)

// Notifier is the Redis pub/sub jobs.Notifier.
type Notifier struct {
	rdb     *goredis.Client
	channel string

	mu      sync.Mutex
	pending []jobs.Notice
	wake    chan struct{}
}

var _ jobs.Notifier = (*Notifier)(nil)

// New answers a notifier publishing and subscribing on channel, over a client the caller owns
// (and closes). Every process of one deployment must name the same channel, and deployments
// sharing one Redis different ones.
func New(rdb *goredis.Client, channel string) *Notifier {
	return &Notifier{rdb: rdb, channel: channel, wake: make(chan struct{}, 1)}
}

// Notify queues x for the next PUBLISH.
func (n *Notifier) Notify(x jobs.Notice) {
	n.mu.Lock()
	if len(n.pending) >= maxPending {
		n.pending = n.pending[1:]
	}
	n.pending = append(n.pending, x)
	n.mu.Unlock()
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

// Listen subscribes to the channel and calls fn with every notice any process published (this
// one's included) until ctx ends; meanwhile it publishes this process's. It answers once
// subscribed or with the error of the first subscription; later losses of the connection are
// retried by the client (what was published meanwhile is missed).
func (n *Notifier) Listen(ctx context.Context, fn func(jobs.Notice)) error {
	ps := n.rdb.Subscribe(ctx, n.channel)
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil { // the subscription's confirmation
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sent := make(chan struct{})
	go func() { defer close(sent); n.send(ctx) }()
	defer func() { <-sent }()
	msgs := ps.Channel()
	for {
		select {
		case <-ctx.Done():
			return nil
		case m, ok := <-msgs:
			if !ok {
				return nil
			}
			for _, line := range strings.Split(m.Payload, "\n") {
				if kind, key, ok := strings.Cut(line, " "); ok {
					fn(jobs.Notice{Kind: jobs.NoticeKind(kind), Key: key})
				}
			}
		}
	}
}

// send publishes the pending notices whenever some wait, until ctx ends.
func (n *Notifier) send(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-n.wake:
		}
		for msg := n.take(); msg != ""; msg = n.take() {
			if err := n.rdb.Publish(ctx, n.channel, msg).Err(); err != nil {
				break // the notices are lost; the sweep and the polls cover them
			}
		}
	}
}

// take removes the pending notices that fit in one message and answers it.
func (n *Notifier) take() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	var b strings.Builder
	i := 0
	for ; i < len(n.pending); i++ {
		line := string(n.pending[i].Kind) + " " + n.pending[i].Key
		if b.Len()+len(line)+1 > maxMessage {
			break
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(line)
	}
	if i == 0 && len(n.pending) > 0 {
		i = 1 // a notice longer than a message is never sent
	}
	n.pending = n.pending[i:]
	return b.String()
}
