package sqlstore_test

import (
	"testing"

	"github.com/modelexec/modelexec/internal/store/storetest"
)

// TestACC14_UsageSQLite and TestACC14_UsagePostgres prove the ledger read behind GET /v1/usage
// (ACC-14): per-key charged, refunded and job counts in a half-open window, grants left out.
func TestACC14_UsageSQLite(t *testing.T)   { storetest.RunUsage(t, storetest.SQLitePorts) }
func TestACC14_UsagePostgres(t *testing.T) { storetest.RunUsage(t, storetest.PostgresPorts) }

func BenchmarkUsageYearSQLite(b *testing.B)   { storetest.BenchUsage(b, storetest.OpenSQLite(b)) }
func BenchmarkUsageYearPostgres(b *testing.B) { storetest.BenchUsage(b, storetest.OpenPostgres(b)) }

// BenchmarkUsage1MSQLite and BenchmarkUsage1MPostgres measure the usage reads of one account
// with a million settled jobs of history in the database (storetest.BenchUsage1M).
func BenchmarkUsage1MSQLite(b *testing.B)   { storetest.BenchUsage1M(b, storetest.OpenSQLite(b)) }
func BenchmarkUsage1MPostgres(b *testing.B) { storetest.BenchUsage1M(b, storetest.OpenPostgres(b)) }
