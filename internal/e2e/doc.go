// Package e2e holds the end-to-end tests of the job engine: the whole service built by
// server.New, as `modelexec serve` builds it (auth gate, catalogue, jobs service, queue and
// synchronous hosts over HTTP), against SQLite and PostgreSQL, a crash test that kills a
// serving process mid-run, the roles split test that runs the real binary as an API-only and a
// worker-only process on one PostgreSQL, and the books checks (balance == sum of ledger
// entries, one event per settled job).
//
// It has no non-test code; it imports everything and nothing imports it.
package e2e
