package sqlstore

import (
	"context"

	"github.com/modelexec/modelexec/internal/jobs"
)

// CloseTogether writes settlements as the closer does when they all wait at one moment: in
// batch statements (a job named twice waits for the next), answering each in order. ctxs[i],
// when given, is the i-th caller's context.
func (db *DB) CloseTogether(js []jobs.Job, evs []jobs.Event, ctxs ...context.Context) []error {
	cl := &closer{c: db.sql}
	reqs := make([]*closeReq, len(js))
	for i := range js {
		ctx := context.Background()
		if i < len(ctxs) {
			ctx = ctxs[i]
		}
		reqs[i] = &closeReq{ctx: ctx, job: js[i], ev: evs[i], done: make(chan error, 1)}
	}
	cl.pending, cl.running = reqs, 1
	cl.serve()
	errs := make([]error, len(reqs))
	for i, r := range reqs {
		errs[i] = <-r.done
	}
	return errs
}
