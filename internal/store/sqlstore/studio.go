package sqlstore

import (
	"context"
	"database/sql"

	"github.com/modelexec/modelexec/internal/studio"
)

// Studio is the studio.Store view of a DB. Put is a compare-and-swap on rev (an insert that
// must not find a row, or an update that must find the expected revision), so two processes
// merging into one document never overwrite each other: the loser reads again and merges over
// the winner. It passes studiotest.RunStoreSuite on both dialects.
type Studio struct{ *DB }

var _ studio.Store = Studio{}

func (s Studio) Document(ctx context.Context, k studio.Key) (studio.Stored, error) {
	var st studio.Stored
	var updated int64
	err := s.sql.QueryRowContext(ctx, `SELECT rev, state, updated_at FROM studio_documents WHERE account_id = $1 AND project = $2 AND doc = $3`,
		k.Account, k.Project, string(k.Doc)).Scan(&st.Rev, &st.State, &updated)
	if isNoRows(err) {
		return studio.Stored{}, studio.ErrNotFound
	}
	if err != nil {
		return studio.Stored{}, err
	}
	st.UpdatedAt = fromMicros(updated)
	return st, nil
}

func (s Studio) Revision(ctx context.Context, k studio.Key) (int64, error) {
	var rev int64
	err := s.sql.QueryRowContext(ctx, `SELECT rev FROM studio_documents WHERE account_id = $1 AND project = $2 AND doc = $3`,
		k.Account, k.Project, string(k.Doc)).Scan(&rev)
	if isNoRows(err) {
		return 0, nil
	}
	return rev, err
}

func (s Studio) ProjectExists(ctx context.Context, account, project string) (bool, error) {
	var one int
	err := s.sql.QueryRowContext(ctx, `SELECT 1 FROM studio_documents WHERE account_id = $1 AND project = $2 LIMIT 1`, account, project).Scan(&one)
	if isNoRows(err) {
		return false, nil
	}
	return err == nil, err
}

func (s Studio) Put(ctx context.Context, p studio.PutParams) error {
	if p.Prev == 0 {
		_, err := s.sql.ExecContext(ctx, `INSERT INTO studio_documents (account_id, project, doc, rev, state, updated_at) VALUES ($1, $2, $3, 1, $4, $5)`,
			p.Key.Account, p.Key.Project, string(p.Key.Doc), p.State, micros(p.Now))
		if isUniqueViolation(err) {
			return studio.ErrRevisionMoved
		}
		return err
	}
	return movedUnlessOne(s.sql.ExecContext(ctx, `UPDATE studio_documents SET rev = rev + 1, state = $1, updated_at = $2
 WHERE account_id = $3 AND project = $4 AND doc = $5 AND rev = $6`,
		p.State, micros(p.Now), p.Key.Account, p.Key.Project, string(p.Key.Doc), p.Prev))
}

// movedUnlessOne answers a compare-and-swap update of a document: ErrRevisionMoved unless it
// changed exactly one row (the stored revision was still the caller's).
func movedUnlessOne(res sql.Result, err error) error {
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n != 1 {
		return studio.ErrRevisionMoved
	}
	return nil
}
