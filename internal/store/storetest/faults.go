package storetest

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/modelexec/modelexec/internal/jobs"
	"github.com/modelexec/modelexec/internal/ledger"
)

// ErrInjected is the failure AdmissionFaults injects.
var ErrInjected = errors.New("storetest: injected failure")

// AdmissionFaults is a jobs.Store whose transactions fail, while a flag is up, the hold of the
// accounts (FailHold: the read of their keys and jobs in flight that the admission check
// needs) or the write of a batch's charges (FailCharge), for tests of what a submit answers
// then.
type AdmissionFaults struct {
	jobs.Store
	FailHold, FailCharge atomic.Bool
}

func (f *AdmissionFaults) InOneStatement(ctx context.Context, fn func(jobs.Tx) error) error {
	return f.InTx(ctx, fn)
}

func (f *AdmissionFaults) InTx(ctx context.Context, fn func(jobs.Tx) error) error {
	return f.Store.InTx(ctx, func(tx jobs.Tx) error { return fn(admissionTx{Tx: tx, f: f}) })
}

type admissionTx struct {
	jobs.Tx
	f *AdmissionFaults
}

func (t admissionTx) LedgerHold(ctx context.Context, pairs []ledger.AccountKey) (ledger.HeldRows, error) {
	if t.f.FailHold.Load() {
		return ledger.HeldRows{}, ErrInjected
	}
	return t.Tx.LedgerHold(ctx, pairs)
}

func (t admissionTx) LedgerChargeAll(ctx context.Context, cs []ledger.Taken) error {
	if t.f.FailCharge.Load() {
		return ErrInjected
	}
	return t.Tx.LedgerChargeAll(ctx, cs)
}
