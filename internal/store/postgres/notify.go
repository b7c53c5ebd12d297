package postgres

import (
	"context"
	"errors"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"

	"github.com/modelexec/modelexec/internal/jobs"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
)

// Notifier carries the jobs engine's notices between processes through PostgreSQL's LISTEN
// and NOTIFY, on one channel. The notices given at one moment go in one NOTIFY (several lines
// of one payload), sent by Listen's own loop: a busy process sends a few NOTIFYs a second,
// not one a job. It serves PostgreSQL only; a service of one process over SQLite needs none.
type Notifier struct {
	c *Conn

	mu      sync.Mutex
	pending []jobs.Notice
	wake    chan struct{}
}

var _ jobs.Notifier = (*Notifier)(nil)

const (
	notifyChannel = "modelexec_jobs"
	// maxPayload stays under PostgreSQL's limit of 8,000 bytes a notification.
	maxPayload = 7000
	// maxPending bounds the notices waiting to be sent; past it the oldest are dropped (each
	// process's sweep and waiters' polls find what a lost notice would have told).
	maxPending = 10000
)

// NewNotifier answers the notifier of the database of db, a store this package opened.
func NewNotifier(db *sqlstore.DB) (*Notifier, error) {
	c, ok := db.Conn().(*Conn)
	if !ok {
		return nil, errors.New("postgres: notices between processes need a PostgreSQL database")
	}
	return &Notifier{c: c, wake: make(chan struct{}, 1)}, nil
}

// Notify queues n for the next NOTIFY.
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
	defer cancel()
	sent := make(chan struct{})
	go func() { defer close(sent); n.send(ctx) }()
	defer func() { <-sent }()
	if _, err := pc.Exec(ctx, "LISTEN "+notifyChannel); err != nil {
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
		for _, line := range strings.Split(note.Payload, "\n") {
			if kind, key, ok := strings.Cut(line, " "); ok {
				fn(jobs.Notice{Kind: jobs.NoticeKind(kind), Key: key})
			}
		}
	}
}

// send writes the pending notices as NOTIFYs whenever some wait, until ctx ends.
func (n *Notifier) send(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-n.wake:
		}
		for payload := n.take(); payload != ""; payload = n.take() {
			if _, err := n.c.pool.Exec(ctx, "SELECT pg_notify($1, $2)", notifyChannel, payload); err != nil {
				break // the notices are lost; the sweep and the polls cover them
			}
		}
	}
}

// take removes the pending notices that fit in one payload and answers it.
func (n *Notifier) take() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	var b strings.Builder
	i := 0
	for ; i < len(n.pending); i++ {
		line := string(n.pending[i].Kind) + " " + n.pending[i].Key
		if b.Len()+len(line)+1 > maxPayload {
			break
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(line)
	}
	if i == 0 && len(n.pending) > 0 {
		i = 1 // a notice longer than a payload is never sent
	}
	n.pending = n.pending[i:]
	return b.String()
}
