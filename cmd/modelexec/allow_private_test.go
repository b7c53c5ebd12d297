package main

import (
	"strings"
	"testing"
)

// TestI14_WebhookAllowPrivateFlag: serve takes the operator's allow-list of private ranges
// for webhooks, and refuses one it cannot read, naming the flag.
func TestI14_WebhookAllowPrivateFlag(t *testing.T) {
	c := &ServeCmd{Roles: "api,queue,sync", APIAddr: "127.0.0.1:0", QueueAddr: "127.0.0.1:0", SyncAddr: "127.0.0.1:0"}
	c.Data, c.Secret, c.WebhookAllowPrivate = migratedData(t), "allow-private-test-secret-0123456789", "10.0.0.0/8,127.0.0.1"
	if _, err := serveWith(t, c); err != nil {
		t.Fatalf("a valid allow-list: %v", err)
	}
	c.Data, c.WebhookAllowPrivate = migratedData(t), "10.0.0.0/8,intranet"
	_, err := serveWith(t, c)
	if err == nil || !strings.Contains(err.Error(), "--webhook-allow-private") || !strings.Contains(err.Error(), `"intranet"`) {
		t.Fatalf("an unreadable allow-list: %v", err)
	}
}
