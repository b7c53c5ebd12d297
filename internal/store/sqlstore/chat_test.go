package sqlstore_test

import (
	"testing"

	"github.com/modelexec/modelexec/internal/store/storetest"
)

// TestCHAT10_ChatStoreSQLite and TestCHAT10_ChatStorePostgres prove the conversation store
// behind /v1/chat (CHAT-10: one turn per key per account, threads in order).
func TestCHAT10_ChatStoreSQLite(t *testing.T)   { storetest.RunChat(t, storetest.SQLitePorts) }
func TestCHAT10_ChatStorePostgres(t *testing.T) { storetest.RunChat(t, storetest.PostgresPorts) }
