package server

import (
	"context"
	"log/slog"
	"time"
)

// allowanceBatch is how many accounts one pass of the allowance sweep credits before it looks again.
const allowanceBatch = 500

// allowanceGranter is the ledger's monthly sweep (ledger.Service; *sqlstore.DB hands it on).
type allowanceGranter interface {
	GrantAllowances(ctx context.Context, now time.Time, limit int) (int, error)
}

// allowanceWorker credits monthly allowances as UTC months begin: at start and then every
// interval it credits every account whose allowance for the current month is due, one
// `allowance` ledger entry each (ledger.Service.GrantAllowances). A submit credits its own
// account's at once, so the sweep is for accounts that are read but not spending.
func allowanceWorker(db allowanceGranter, now func() time.Time, interval time.Duration, log *slog.Logger) func(context.Context) error {
	return func(ctx context.Context) error {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			for {
				n, err := db.GrantAllowances(ctx, now(), allowanceBatch)
				if err != nil {
					if ctx.Err() != nil {
						return ctx.Err()
					}
					log.Error("monthly allowances", "err", err)
					break
				}
				if n > 0 {
					log.Info("monthly allowances credited", "accounts", n)
				}
				if n < allowanceBatch {
					break
				}
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-t.C:
			}
		}
	}
}
