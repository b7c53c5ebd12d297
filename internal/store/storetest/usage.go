package storetest

import (
	"context"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/ledger"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
)

// RunUsage is the conformance suite of the usage read (per-key spend in a window, ACC-14).
func RunUsage(t *testing.T, open func(t testing.TB) *sqlstore.DB) {
	t.Run("UsageByKeyInWindow", func(t *testing.T) { testUsage(t, open(t)) })
}

func testUsage(t *testing.T, db *sqlstore.DB) {
	ctx := context.Background()
	NewAccount(t, db, "acct_u", auth.Pro, 1000)
	NewAccount(t, db, "acct_v", auth.Pro, 1000)
	from := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	to := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	add := func(acct, key, job string, kind ledger.Kind, amount int64, at time.Time) {
		t.Helper()
		err := db.InTx(ctx, func(tx *sqlstore.Tx) error {
			_, err := tx.LedgerApply(ctx, ledger.Entry{AccountID: acct, KeyID: key, JobID: job, Kind: kind, Amount: ledger.Credits(amount), At: at}, math.MinInt64)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	add("acct_u", "", "", ledger.Grant, 500, from.Add(time.Hour))                       // not spend
	add("acct_u", "key_a", "photo_1", ledger.Charge, -10, from)                         // first instant: in
	add("acct_u", "key_a", "photo_1", ledger.Refund, 4, from.Add(time.Minute))          // partial refund
	add("acct_u", "key_a", "photo_2", ledger.Charge, -20, from.Add(24*time.Hour))       // second job
	add("acct_u", "key_a", "photo_2", ledger.Refund, 20, from.Add(25*time.Hour))        // fully refunded
	add("acct_u", "key_b", "music_1", ledger.Charge, -7, to.Add(-time.Microsecond))     // last instant: in
	add("acct_u", "key_b", "music_2", ledger.Charge, -100, to)                          // next month: out
	add("acct_u", "key_b", "music_0", ledger.Charge, -100, from.Add(-time.Microsecond)) // last month: out
	add("acct_v", "key_c", "photo_1", ledger.Charge, -50, from.Add(time.Hour))          // another account

	got, err := db.Usage(ctx, "acct_u", from, to)
	if err != nil {
		t.Fatal(err)
	}
	want := []sqlstore.UsageRow{
		{KeyID: "key_a", Charged: 30, Refunded: 24, Jobs: 2},
		{KeyID: "key_b", Charged: 7, Refunded: 0, Jobs: 1},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("usage = %+v, want %+v", got, want)
	}
	got, err = db.Usage(ctx, "acct_u", from.AddDate(0, -1, 0), from)
	if err != nil || !reflect.DeepEqual(got, []sqlstore.UsageRow{{KeyID: "key_b", Charged: 100, Jobs: 1}}) {
		t.Fatalf("last month = %+v, %v", got, err)
	}
	got, err = db.Usage(ctx, "acct_none", from, to)
	if err != nil || got == nil || len(got) != 0 {
		t.Fatalf("no entries = %#v, %v (want an empty, non-nil list)", got, err)
	}
}
