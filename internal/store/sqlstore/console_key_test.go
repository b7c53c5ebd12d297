package sqlstore_test

import (
	"testing"

	"github.com/modelexec/modelexec/internal/store/storetest"
)

// The console's key (auth.ConsoleKey) on each database: storetest.RunConsoleKeys.
func TestConsoleKeysSQLite(t *testing.T)   { storetest.RunConsoleKeys(t, storetest.SQLitePorts) }
func TestConsoleKeysPostgres(t *testing.T) { storetest.RunConsoleKeys(t, storetest.PostgresPorts) }

// TestACC15_ConsoleKeysMigration*: migration 00120 over a database of the release before the
// console's key was a record (storetest.RunConsoleKeysMigration).
func TestACC15_ConsoleKeysMigrationSQLite(t *testing.T) {
	storetest.RunConsoleKeysMigration(t, storetest.SQLitePortsAt)
}

func TestACC15_ConsoleKeysMigrationPostgres(t *testing.T) {
	storetest.RunConsoleKeysMigration(t, storetest.PostgresPortsAt)
}
