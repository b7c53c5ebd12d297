package sqlstore

import (
	"context"
	"strconv"
	"strings"

	"github.com/modelexec/modelexec/internal/jobs"
)

// CountJobs counts an account's jobs narrowed by q (its cursor and limit ignored), up to max:
// the console's job list shows how many jobs its filters match. Counting stops at max, so a
// very large account costs at most max index entries.
func (s Jobs) CountJobs(ctx context.Context, accountID string, q jobs.Search, max int) (int, error) {
	args := []any{accountID}
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	var cond strings.Builder
	if q.Model != "" {
		cond.WriteString(" AND model = " + arg(q.Model))
	}
	if st, out, ok := q.State.Columns(); ok {
		cond.WriteString(" AND outcome = " + arg(string(out)) + " AND status = " + arg(string(st)))
	}
	if !q.From.IsZero() {
		cond.WriteString(" AND created_at >= " + arg(micros(q.From)))
	}
	if !q.To.IsZero() {
		cond.WriteString(" AND created_at < " + arg(micros(q.To)))
	}
	query := `SELECT COUNT(*) FROM (SELECT 1 FROM jobs WHERE account_id = $1` + cond.String() + ` LIMIT ` + arg(max) + `) c`
	var n int
	err := s.sql.QueryRowContext(ctx, query, args...).Scan(&n)
	return n, err
}
