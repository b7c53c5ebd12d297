// Package ledger owns credits: every movement of an account's balance (a job's charge at its
// start, its settlement and refund, operator grants, monthly allowances), passes and
// promotions, per-key spend and ceilings, and the account changes an operator makes. Service is
// the one way to move credits; its Store port is implemented by the store and called by no other
// package. A job's movements run inside the jobs engine's transaction through the Tx port, so the
// balance always equals the sum of entries.
//
// Every charge goes one way (charge.go): Service.Hold reads what the checks need, Judge (a pure
// function, the one that decides whether a charge is made) applies the spec's order of checks,
// and Held.Write writes what was taken.
//
// It must not import net/http handlers, database/sql or any store.
package ledger
