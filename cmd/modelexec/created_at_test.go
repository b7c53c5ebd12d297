package main

import (
	"strings"
	"testing"
	"time"
)

// TestAccountsCreateCreatedAt: --created-at refuses a time after now (the account would be held
// to the new-account limits until then) and words a value that is no time without Go's layout;
// a past time is kept.
func TestAccountsCreateCreatedAt(t *testing.T) {
	c := newConsole(t)
	future := time.Now().Add(24 * time.Hour).UTC().Format(time.RFC3339)
	for v, want := range map[string]string{
		future:       "is in the future",
		"yesterday":  "an RFC 3339 time such as 2025-01-31T00:00:00Z",
		"2025-01-31": "an RFC 3339 time such as 2025-01-31T00:00:00Z",
	} {
		out, err := c.run("accounts", "create", "--created-at", v, "--json")
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "2006-01-02") {
			t.Fatalf("accounts create --created-at %s: %q %v, want %q", v, out, err, want)
		}
	}
	var a struct{ ID string }
	c.ok(&a, "accounts", "create", "--created-at", "2025-01-02T03:04:05Z", "--json")
	var shown map[string]any
	c.ok(&shown, "accounts", "show", a.ID, "--json")
	if shown["created_at"] != "2025-01-02T03:04:05Z" {
		t.Fatalf("account created --created-at 2025-01-02T03:04:05Z: %v", shown)
	}
}
