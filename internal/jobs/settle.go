package jobs

import "context"

// Settlements together. A settlement that moves no credit (nothing to refund) writes only its
// job and its event (a chat turn has none): the settle batcher writes those waiting at one
// moment with one statement of the store (Store.CloseJobs), its own transaction. When the
// statement fails, none of it was written, and each settlement is written again alone so that
// one bad row fails alone. Each caller is answered after the statement that holds its job
// returned; one who gave up before it ran is answered so, unwritten.

// closing is one settlement on its way to the store, and its answer.
type closing struct {
	ctx  context.Context
	job  Job
	ev   *Event // nil for a chat turn
	done chan error
}

// closeJob writes the settled job j and its event ev (nil for a chat turn) through the settle
// batcher: nil, ErrSettled (settled already) or the store's error.
func (s *Service) closeJob(ctx context.Context, j Job, ev *Event) error {
	c := &closing{ctx: ctx, job: j, ev: ev, done: make(chan error, 1)}
	s.closes.Do(c)
	return <-c.done
}

// writeCloses writes a batch of settlements and answers each.
func (s *Service) writeCloses(batch []*closing) {
	live := make([]*closing, 0, len(batch))
	ctxs := make([]context.Context, 0, len(batch))
	for _, c := range batch {
		if err := c.ctx.Err(); err != nil {
			c.done <- err
			continue
		}
		live, ctxs = append(live, c), append(ctxs, c.ctx)
	}
	if len(live) == 0 {
		return
	}
	ctx, cancel := batchContext(ctxs)
	defer cancel()
	if len(live) > 1 {
		cs := make([]Closing, len(live))
		for i, c := range live {
			cs[i] = Closing{Job: c.job, Event: c.ev}
		}
		took, err := s.store.CloseJobs(ctx, cs)
		if err == nil {
			for i, c := range live {
				if took[i] {
					c.done <- nil
				} else {
					c.done <- ErrSettled
				}
			}
			return
		}
		s.log.Warn("jobs: settlements together failed; each is written alone", "err", err)
	}
	for _, c := range live {
		c.done <- s.store.InOneStatement(ctx, func(tx Tx) error { return tx.CloseJob(ctx, c.job, c.ev) })
	}
}
