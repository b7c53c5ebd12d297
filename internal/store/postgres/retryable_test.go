package postgres

import (
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/modelexec/modelexec/internal/apierr"
)

// A serialization failure or deadlock is retried wherever it sits in the error's chain; the
// submit wraps an insert's failure in job_record_failed, and that wrapping used to hide a
// deadlock from the retry (the check read the outer message only).
func TestRetryableSeesThroughWraps(t *testing.T) {
	deadlock := &pgconn.PgError{Code: "40P01", Message: "deadlock detected"}
	serial := &pgconn.PgError{Code: "40001", Message: "could not serialize access"}
	unique := &pgconn.PgError{Code: "23505", Message: "duplicate key value"}
	for _, c := range []struct {
		err  error
		want bool
	}{
		{deadlock, true},
		{serial, true},
		{fmt.Errorf("insert job: %w", deadlock), true},
		{apierr.New(apierr.JobRecordFailed).Wrap(serial), true},
		{apierr.New(apierr.JobRecordFailed).Wrap(unique), false},
		{unique, false},
		{errors.New("sqlite: database is locked"), false},
	} {
		if got := retryable(c.err); got != c.want {
			t.Errorf("retryable(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
