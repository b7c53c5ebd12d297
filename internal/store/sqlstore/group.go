package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// Group commit (SQLite). SQLite runs one write transaction at a time, and its COMMIT (the WAL
// write) was close to half the CPU of a job: each submit and each settlement paid one. Here
// every InTx on SQLite is handed to one committer goroutine, which runs the transactions that
// wait at that moment in one BEGIN … COMMIT, each inside its own SAVEPOINT: a transaction whose
// function fails is rolled back to its savepoint and leaves the others untouched. Every caller
// gets its answer only after the COMMIT that holds its work returned, so nothing acknowledged
// is lost by a crash; when the COMMIT fails, every transaction of the batch fails with it.
//
// A batch of one runs exactly as a plain transaction (no savepoint). Inside a batch of several,
// statements ignore their caller's cancellation: SQLite answers an interrupted write inside a
// transaction by rolling the whole transaction back, which would undo the others' work. A
// caller whose context is done before its turn is not run.

// maxBatch bounds the transactions one COMMIT carries.
const maxBatch = 64

type groupReq struct {
	ctx  context.Context
	fn   func(*Tx) error
	done chan groupResult
}

type groupResult struct {
	err      error
	panicked bool
	panicVal any
}

type group struct {
	c       *conn
	queue   chan *groupReq
	stop    chan struct{}
	stopped chan struct{}
	once    sync.Once
	taken   atomic.Int64 // transactions taken from the queue so far (the tests watch it)
}

func newGroup(c *conn) *group {
	g := &group{c: c, queue: make(chan *groupReq, maxBatch), stop: make(chan struct{}), stopped: make(chan struct{})}
	go g.run()
	return g
}

// errClosed answers transactions asked of a closed database.
var errClosed = errors.New("sqlstore: database closed")

// do runs fn in the next batch and returns once that batch committed or rolled back.
func (g *group) do(ctx context.Context, fn func(*Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r := &groupReq{ctx: ctx, fn: fn, done: make(chan groupResult, 1)}
	select {
	case g.queue <- r:
	case <-g.stop:
		return errClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	// Once queued, the answer is awaited whatever the context: the work may already be in a
	// batch that commits. A request queued as the database closed, after the last drain, is
	// answered here.
	var res groupResult
	select {
	case res = <-r.done:
	case <-g.stopped:
		select {
		case res = <-r.done:
		default:
			res = groupResult{err: errClosed}
		}
	}
	if res.panicked {
		panic(res.panicVal)
	}
	return res.err
}

func (g *group) close() {
	g.once.Do(func() {
		close(g.stop)
		<-g.stopped
	})
}

func (g *group) run() {
	defer close(g.stopped)
	batch := make([]*groupReq, 0, maxBatch)
	for {
		select {
		case r := <-g.queue:
			batch = append(batch[:0], r)
		case <-g.stop:
			g.drain()
			return
		}
	fill:
		for len(batch) < maxBatch {
			select {
			case r := <-g.queue:
				batch = append(batch, r)
			default:
				break fill
			}
		}
		g.taken.Add(int64(len(batch)))
		g.commit(batch)
		clear(batch)
	}
}

// drain answers the transactions still queued when the database closes.
func (g *group) drain() {
	for {
		select {
		case r := <-g.queue:
			r.done <- groupResult{err: errClosed}
		default:
			return
		}
	}
}

// call runs one transaction's function, turning a panic into a result the caller re-raises.
func call(fn func(*Tx) error, tx *Tx) (res groupResult) {
	defer func() {
		if v := recover(); v != nil {
			res = groupResult{err: fmt.Errorf("sqlstore: transaction panicked: %v", v), panicked: true, panicVal: v}
		}
	}()
	return groupResult{err: fn(tx)}
}

func (g *group) commit(batch []*groupReq) {
	c := g.c
	c.writer <- struct{}{}
	defer func() { <-c.writer }()
	fail := func(rs []*groupReq, err error) {
		for _, r := range rs {
			r.done <- groupResult{err: err}
		}
	}
	// Callers whose context ended while they waited are not run.
	live := batch[:0:0]
	for _, r := range batch {
		if err := r.ctx.Err(); err != nil {
			r.done <- groupResult{err: err}
			continue
		}
		live = append(live, r)
	}
	if len(live) == 0 {
		return
	}
	ctx := context.Background()
	tx, err := c.raw.BeginTx(ctx, nil)
	if err != nil {
		fail(live, err)
		return
	}
	c.commits.Add(1)
	if c.ckpt != nil {
		c.ckpt.committed()
	}
	if len(live) == 1 {
		r := live[0]
		c.transactions.Add(1)
		res := call(r.fn, &Tx{q: txConn{tx: tx, c: c}, dialect: SQLite})
		if res.err != nil {
			_ = tx.Rollback()
			r.done <- res
			return
		}
		r.done <- groupResult{err: tx.Commit()}
		return
	}
	results := make([]groupResult, len(live))
	q := &Tx{q: txConn{tx: tx, c: c, shared: true}, dialect: SQLite}
	for i, r := range live {
		c.transactions.Add(1)
		if _, err := tx.ExecContext(ctx, "SAVEPOINT g"); err != nil {
			_ = tx.Rollback()
			fail(live, err)
			return
		}
		results[i] = call(r.fn, q)
		var err error
		if results[i].err != nil {
			_, err = tx.ExecContext(ctx, "ROLLBACK TO g")
		}
		if err == nil {
			_, err = tx.ExecContext(ctx, "RELEASE g")
		}
		if err != nil {
			// The transaction itself is gone (SQLite rolled it back on an I/O or
			// interrupt error): everyone's work of this batch is lost and said so.
			_ = tx.Rollback()
			for j, r := range live {
				if j <= i && results[j].err != nil {
					r.done <- results[j]
				} else {
					r.done <- groupResult{err: err}
				}
			}
			return
		}
	}
	cerr := tx.Commit()
	for i, r := range live {
		if results[i].err != nil {
			r.done <- results[i]
		} else {
			r.done <- groupResult{err: cerr}
		}
	}
}
