// Package jobs owns the job state machine: submit (quote, coverage, ceiling, balance, reserve,
// insert, dispatch in one transaction), idempotency, the queue for models that offer one,
// execution on runners with leases and heartbeats, settlement through the ledger (never above
// the quote, refunds on failure, timeout and stall), cancellation, and the events outbox (one
// event per settled job, written in the settling transaction).
//
// Every submit is charged and recorded by chargeSubmits (submit.go), alone or with the submits
// waiting at the same moment; a queued job is charged at its turn by chargeTurn. Both judge the
// charge with ledger.Judge. The engine's two batchers (internal/batch), of submits and of
// settlements that move no credit, are parts of the engine: started by Run, stopped with it.
//
// It must not import net/http handlers, database/sql or any driver: storage is the Store port,
// models are runners.Runner.
package jobs
