package sqlstore

import "encoding/json"

// dialectSQL is what one database writes its own way; the rest of the store's SQL is the same
// on both. A DB and its transactions carry their database's.
type dialectSQL struct {
	name Dialect
	// rowLock follows a SELECT whose rows the transaction updates next. SQLite needs none: an
	// immediate transaction holds the whole database already.
	rowLock string
	// claimLock follows a claim's SELECT: rows another transaction holds are passed over.
	claimLock string
	// index names the index a read of jobs goes through (" INDEXED BY …"), for a planner
	// without statistics that may otherwise walk a wider one (SQLite).
	index func(name string) string
	// list is ids as one parameter (an array; JSON text that json_each reads).
	list func(ids []string) any
	// lockKey takes a lock on a text key ($1) until the transaction ends; "" where the
	// transaction's own lock covers it (SQLite).
	lockKey string
	// lockKeys is lockKey for each of a list of keys ($1, as list gives it), in its order.
	lockKeys string
	// markFannedOut takes the events of a JSON array of seqs ($1) out of events_pending.
	markFannedOut string
	// ledgerArgs is how many of LedgerApply's parameters its statement reads (qLedgerApply).
	ledgerArgs int
	// Statements that do in one what the other database does in several, a statement for
	// each charge or job; "" or false there.
	chargeAll string // LedgerChargeAll's (qChargeAll)
	closeJobs string // CloseJobs' (qCloseJobs)
	closeOne  bool   // CloseJob writes the job and its event in one statement (closeOne)
}

var dialects = map[Dialect]*dialectSQL{
	SQLite: {
		name:  SQLite,
		index: func(name string) string { return " INDEXED BY " + name },
		list: func(ids []string) any {
			b, _ := json.Marshal(ids)
			return string(b)
		},
		markFannedOut: `DELETE FROM events_pending WHERE seq IN (SELECT value FROM json_each($1))`,
		ledgerArgs:    9,
	},
	Postgres: {
		name:          Postgres,
		rowLock:       " FOR UPDATE",
		claimLock:     " FOR UPDATE SKIP LOCKED",
		index:         func(string) string { return "" },
		list:          func(ids []string) any { return ids },
		lockKey:       `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`,
		lockKeys:      `SELECT pg_advisory_xact_lock(hashtextextended(k, 0)) FROM unnest($1::text[]) WITH ORDINALITY AS u(k, i) ORDER BY i`,
		markFannedOut: `DELETE FROM events_pending WHERE seq IN (SELECT jsonb_array_elements_text($1::jsonb)::bigint)`,
		ledgerArgs:    15,
		chargeAll:     qChargeAll,
		closeJobs:     qCloseJobs,
		closeOne:      true,
	},
}
