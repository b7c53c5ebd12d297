package sqlstore_test

import (
	"testing"

	"github.com/modelexec/modelexec/internal/store/sqlstore"
	"github.com/modelexec/modelexec/internal/store/storetest"
	"github.com/modelexec/modelexec/internal/studio"
	"github.com/modelexec/modelexec/internal/studio/studiotest"
)

// The SQL studio store passes the suite the in-memory one passes, on both dialects: missing
// documents, the revision compare-and-swap (STU-04's single seed rests on it), per-account
// projects, and racing writers of which exactly one wins (STU-09 across processes).
func TestSTU09_StudioStoreSQLite(t *testing.T) {
	studiotest.RunStoreSuite(t, func(t *testing.T) studio.Store { return sqlstore.Studio{DB: storetest.OpenSQLite(t)} })
}

func TestSTU09_StudioStorePostgres(t *testing.T) {
	studiotest.RunStoreSuite(t, func(t *testing.T) studio.Store { return sqlstore.Studio{DB: storetest.OpenPostgres(t)} })
}
