// Package ledger owns credits: the shape of a ledger entry, what a settled job costs (never
// above its quote), and whether a pass or promotion pays instead of credits. The store applies
// entries inside the job transaction so the balance always equals the sum of entries.
//
// It must not import net/http handlers, database/sql or any store.
package ledger
