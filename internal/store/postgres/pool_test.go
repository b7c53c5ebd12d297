package postgres_test

import (
	"context"
	"net/url"
	"testing"

	"github.com/modelexec/modelexec/internal/store/postgres"
	"github.com/modelexec/modelexec/internal/store/storetest"
)

// A database opened with pool_max_conns=2 keeps at most two connections, and the parameter
// never reaches the server (which would refuse an unknown setting): the migrations ran and the
// store answers.
func TestOpenWithPoolMaxConns(t *testing.T) {
	db := storetest.OpenPostgresWith(t, url.Values{"pool_max_conns": {"2"}})
	if got := db.Conn().(*postgres.Conn).MaxConns(); got != 2 {
		t.Fatalf("max open connections %d, want 2", got)
	}
	if err := db.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
}
