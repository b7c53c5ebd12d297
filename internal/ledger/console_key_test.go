package ledger_test

import (
	"context"
	"testing"

	"github.com/modelexec/modelexec/internal/apierr"
	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/ledger"
)

// The console's submissions carry auth.ConsoleKeyID, which has no key record: the charge and
// the settlement move the balance as for any key, never look for a key's spend (the store
// answers not found for it), and a balance too small is refused and leaves nothing moved.
func TestConsoleKeyChargesWithoutAKeyRecord(t *testing.T) {
	ctx := context.Background()
	m, l := setup(t, 100, auth.Ceiling{Mode: auth.FollowPlan})
	j := ledger.Job{AccountID: "acct", KeyID: auth.ConsoleKeyID, JobID: "photo_console-1", Model: "m", Quote: 40}
	var settleErr, refusal error
	err := m.LedgerTx(ctx, func(tx ledger.Tx) error {
		a, err := l.Open(ctx, tx, "acct", now)
		if err != nil {
			return err
		}
		c, err := l.Charge(ctx, tx, a, j, now)
		if err != nil {
			return err
		}
		if c.Reserved != 40 || c.Balance != 60 {
			t.Errorf("charged %+v", c)
		}
		charged, err := l.Settle(ctx, tx, ledger.Settlement{Job: j, Reserved: 40, Done: 0.25, StartedAt: now}, now)
		if charged.Charged != 10 {
			t.Errorf("settled at %d, want 10", charged.Charged)
		}
		settleErr = err
		a, _ = l.Open(ctx, tx, "acct", now)
		_, refusal = l.Charge(ctx, tx, a, ledger.Job{AccountID: "acct", KeyID: auth.ConsoleKeyID, JobID: "photo_console-2", Model: "m", Quote: 91}, now)
		return nil
	})
	if err != nil || settleErr != nil {
		t.Fatal(err, settleErr)
	}
	if code(refusal) != apierr.InsufficientCredits {
		t.Fatalf("beyond the balance: %v", refusal)
	}
	if m.st.accounts["acct"].Balance != 90 || m.st.keys["key"].Spent != 0 {
		t.Fatalf("balance %d, the account's key spent %d", m.st.accounts["acct"].Balance, m.st.keys["key"].Spent)
	}
}
