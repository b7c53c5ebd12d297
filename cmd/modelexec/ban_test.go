package main

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelexec/modelexec/internal/server"
)

// TestERR26_BanRevokesKeys: banning an account revokes its keys (spec 02: "account banned; its
// keys revoked"), in the ban's own transaction; setting the account live again does not bring
// them back: the old key answers 401 key_revoked over HTTP, and a key minted after works.
func TestERR26_BanRevokesKeys(t *testing.T) {
	c := newConsole(t)
	acct := c.account("pro")
	old := c.mint(acct)
	var shown map[string]any
	c.ok(&shown, "accounts", "set", acct, "--status", "banned", "--json")
	if shown["status"] != "banned" {
		t.Fatalf("after ban: %v", shown)
	}
	var keys listed
	c.ok(&keys, "keys", "list", "--account", acct, "--json")
	if len(keys.Data) != 1 || keys.Data[0].Status != "revoked" {
		t.Fatalf("keys after the ban: %+v", keys.Data)
	}
	// A banned account mints no key: every one would be refused account_banned.
	if out, err := c.run("keys", "mint", "--account", acct, "--json"); err == nil || !strings.Contains(out+err.Error(), "banned") {
		t.Fatalf("a banned account minted a key: %q %v", out, err)
	}
	c.ok(&shown, "accounts", "set", acct, "--status", "live", "--json")
	fresh := c.mint(acct)

	s := &ServeCmd{Roles: "api", APIAddr: "127.0.0.1:0", QueueAddr: "127.0.0.1:0", SyncAddr: "127.0.0.1:0"}
	s.Data, s.Secret, s.KeyPrefix = c.data, c.secret, "svc_sk_"
	a, err := serveWith(t, s)
	if err != nil {
		t.Fatal(err)
	}
	api := a.Handler(server.RoleAPI)
	me := func(key string) (int, string) {
		req := httptest.NewRequest("GET", "/v1/me", nil)
		req.Header.Set("Authorization", "Bearer "+key)
		rec := httptest.NewRecorder()
		api.ServeHTTP(rec, req)
		var body struct {
			Error string `json:"error"`
		}
		_ = json.Unmarshal(rec.Body.Bytes(), &body)
		return rec.Code, body.Error
	}
	if code, ec := me(old.Key); code != 401 || ec != "key_revoked" {
		t.Fatalf("the banned account's old key after `accounts set --status live`: %d %q, want 401 key_revoked", code, ec)
	}
	if code, _ := me(fresh.Key); code != 200 {
		t.Fatalf("a key minted after the account is live again: %d, want 200", code)
	}
}
