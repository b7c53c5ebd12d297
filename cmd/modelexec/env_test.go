package main

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
)

// TestEnvReachesOnlyServeAndSharedFlags: the environment of a server (MODELEXEC_STATUS,
// MODELEXEC_PLAN, MODELEXEC_JSON…) does not reach a console command's flags of the same names:
// `accounts set --plan max` under MODELEXEC_STATUS=banned changes the plan and leaves the account
// live with its key, while the shared MODELEXEC_SECRET and MODELEXEC_DATA still apply (README
// "Configuration").
func TestEnvReachesOnlyServeAndSharedFlags(t *testing.T) {
	c := newConsole(t)
	acct := c.account("pro")
	c.mint(acct)
	env := map[string]string{
		"MODELEXEC_SECRET": c.secret, "MODELEXEC_DATA": c.data,
		"MODELEXEC_STATUS": "banned", "MODELEXEC_PASS_ONLY": "on", "MODELEXEC_ALLOWANCE": "7",
	}
	var out, errb bytes.Buffer
	err := run(context.Background(), []string{"accounts", "set", acct, "--plan", "max", "--json"},
		func(k string) string { return env[k] }, &out, &errb)
	if err != nil {
		t.Fatalf("accounts set with MODELEXEC_DATA: %v", err)
	}
	var shown map[string]any
	if err := json.Unmarshal(out.Bytes(), &shown); err != nil {
		t.Fatalf("accounts set printed %q: %v", out.String(), err)
	}
	if shown["status"] != "live" || shown["plan"] != "max" || shown["pass_only"] == true {
		t.Fatalf("accounts set --plan max under MODELEXEC_STATUS=banned, MODELEXEC_PASS_ONLY=on: %v", shown)
	}
	var keys listed
	c.ok(&keys, "keys", "list", "--account", acct, "--json")
	if len(keys.Data) != 1 || keys.Data[0].Status != "live" {
		t.Fatalf("keys after accounts set under MODELEXEC_STATUS=banned: %+v", keys.Data)
	}
}
