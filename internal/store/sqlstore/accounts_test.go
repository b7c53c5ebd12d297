package sqlstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
	"github.com/modelexec/modelexec/internal/store/storetest"
)

func TestAccountsPageSQLite(t *testing.T)   { testAccountsPage(t, storetest.OpenSQLite(t)) }
func TestAccountsPagePostgres(t *testing.T) { testAccountsPage(t, storetest.OpenPostgres(t)) }

// The operator's account list: newest first, keyset pages that neither skip nor repeat an
// account, two accounts made in the same microsecond told apart by id.
func testAccountsPage(t *testing.T, db *sqlstore.DB) {
	ctx := context.Background()
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var want []string
	for i := range 7 {
		at := t0.Add(time.Duration(i/2) * time.Minute) // pairs share a creation time
		a := auth.Account{ID: fmt.Sprintf("acct_%02d", i), Plan: auth.Pro, Status: auth.Live, AllowancePeriod: "2026-03", CreatedAt: at}
		if err := db.CreateAccount(ctx, a); err != nil {
			t.Fatal(err)
		}
		want = append([]string{a.ID}, want...)
	}
	var got []string
	var before time.Time
	var beforeID string
	for page := 0; ; page++ {
		as, err := db.Accounts(ctx, before, beforeID, 3)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range as {
			got = append(got, a.ID)
		}
		if len(as) < 3 {
			break
		}
		if page > 5 {
			t.Fatal("paging does not end")
		}
		before, beforeID = as[len(as)-1].CreatedAt, as[len(as)-1].ID
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("pages read %v, want %v", got, want)
	}
}
