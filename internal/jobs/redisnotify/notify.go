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

	goredis "github.com/redis/go-redis/v9"

	"github.com/modelexec/modelexec/internal/jobs"
)

// maxMessage bounds one PUBLISH: notices beyond it go in the next.
const maxMessage = 32 << 10

// Notifier is the Redis pub/sub jobs.Notifier.
type Notifier struct {
	rdb     *goredis.Client
	channel string
	queue   *jobs.NoticeQueue
}

var _ jobs.Notifier = (*Notifier)(nil)

// New answers a notifier publishing and subscribing on channel, over a client the caller owns
// (and closes). Every process of one deployment must name the same channel, and deployments
// sharing one Redis different ones.
func New(rdb *goredis.Client, channel string) *Notifier {
	return &Notifier{rdb: rdb, channel: channel, queue: jobs.NewNoticeQueue(maxMessage)}
}

// Notify queues x for the next PUBLISH.
func (n *Notifier) Notify(x jobs.Notice) { n.queue.Add(x) }

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
	go func() { defer close(sent); n.queue.Send(ctx, n.publish) }()
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
			jobs.ReadNotices(m.Payload, fn)
		}
	}
}

// publish sends one payload of notices.
func (n *Notifier) publish(ctx context.Context, payload string) error {
	return n.rdb.Publish(ctx, n.channel, payload).Err()
}
