package sqlstore_test

import (
	"testing"

	"github.com/modelexec/modelexec/internal/store/storetest"
)

func TestConformanceSQLite(t *testing.T)   { storetest.Run(t, storetest.OpenSQLite) }
func TestConformancePostgres(t *testing.T) { storetest.Run(t, storetest.OpenPostgres) }

func TestJobsConformanceSQLite(t *testing.T)   { storetest.RunJobs(t, storetest.OpenSQLite) }
func TestJobsConformancePostgres(t *testing.T) { storetest.RunJobs(t, storetest.OpenPostgres) }
