package sqlstore_test

import (
	"testing"

	"github.com/modelexec/modelexec/internal/store/storetest"
)

// TestWH26_EventsQueueMigration*: migration 00140 over a database whose events carried a
// fanned_out flag (storetest.RunEventsQueueMigration).
func TestWH26_EventsQueueMigrationSQLite(t *testing.T) {
	storetest.RunEventsQueueMigration(t, storetest.SQLitePortsAt)
}

func TestWH26_EventsQueueMigrationPostgres(t *testing.T) {
	storetest.RunEventsQueueMigration(t, storetest.PostgresPortsAt)
}

// TestJOB29_MintedKeysMigration*: migration 00150 over a database whose rows kept the keys the
// service minted (storetest.RunMintedKeysMigration).
func TestJOB29_MintedKeysMigrationSQLite(t *testing.T) {
	storetest.RunMintedKeysMigration(t, storetest.SQLitePortsAt)
}

func TestJOB29_MintedKeysMigrationPostgres(t *testing.T) {
	storetest.RunMintedKeysMigration(t, storetest.PostgresPortsAt)
}
