package main

import (
	"strings"
	"testing"

	"github.com/modelexec/modelexec/internal/store/storetest"
)

// TestKeysListShowsNames: `keys list` shows the name a key was minted with beside its id, as
// `keys mint --help` says, in text and in --json ("" and "-" for a key without one).
func TestKeysListShowsNames(t *testing.T) {
	c := newConsole(t)
	acct := c.account("pro")
	named := c.mint(acct, "--name", "ci runner")
	plain := c.mint(acct)
	var keys struct {
		Data []struct {
			ID   string `json:"id"`
			Name string `json:"name"`
		} `json:"data"`
	}
	c.ok(&keys, "keys", "list", "--account", acct, "--json")
	names := map[string]string{}
	for _, k := range keys.Data {
		names[k.ID] = k.Name
	}
	if names[named.ID] != "ci runner" || names[plain.ID] != "" || len(names) != 2 {
		t.Fatalf("keys list --json names: %v", names)
	}
	text, err := c.run("keys", "list", "--account", acct)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, named.ID) && !strings.Contains(line, named.ID+"  ci runner ") {
			t.Fatalf("keys list shows the named key as %q", line)
		}
	}
	if !strings.Contains(text, "NAME") || !strings.Contains(text, named.ID+"  ci runner ") {
		t.Fatalf("keys list:\n%s", text)
	}
}

// TestDevServeHidesAPasswordParameter: serve --dev on a PostgreSQL URL with its password as a
// parameter prints the console commands to run without it.
func TestDevServeHidesAPasswordParameter(t *testing.T) {
	dsn := storetest.PostgresSchemaDSN(t, map[string][]string{"password": {"QPW-secret"}})
	out, _ := serveDev(t, dsn, "Web console")
	if strings.Contains(out.String(), "QPW-secret") || !strings.Contains(out.String(), "--database ") {
		t.Fatalf("serve --dev printed:\n%s", out.String())
	}
}
