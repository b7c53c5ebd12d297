package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/modelexec/modelexec/internal/jobs"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
)

// Notifier carries the jobs engine's notices between processes through PostgreSQL's LISTEN
// and NOTIFY, on one channel per deployment (NoticeChannel). The notices given at one moment
// go in one NOTIFY (several lines of one payload), sent by Listen's own loop: a busy process
// sends a few NOTIFYs a second, not one a job. It serves PostgreSQL only; a service of one
// process over SQLite needs none.
type Notifier struct {
	c       *Conn
	channel string
	queue   *jobs.NoticeQueue
}

var _ jobs.Notifier = (*Notifier)(nil)

const (
	notifyChannel = "modelexec_jobs"
	// maxPayload stays under PostgreSQL's limit of 8,000 bytes a notification.
	maxPayload = 7000
)

// NewNotifier answers the notifier of the database of db, a store this package opened.
func NewNotifier(db *sqlstore.DB) (*Notifier, error) {
	c, ok := db.Conn().(*Conn)
	if !ok {
		return nil, errors.New("postgres: notices between processes need a PostgreSQL database")
	}
	return &Notifier{c: c, channel: NoticeChannel(db), queue: jobs.NewNoticeQueue(maxPayload)}, nil
}

// NoticeChannel is the channel the processes of db's deployment share: notifyChannel, or for
// a deployment in a schema of its own (a search_path in the database URL) the channel named
// after it, so that deployments sharing a database do not hear each other's notices. A
// channel name is an identifier of at most 63 bytes: the schema's part is a hash of it.
func NoticeChannel(db *sqlstore.DB) string {
	c, ok := db.Conn().(*Conn)
	if !ok {
		return notifyChannel
	}
	path := c.pool.Config().ConnConfig.RuntimeParams["search_path"]
	if path == "" {
		return notifyChannel
	}
	sum := sha256.Sum256([]byte(path))
	return notifyChannel + "_" + hex.EncodeToString(sum[:8])
}

// Notify queues x for the next NOTIFY.
func (n *Notifier) Notify(x jobs.Notice) { n.queue.Add(x) }

// Listen holds a connection that listens on the channel and calls fn with every notice any
// process sent (this one's included) until ctx ends; meanwhile it sends this process's.
func (n *Notifier) Listen(ctx context.Context, fn func(jobs.Notice)) error {
	// A connection of its own, outside the pool: it listens for as long as the process runs.
	pc, err := pgx.ConnectConfig(ctx, n.c.pool.Config().ConnConfig.Copy())
	if err != nil {
		return err
	}
	defer pc.Close(context.WithoutCancel(ctx))
	ctx, cancel := context.WithCancel(ctx)
	sent := make(chan struct{})
	go func() { defer close(sent); n.queue.Send(ctx, n.notify) }()
	// The sender ends on cancel: one deferred call, in this order, so that a lost session
	// returns its error (and the caller listens again) instead of waiting on the sender.
	defer func() { cancel(); <-sent }()
	if _, err := pc.Exec(ctx, "LISTEN "+pgx.Identifier{n.channel}.Sanitize()); err != nil {
		return err
	}
	for {
		note, err := pc.WaitForNotification(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		jobs.ReadNotices(note.Payload, fn)
	}
}

// notify sends one payload of notices.
func (n *Notifier) notify(ctx context.Context, payload string) error {
	_, err := n.c.ExecContext(ctx, "SELECT pg_notify($1, $2)", n.channel, payload) // bounded, as every statement
	return err
}
