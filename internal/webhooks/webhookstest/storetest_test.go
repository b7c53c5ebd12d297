package webhookstest

import (
	"testing"

	"github.com/modelexec/modelexec/internal/webhooks"
)

// The reference implementations pass the suites the SQL stores must pass.
func TestMemStoreConformance(t *testing.T) {
	RunStoreSuite(t, func(*testing.T) webhooks.Store { return webhooks.NewMemStore() })
}

func TestMemKeyStoreConformance(t *testing.T) {
	RunKeyStoreSuite(t, func(*testing.T) webhooks.KeyStore { return webhooks.NewMemKeyStore() })
}
