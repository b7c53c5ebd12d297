package postgres

import (
	"runtime"
	"strings"
	"testing"
)

// The pool's size comes from the URL's pool_max_conns (pgxpool's own parameter, which never
// reaches the server); without it, four connections per CPU this process may use.
func TestPoolSizeFromURL(t *testing.T) {
	cfg, err := poolConfig("postgres://u@h:5432/db?sslmode=disable")
	if err != nil || int(cfg.MaxConns) != max(4, 4*runtime.GOMAXPROCS(0)) {
		t.Fatalf("default: %v %v", cfg, err)
	}
	cfg, err = poolConfig("postgres://u@h:5432/db?pool_max_conns=3&sslmode=disable")
	if err != nil || cfg.MaxConns != 3 {
		t.Fatalf("pool_max_conns=3: %v %v", cfg, err)
	}
	if _, ok := cfg.ConnConfig.RuntimeParams["pool_max_conns"]; ok {
		t.Fatal("pool_max_conns would reach the server")
	}
	for _, bad := range []string{"0", "-1", "many"} {
		if _, err := poolConfig("postgres://u@h/db?pool_max_conns=" + bad); err == nil || !strings.Contains(err.Error(), "pool_max_conns") {
			t.Errorf("pool_max_conns=%s: %v, want a refusal naming it", bad, err)
		}
	}
}
