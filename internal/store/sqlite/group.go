package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/modelexec/modelexec/internal/store/sqlstore"
)

// Group commit. SQLite runs one write transaction at a time, and its COMMIT (the WAL write)
// costs about as much for a few transactions as for one: each submit and each settlement
// would otherwise pay one. Here every InTx is handed to one committer goroutine, which runs the
// transactions that wait at that moment in one BEGIN … COMMIT. Every caller gets its answer only after the
// COMMIT that holds its work returned, so nothing acknowledged is lost by a crash; when the
// COMMIT fails, every transaction of the batch fails with it.
//
// The batch grows while it runs: before its COMMIT, transactions queued while the batch's own
// ran, or while the committer yielded, join it (up to maxBatch), so one COMMIT carries what
// arrived in the meantime instead of leaving it to the next. The COMMIT's WAL write costs
// about the same for a few transactions as for one (the pages they share are written once),
// so the joiners ride along.
//
// A transaction whose function fails must leave the others untouched. The batch first runs
// every function straight in its transaction: a savepoint around each would copy every page
// the function first touches into the sub-journal, a cost paid by every transaction for the
// sake of the few that fail. When one fails, the whole batch is rolled back and the others
// run again, this time each inside its own SAVEPOINT, so a second failure is rolled back to
// its savepoint alone; the first failure (which committed nothing) is answered once they
// committed, as it would have been in their batch. A function may thus run twice, as a
// retried transaction's does on PostgreSQL: the store's transactions are written to be run
// again.
//
// The committer runs on a connection of its own (writer, below), on which every statement is
// prepared once. A transaction alone in its batch runs with its caller's context. Once others
// share the batch, statements ignore their caller's cancellation: SQLite answers an
// interrupted write inside a transaction by rolling the whole transaction back, which would
// undo the others' work. A caller whose context is done before its turn is not run.

// maxBatch bounds the transactions one COMMIT carries.
const maxBatch = 64

type groupReq struct {
	ctx  context.Context
	fn   func(sqlstore.Querier) error
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
	w       *writer      // the committer's connection (only the committer goroutine touches it)
}

func newGroup(c *conn) *group {
	g := &group{c: c, queue: make(chan *groupReq, maxBatch), stop: make(chan struct{}), stopped: make(chan struct{})}
	go g.run()
	return g
}

// errClosed answers transactions asked of a closed database.
var errClosed = errors.New("sqlite: database closed")

