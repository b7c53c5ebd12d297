package sqlstore

import (
	"context"
	"encoding/json"

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

// ExplainCloseTogether answers the plan of the batch settlement statement for n jobs of an
// account, one line per plan node, as the planner makes it with the database's own settings.
func (db *DB) ExplainCloseTogether(ctx context.Context, account string, ids []string) ([]string, error) {
	rows := make([]closeRow, len(ids))
	for i, id := range ids {
		rows[i] = closeRow{AccountID: account, ID: id}
	}
	doc, err := json.Marshal(rows)
	if err != nil {
		return nil, err
	}
	rs, err := db.sql.raw.QueryContext(ctx, "EXPLAIN "+qCloseJobs, string(doc))
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var plan []string
	for rs.Next() {
		var line string
		if err := rs.Scan(&line); err != nil {
			return nil, err
		}
		plan = append(plan, line)
	}
	return plan, rs.Err()
}
