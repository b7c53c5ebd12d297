package sqlstore

import (
	"context"
	"time"

	"github.com/modelexec/modelexec/internal/studio"
)

// The statements of studio tickets and document lineages (studio.TicketClaimer,
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

// Lineage answers the stored document's generation and what its saves dropped (zero when
// nothing is stored).
func (s Studio) Lineage(ctx context.Context, k studio.Key) (studio.Lineage, error) {
	var l studio.Lineage
	err := s.sql.QueryRowContext(ctx, `SELECT generation, retired FROM studio_documents WHERE account_id = $1 AND project = $2 AND doc = $3`,
		k.Account, k.Project, string(k.Doc)).Scan(&l.Generation, &l.Retired)
	if isNoRows(err) {
		return studio.Lineage{}, nil
	}
	return l, err
}

// Replace is Put for a whole-document save: the same compare-and-swap on rev; the generation
// advances with it and the retired ranges are stored.
func (s Studio) Replace(ctx context.Context, p studio.ReplaceParams) error {
	if p.Retired == nil {
		p.Retired = []byte{} // the column holds bytes, never NULL
	}
	if p.Prev == 0 {
		_, err := s.sql.ExecContext(ctx, `INSERT INTO studio_documents (account_id, project, doc, rev, state, updated_at, generation, retired) VALUES ($1, $2, $3, 1, $4, $5, 1, $6)`,
			p.Key.Account, p.Key.Project, string(p.Key.Doc), p.State, micros(p.Now), p.Retired)
		if isUniqueViolation(err) {
			return studio.ErrRevisionMoved
		}
		return err
	}
	return movedUnlessOne(s.sql.ExecContext(ctx, `UPDATE studio_documents SET rev = rev + 1, generation = generation + 1, retired = $7, state = $1, updated_at = $2
 WHERE account_id = $3 AND project = $4 AND doc = $5 AND rev = $6`,
		p.State, micros(p.Now), p.Key.Account, p.Key.Project, string(p.Key.Doc), p.Prev, p.Retired))
}
