package sqlstore

import (
	"context"
	"time"

	"github.com/modelexec/modelexec/internal/studio"
)

// The statements of studio tickets and document generations (studio.TicketClaimer,
// studio.GenerationStore), beside Studio's own.
var (
	_ studio.TicketClaimer   = Studio{}
	_ studio.GenerationStore = Studio{}
)

// ClaimTicket records nonce as presented; a second claim, from any process, finds the row and
// answers studio.ErrTicketUsed. Expired nonces are removed first: their tickets are refused
// for their expiry before they are claimed.
func (s Studio) ClaimTicket(ctx context.Context, nonce string, expires, now time.Time) error {
	if _, err := s.sql.ExecContext(ctx, `DELETE FROM studio_tickets WHERE expires_at < $1`, micros(now)); err != nil {
		return err
	}
	_, err := s.sql.ExecContext(ctx, `INSERT INTO studio_tickets (nonce, expires_at) VALUES ($1, $2)`, nonce, micros(expires))
	if isUniqueViolation(err) {
		return studio.ErrTicketUsed
	}
	return err
}

// Generation answers the stored document's generation (0 when nothing is stored).
func (s Studio) Generation(ctx context.Context, k studio.Key) (int64, error) {
	var gen int64
	err := s.sql.QueryRowContext(ctx, `SELECT generation FROM studio_documents WHERE account_id = $1 AND project = $2 AND doc = $3`,
		k.Account, k.Project, string(k.Doc)).Scan(&gen)
	if isNoRows(err) {
		return 0, nil
	}
	return gen, err
}

// Replace is Put for a whole-document save: the same compare-and-swap on rev, and the
// generation advances with it.
func (s Studio) Replace(ctx context.Context, p studio.PutParams) error {
	if p.Prev == 0 {
		_, err := s.sql.ExecContext(ctx, `INSERT INTO studio_documents (account_id, project, doc, rev, state, updated_at, generation) VALUES ($1, $2, $3, 1, $4, $5, 1)`,
			p.Key.Account, p.Key.Project, string(p.Key.Doc), p.State, micros(p.Now))
		if isUniqueViolation(err) {
			return studio.ErrRevisionMoved
		}
		return err
	}
	res, err := s.sql.ExecContext(ctx, `UPDATE studio_documents SET rev = rev + 1, generation = generation + 1, state = $1, updated_at = $2
 WHERE account_id = $3 AND project = $4 AND doc = $5 AND rev = $6`,
		p.State, micros(p.Now), p.Key.Account, p.Key.Project, string(p.Key.Doc), p.Prev)
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
