package postgres

import (
	"time"

	"github.com/modelexec/modelexec/internal/store/sqlstore"
)

// SetOpTimeout shortens db's bound on each statement, read and transaction, for tests.
func SetOpTimeout(db *sqlstore.DB, d time.Duration) { db.Conn().(*Conn).opTimeout = d }