// do runs fn in the next batch and returns once that batch committed or rolled back.
func (g *group) do(ctx context.Context, fn func(sqlstore.Querier) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r := &groupReq{ctx: ctx, fn: fn, done: make(chan groupResult, 1)}
	if res, ok := g.alone(r); ok {
		if res.panicked {
			panic(res.panicVal)
		}
		return res.err
	}
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

// alone commits r on its caller's goroutine when the committer is idle: nothing queued and
// the write lock free. A transaction alone would be committed the same way by the committer,
// after two hand-offs between goroutines that cost more, at one caller, than the transaction.
func (g *group) alone(r *groupReq) (groupResult, bool) {
	if len(g.queue) > 0 {
		return groupResult{}, false
	}
	select {
	case g.c.writer <- struct{}{}:
	default:
		return groupResult{}, false
	}
	defer func() { <-g.c.writer }()
	select {
	case <-g.stop:
		return groupResult{err: errClosed}, true
	default:
	}
	g.taken.Add(1)
	g.commitLocked([]*groupReq{r})
	return <-r.done, true
}

func (g *group) close() {
	g.once.Do(func() {
		close(g.stop)
		<-g.stopped
	})
}

func (g *group) run() {
	defer close(g.stopped)
	defer func() {
		g.c.writer <- struct{}{} // a transaction committed on its caller's goroutine ends first
		g.releaseWriter(false)
		<-g.c.writer
	}()
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
func call(fn func(sqlstore.Querier) error, q sqlstore.Querier) (res groupResult) {
	defer func() {
		if v := recover(); v != nil {
			res = groupResult{err: fmt.Errorf("sqlite: transaction panicked: %v", v), panicked: true, panicVal: v}
		}
	}()
	return groupResult{err: fn(q)}
}

func (g *group) commit(batch []*groupReq) {
	g.c.writer <- struct{}{}
	defer func() { <-g.c.writer }()
	g.commitLocked(batch)
}

// commitLocked commits batch, holding the write lock.
func (g *group) commitLocked(batch []*groupReq) {
	rerun, failed, res := g.pass(running(batch), false)
	if failed == nil {
		return
	}
	// The failure is answered after the others committed: it may have been judged on their
	// work (a duplicate key, a balance they spent), which its caller may then read.
	if _, alone, r := g.pass(running(rerun), true); alone != nil {
		alone.done <- r // it failed alone: nothing else shared its transaction
	}
	failed.done <- res
}

// running answers the callers whose context ended while they waited and returns the others.
func running(batch []*groupReq) []*groupReq {
	live := make([]*groupReq, 0, len(batch))
	for _, r := range batch {
		if err := r.ctx.Err(); err != nil {
			r.done <- groupResult{err: err}
			continue
		}
		live = append(live, r)
	}
	return live
}

// pass runs live (and what joins it) in one transaction and commits it, answering every
// caller. Without isolate, the first function that fails rolls the whole transaction back:
// it is returned with its result, unanswered, and so are the others, to run again with
// isolate, where each runs inside its own savepoint. (A transaction alone fails the same way
// in either mode.)
func (g *group) pass(live []*groupReq, isolate bool) (rerun []*groupReq, failed *groupReq, res groupResult) {
	if len(live) == 0 {
		return nil, nil, groupResult{}
	}
	c := g.c
	ctx := context.Background()
	fail := func(rs []*groupReq, err error) {
		for _, r := range rs {
			r.done <- groupResult{err: err}
		}
	}
	w, err := g.begin(ctx)
	if err != nil {
		fail(live, err)
		return nil, nil, groupResult{}
	}
	results := make([]groupResult, 0, len(live))
	for i := 0; i < len(live); i++ {
		r := live[i]
		c.transactions.Add(1)
		// Alone (first, nothing else queued): the caller's own context, no savepoint.
		alone := len(live) == 1
		savepoint := isolate && !alone
		if savepoint {
			if err := w.exec(ctx, "SAVEPOINT g"); err != nil {
				w.rollback()
				fail(live, err)
				return nil, nil, groupResult{}
			}
		}
		res = call(r.fn, writerQ{w: w, c: c, shared: !alone})
		results = append(results, res)
		if res.err != nil && !savepoint {
			// Nothing of the batch is kept: the others run again.
			w.rollback()
			rerun = make([]*groupReq, 0, len(live)-1)
			return append(append(rerun, live[:i]...), live[i+1:]...), r, res
		}
		if savepoint {
			if err := endSavepoint(ctx, w, res.err != nil); err != nil {
				// The transaction itself is gone (SQLite rolled it back on an I/O or
				// interrupt error): everyone's work of this batch is lost and said so.
				w.rollback()
				for j, r := range live {
					if j <= i && results[j].err != nil {
						r.done <- results[j]
					} else {
						r.done <- groupResult{err: err}
					}
				}
				return nil, nil, groupResult{}
			}
		}
		if i == len(live)-1 {
			// Before the COMMIT, the committer lets the goroutines ready to run take their
			// turn: on a busy machine those are the requests about to queue a transaction,
			// which then ride in this COMMIT instead of paying for their own. With nothing
			// else ready it returns at once.
			runtime.Gosched()
			live = g.join(live)
		}
	}
	cerr := w.exec(ctx, "COMMIT")
	if cerr != nil {
		w.rollback()
	}
	for i, r := range live {
		if results[i].err != nil {
			r.done <- results[i]
		} else {
			r.done <- groupResult{err: cerr}
		}
	}
	return nil, nil, groupResult{}
}

// begin takes the writer connection and begins a write transaction on it.
func (g *group) begin(ctx context.Context) (*writer, error) {
	w, err := g.writerConn(ctx)
	if err != nil {
		return nil, err
	}
	if err := w.exec(ctx, "BEGIN IMMEDIATE"); err != nil {
		g.releaseWriter(true)
		return nil, err
	}
	g.c.commits.Add(1)
	if g.c.ckpt != nil {
		g.c.ckpt.committed()
	}
	return w, nil
}

// endSavepoint ends the savepoint of one transaction of a batch: rolled back to when the
// transaction failed, then released.
func endSavepoint(ctx context.Context, w *writer, failed bool) error {
	if failed {
		if err := w.exec(ctx, "ROLLBACK TO g"); err != nil {
			return err
		}
	}
	return w.exec(ctx, "RELEASE g")
}

// join adds to a running batch the transactions queued since it started, up to maxBatch;
// those whose caller gave up while they waited are answered and left out.
func (g *group) join(live []*groupReq) []*groupReq {
	for len(live) < maxBatch {
		select {
		case r := <-g.queue:
			g.taken.Add(1)
			if err := r.ctx.Err(); err != nil {
				r.done <- groupResult{err: err}
				continue
			}
			live = append(live, r)
		default:
			return live
		}
	}
	return live
}

// writer is the committer's own connection, held for the life of the database. Only the
// committer writes through it, so its page cache stays valid from one batch to the next (a
// pooled connection re-reads what another connection changed since it last ran), and its
// statements are prepared on it once: a statement runs without database/sql's per-statement
// transaction bookkeeping.
type writer struct {
	conn  *sql.Conn
	stmts map[string]*sql.Stmt
}

// writerConn answers the committer's connection, taking one from the pool the first time
// (and again after a failure dropped it).
func (g *group) writerConn(ctx context.Context) (*writer, error) {
	if g.w != nil {
		return g.w, nil
	}
	conn, err := g.c.raw.Conn(ctx)
	if err != nil {
		return nil, err
	}
	g.w = &writer{conn: conn, stmts: map[string]*sql.Stmt{}}
	return g.w, nil
}

// releaseWriter closes the committer's statements and gives its connection back to the pool:
// broken (closed by the pool) when it failed to begin a transaction, whole when the database
// closes.
func (g *group) releaseWriter(broken bool) {
	if g.w == nil {
		return
	}
	for _, s := range g.w.stmts {
		s.Close()
	}
	if broken {
		_ = g.w.conn.Raw(func(any) error { return driver.ErrBadConn })
	}
	_ = g.w.conn.Close()
	g.w = nil
}

// rollback ends the transaction, if SQLite has not ended it already.
func (w *writer) rollback() {
	_, _ = w.conn.ExecContext(context.Background(), "ROLLBACK")
}

// stmt is q prepared on the writer's connection, or nil past maxPrepared statements (SQL
// built from variable parts then runs unprepared).
func (w *writer) stmt(ctx context.Context, q string) (*sql.Stmt, error) {
	if s, ok := w.stmts[q]; ok {
		return s, nil
	}
	if len(w.stmts) >= maxPrepared {
		return nil, nil
	}
	s, err := w.conn.PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	w.stmts[q] = s
	return s, nil
}

// exec runs one statement of the transaction's own (BEGIN, SAVEPOINT, COMMIT …), prepared.
func (w *writer) exec(ctx context.Context, q string) error {
	s, err := w.stmt(ctx, q)
	if err != nil {
		return err
	}
	if s == nil {
		_, err = w.conn.ExecContext(ctx, q)
	} else {
		_, err = s.ExecContext(ctx)
	}
	return err
}

// writerQ is a transaction's Querier on the committer's connection: counted, and, when the
// batch carries other callers' work, deaf to the caller's cancellation (an interrupted write
// makes SQLite roll back the whole batch).
type writerQ struct {
	w      *writer
	c      *conn
	shared bool
}

func (q writerQ) context(ctx context.Context) context.Context {
	if q.shared {
		return context.WithoutCancel(ctx)
	}
	return ctx
}

func (q writerQ) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	q.c.statements.Add(1)
	ctx = q.context(ctx)
	s, err := q.w.stmt(ctx, query)
	if err != nil || s == nil {
		return q.w.conn.ExecContext(ctx, query, args...)
	}
	return s.ExecContext(ctx, args...)
}

func (q writerQ) QueryContext(ctx context.Context, query string, args ...any) (sqlstore.Rows, error) {
	q.c.statements.Add(1)
	ctx = q.context(ctx)
	s, err := q.w.stmt(ctx, query)
	if err != nil || s == nil {
		return q.w.conn.QueryContext(ctx, query, args...)
	}
	return s.QueryContext(ctx, args...)
}

// QueryRowContext: a statement that fails to prepare runs unprepared and reports its own
// error through the row.
func (q writerQ) QueryRowContext(ctx context.Context, query string, args ...any) sqlstore.Row {
	q.c.statements.Add(1)
	ctx = q.context(ctx)
	s, err := q.w.stmt(ctx, query)
	if err != nil || s == nil {
		return q.w.conn.QueryRowContext(ctx, query, args...)
	}
	return s.QueryRowContext(ctx, args...)
}

func (q writerQ) ReadAll(ctx context.Context, reads []sqlstore.Read, row func(int, sqlstore.Row) error) error {
	return sqlstore.ReadEach(ctx, q, reads, row)
}

func (q writerQ) WriteAtCommit(ctx context.Context, sql string, args []any, mapErr func(error) error) error {
	return sqlstore.WriteNow(ctx, q, sql, args, mapErr)
}
