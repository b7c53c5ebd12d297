package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/store/storetest"
)

// TestConsoleNoSuchAccount: keys list and users list on an account that does not exist say
// so, as every other command does, and fail.
func TestConsoleNoSuchAccount(t *testing.T) {
	c := newConsole(t)
	for _, args := range [][]string{
		{"keys", "list", "--account", "acct_nope"},
		{"users", "list", "--account", "acct_nope"},
	} {
		out, err := c.run(args...)
		if err == nil || err.Error() != "there is no account acct_nope" {
			t.Fatalf("%v: printed %q, modelexec: %v", args, out, err)
		}
	}
}

// TestCEIL_SetCeilingSaysWhatBinds: keys set-ceiling ID plan prints the ceiling that binds the
// key (the plan's allowance it follows, as keys list shows), and a ceiling of 0 is refused in a
// plain sentence saying what to give, with no JSON appended.
func TestCEIL_SetCeilingSaysWhatBinds(t *testing.T) {
	c := newConsole(t)
	var a struct{ ID string }
	c.ok(&a, "accounts", "create", "--plan", "pro", "--json")
	var k struct{ ID string }
	c.ok(&k, "keys", "mint", "--account", a.ID, "--ceiling", "100", "--json")
	var list struct {
		Data []struct {
			Ceiling int64 `json:"credit_ceiling"`
		} `json:"data"`
	}
	out, err := c.run("keys", "set-ceiling", k.ID, "plan")
	if err != nil {
		t.Fatal(err)
	}
	c.ok(&list, "keys", "list", "--account", a.ID, "--json")
	if len(list.Data) != 1 || list.Data[0].Ceiling == 0 {
		t.Fatalf("keys list: %+v", list)
	}
	want := "ceiling " + itoa(list.Data[0].Ceiling) + " credits a month (follows the plan's allowance)"
	if !strings.Contains(out, want) {
		t.Fatalf("set-ceiling plan printed %q, want %q", out, want)
	}
	for _, bad := range []string{"0", "-5"} {
		_, err := c.run("keys", "set-ceiling", k.ID, "--", bad)
		if err == nil || !strings.Contains(err.Error(), "a ceiling is a whole number of credits from 1 to") || strings.ContainsAny(err.Error(), "{}") {
			t.Fatalf("set-ceiling %s: modelexec: %v", bad, err)
		}
	}
	_, err = c.run("keys", "set-ceiling", k.ID, "999999999")
	if err == nil || !strings.Contains(err.Error(), "is above what this key's plan allows: give at most") || strings.ContainsAny(err.Error(), "{}") {
		t.Fatalf("set-ceiling 999999999: modelexec: %v", err)
	}
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

// TestDevHintNamesTheStoreInUse: serve --dev's "Lost the key?" line gives the --data and
// --database this process runs with, so the command it prints reaches the same store.
func TestDevHintNamesTheStoreInUse(t *testing.T) {
	for _, tc := range []struct {
		name string
		args func(data string) []string
		want func(data string) string
	}{
		{"sqlite in another folder", func(data string) []string { return []string{"--data", data} },
			func(data string) string { return "modelexec keys mint --data " + data + " --account acct_" }},
		{"postgres", func(data string) []string {
			return []string{"--data", data, "--database", storetest.PostgresSchemaDSN(t, nil)}
		}, func(data string) string { return "modelexec keys mint --data " + data + " --database 'postgres://" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := filepath.Join(t.TempDir(), "elsewhere")
			ctx, cancel := context.WithCancel(context.Background())
			apiAddr := freePort(t)
			out := &syncBuffer{}
			served := make(chan error, 1)
			go func() {
				served <- run(ctx, append([]string{"serve", "--dev", "--api-addr", apiAddr, "--queue-addr", freePort(t),
					"--sync-addr", freePort(t), "--log-level", "error", "--drain-delay", "0"}, tc.args(data)...), noEnv, out, io.Discard)
			}()
			res := waitFor(t, func() (*http.Response, error) { return http.Get("http://" + apiAddr + "/healthz") })
			res.Body.Close()
			time.Sleep(100 * time.Millisecond)
			cancel()
			<-served
			if !strings.Contains(out.String(), "Lost the key? Mint another: "+tc.want(data)) {
				t.Fatalf("serve --dev printed:\n%s\nwant the hint %q", out.String(), tc.want(data))
			}
		})
	}
}
