package studio_test

import (
	"testing"

	"github.com/modelexec/modelexec/internal/studio"
	"github.com/modelexec/modelexec/internal/studio/studiotest"
)

func TestSTU09_MemStoreConformance(t *testing.T) {
	studiotest.RunStoreSuite(t, func(*testing.T) studio.Store { return studio.NewMemStore() })
}
