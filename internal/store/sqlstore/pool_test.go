package sqlstore

import (
	"runtime"
	"strings"
	"testing"
)

// The PostgreSQL pool's size comes from the URL's pool_max_conns, which is taken out of the
// URL before it reaches the server (it is no server setting); without it, four connections
// per CPU this process may use.
func TestPoolSizeFromURL(t *testing.T) {
	dsn, n, err := poolSize("postgres://u@h:5432/db?sslmode=disable")
	if err != nil || n != max(4, 4*runtime.GOMAXPROCS(0)) || dsn != "postgres://u@h:5432/db?sslmode=disable" {
		t.Fatalf("default: %q %d %v", dsn, n, err)
	}
	dsn, n, err = poolSize("postgres://u@h:5432/db?pool_max_conns=3&sslmode=disable")
	if err != nil || n != 3 || strings.Contains(dsn, "pool_max_conns") || !strings.Contains(dsn, "sslmode=disable") {
		t.Fatalf("pool_max_conns=3: %q %d %v", dsn, n, err)
	}
	for _, bad := range []string{"0", "-1", "many"} {
		if _, _, err := poolSize("postgres://u@h/db?pool_max_conns=" + bad); err == nil || !strings.Contains(err.Error(), "pool_max_conns") {
			t.Errorf("pool_max_conns=%s: %v, want a refusal naming it", bad, err)
		}
	}
}
