package sqlstore_test

import (
	"testing"

	"github.com/modelexec/modelexec/internal/store/storetest"
)

func TestConformanceSQLite(t *testing.T)   { storetest.Run(t, storetest.SQLitePorts) }
func TestConformancePostgres(t *testing.T) { storetest.Run(t, storetest.PostgresPorts) }

func TestJobsConformanceSQLite(t *testing.T)   { storetest.RunJobs(t, storetest.SQLitePorts) }
func TestJobsConformancePostgres(t *testing.T) { storetest.RunJobs(t, storetest.PostgresPorts) }
