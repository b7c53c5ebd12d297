package main

import (
	"strings"
	"testing"
)

// TestI27_StudioOriginsFlag: serve takes the operator's studio origins, and refuses one that is
// not an origin, naming the flag.
func TestI27_StudioOriginsFlag(t *testing.T) {
	c := &ServeCmd{Roles: "api,queue,sync", APIAddr: "127.0.0.1:0", QueueAddr: "127.0.0.1:0", SyncAddr: "127.0.0.1:0"}
	c.Data, c.Secret, c.StudioOrigins = migratedData(t), "studio-origins-test-secret-0123456789", []string{"https://app.example.com", "http://127.0.0.1:3000"}
	if _, err := serveWith(t, c); err != nil {
		t.Fatalf("valid origins: %v", err)
	}
	c.Data, c.StudioOrigins = migratedData(t), []string{"https://app.example.com/editor"}
	_, err := serveWith(t, c)
	if err == nil || !strings.Contains(err.Error(), "--studio-origins") || !strings.Contains(err.Error(), "app.example.com/editor") {
		t.Fatalf("an origin with a path: %v", err)
	}
}
