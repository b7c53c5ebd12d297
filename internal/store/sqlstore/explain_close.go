package sqlstore

import (
	"context"
	"encoding/json"
)

// ExplainCloseTogether answers the plan of the batch settlement statement (PostgreSQL) for jobs
// of an account, one line per plan node, as the planner makes it with the database's own
// settings.
func (db *DB) ExplainCloseTogether(ctx context.Context, account string, ids []string) ([]string, error) {
	rows := make([]closeRow, len(ids))
	for i, id := range ids {
		rows[i] = closeRow{AccountID: account, ID: id}
	}
	doc, err := json.Marshal(rows)
	if err != nil {
		return nil, err
	}
	rs, err := db.SQL().QueryContext(ctx, "EXPLAIN "+qCloseJobs, string(doc))
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
