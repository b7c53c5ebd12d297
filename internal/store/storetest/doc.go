// Package storetest is the store conformance suite, typed on the domain ports: one set of
// tests, run against both databases, that calls each through the interfaces the domain
// packages own (auth.Store, auth.UserStore, ledger.Store, ledger.UsageStore, jobs.Store,
// webhooks.Outbox, chat.Store, console.SignInFailures), gathered in Stores. PortsOf is the one
// place that says which value of the SQL store serves which port; the suite's entry points (Run,
// RunJobs, RunUsage, RunChat, RunConsoleKeys, RunConsoleKeysMigration) take a function opening
// Stores (SQLitePorts, PostgresPorts). What the suite reads past the ports (the database's
// dialect, rows set up or read back in SQL, the query plans of the hot statements, a pipeline's
// round trips, migrations) it reads through Inspect, and nothing else.
//
// It also holds helpers that open a fresh database of each kind for other packages' tests
// (OpenSQLite, OpenPostgres, Each, NewAccount); they answer *sqlstore.DB.
//
// PostgreSQL tests read MODELEXEC_TEST_POSTGRES (e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable)
// and get a fresh schema per test; they skip with a message when it is unset, and fail under
// CI=true so CI always runs them.
//
// storetest is test support: it imports the domain packages and the SQL store; no package
// imports it outside its tests.
package storetest
