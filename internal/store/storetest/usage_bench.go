package storetest

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/ledger"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
)

// BenchUsage measures GET /v1/usage's read of twelve months for an account that charged every
// day of a year on three keys and nine models (the rollup's worst case per account: a row per
// day, key and model), with entries written through the ledger adapter as jobs write them.
func BenchUsage(b *testing.B, db *sqlstore.DB) {
	ctx := context.Background()
	NewAccount(b, db, "acct_b", auth.Pro, 0)
	start := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	err := db.LedgerTx(ctx, func(tx ledger.Tx) error {
		for d := range 365 {
			for k := range 3 {
				for m := range 9 {
					e := ledger.Entry{AccountID: "acct_b", KeyID: fmt.Sprint("key_", k), JobID: fmt.Sprint("j", d, k, m),
						Model: fmt.Sprint("model-", m), Kind: ledger.Charge, Amount: -1, At: start.AddDate(0, 0, d)}
					if _, err := tx.LedgerApply(ctx, e, math.MinInt64); err != nil {
						return err
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	from, to := start.AddDate(0, 0, -1), start.AddDate(1, 0, 0)
	b.ResetTimer()
	for range b.N {
		rows, err := db.LedgerUsageByKey(ctx, "acct_b", from, to)
		if err != nil || len(rows) != 3 || rows[0].Jobs != 365*9 {
			b.Fatalf("%+v %v", rows, err)
		}
	}
}
