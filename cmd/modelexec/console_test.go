package main

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/auth"
)

// console runs the CLI against one data directory with MODELEXEC_SECRET set through getenv.
type console struct {
	t      *testing.T
	data   string
	secret string
}

func newConsole(t *testing.T) *console {
	c := &console{t: t, data: migratedData(t), secret: "console-test-secret"}
	c.ok(nil, "migrate") // console commands refuse a missing database
	return c
}

func (c *console) getenv(name string) string {
	if name == "MODELEXEC_SECRET" {
		return c.secret
	}
	return ""
}

func (c *console) run(args ...string) (string, error) {
	c.t.Helper()
	var out, errb bytes.Buffer
	full := append([]string{}, args...)
	if i := slices.Index(full, "--"); i >= 0 {
		full = slices.Insert(full, i, "--data", c.data)
	} else {
		full = append(full, "--data", c.data)
	}
	err := run(context.Background(), full, c.getenv, &out, &errb)
	return out.String(), err
}

func (c *console) ok(v any, args ...string) {
	c.t.Helper()
	out, err := c.run(args...)
	if err != nil {
		c.t.Fatalf("%v: %v", args, err)
	}
	if v != nil {
		if err := json.Unmarshal([]byte(out), v); err != nil {
			c.t.Fatalf("%v printed %q: %v", args, out, err)
		}
	}
}

func (c *console) account(plan string) string {
	var a struct{ ID string }
	c.ok(&a, "accounts", "create", "--plan", plan, "--json")
	if !strings.HasPrefix(a.ID, "acct_") {
		c.t.Fatalf("account id %q", a.ID)
	}
	return a.ID
}

type minted struct{ Key, ID string }

func (c *console) mint(account string, extra ...string) minted {
	var m minted
	c.ok(&m, append([]string{"keys", "mint", "--account", account, "--json"}, extra...)...)
	return m
}

type listed struct {
	Object string
	Data   []struct {
		ID           string   `json:"id"`
		Status       string   `json:"status"`
		Scopes       []string `json:"scopes"`
		ExpiresAt    string   `json:"expires_at"`
		RevokedAt    *string  `json:"revoked_at"`
		ExpiringSoon bool     `json:"expiring_soon"`
		Ceiling      int64    `json:"credit_ceiling"`
		CeilingMode  string   `json:"ceiling_mode"`
	}
}

// TestKEY14_ConsoleKeys proves KEY-14 (mint --json prints {"key","id"}; the secret comes from
// MODELEXEC_SECRET), KEY-12 (the key is never shown again: list prints ids only), KEY-18 (expiry
// choice), KEY-24 (revoke twice → the original revoked_at), KEY-27 (free plan: 2 live keys), SCP-04
// and SCP-14 through --scopes.
func TestKEY14_ConsoleKeys(t *testing.T) {
	c := newConsole(t)
	acct := c.account("free")
	var shown map[string]any
	c.ok(&shown, "accounts", "show", acct, "--json")
	if shown["plan"] != "free" || shown["status"] != "live" || shown["balance"] != float64(0) {
		t.Fatalf("account %v", shown)
	}

	k1 := c.mint(acct)
	if len(k1.Key) != 69 || !strings.HasPrefix(k1.Key, "svc_sk_"+k1.ID+"_") || len(k1.ID) != 12 {
		t.Fatalf("minted %+v", k1)
	}
	if _, err := (auth.Format{Prefix: auth.DefaultPrefix}).Parse(k1.Key); err != nil {
		t.Fatalf("minted key does not parse: %v", err)
	}
	out, _ := c.run("keys", "mint", "--account", acct, "--json")
	var raw map[string]any
	if err := json.Unmarshal([]byte(out), &raw); err != nil || len(raw) != 2 || raw["key"] == nil || raw["id"] == nil {
		t.Fatalf("mint --json printed %q", out)
	}
	k2 := minted{ID: raw["id"].(string)}
	// KEY-27: a free account holds 2 live keys.
	if _, err := c.run("keys", "mint", "--account", acct, "--json"); err == nil {
		t.Fatal("a third live key was minted on a free account")
	}

	var l listed
	c.ok(&l, "keys", "list", "--account", acct, "--json")
	if l.Object != "list" || len(l.Data) != 2 || l.Data[0].ID != k1.ID || l.Data[0].Status != "live" || l.Data[0].CeilingMode != "plan" {
		t.Fatalf("list %+v", l)
	}
	all, _ := c.run("keys", "list", "--account", acct, "--json")
	text, _ := c.run("keys", "list", "--account", acct)
	secret := k1.Key[len("svc_sk_")+13:]
	if strings.Contains(all, secret) || strings.Contains(text, secret) || !strings.Contains(text, k1.ID) {
		t.Fatal("the key list shows a secret, or not the id (KEY-12, KEY-13)")
	}

	// KEY-24: revoke twice answers the original stamp.
	var r1, r2 struct {
		ID        string `json:"id"`
		RevokedAt string `json:"revoked_at"`
	}
	c.ok(&r1, "keys", "revoke", k2.ID, "--json")
	// The second run opens the store again, milliseconds later: a moved stamp would show.
	c.ok(&r2, "keys", "revoke", k2.ID, "--json")
	if r1.ID != k2.ID || r1.RevokedAt == "" || r2.RevokedAt != r1.RevokedAt {
		t.Fatalf("revoke: %+v then %+v", r1, r2)
	}
	if _, err := time.Parse(time.RFC3339Nano, r1.RevokedAt); err != nil {
		t.Fatal(err)
	}
	c.ok(&l, "keys", "list", "--account", acct, "--json")
	if len(l.Data) != 2 || l.Data[1].Status != "revoked" || l.Data[1].RevokedAt == nil {
		t.Fatalf("after revoke %+v", l.Data)
	}
	// The revoked key freed its slot.
	k3 := c.mint(acct, "--expires-days", "30", "--scopes", "studio:read")
	c.ok(&l, "keys", "list", "--account", acct, "--json")
	last := l.Data[len(l.Data)-1]
	if last.ID != k3.ID || strings.Join(last.Scopes, ",") != "jobs:read,assets:read,studio:read" {
		t.Fatalf("scoped key %+v", last)
	}
	exp, _ := time.Parse(time.RFC3339, last.ExpiresAt)
	if d := time.Until(exp); d < 29*24*time.Hour || d > 30*24*time.Hour {
		t.Fatalf("30-day key expires in %v", d)
	}
	// Older names cannot be chosen; lifetimes outside the four are refused.
	if _, err := c.run("keys", "revoke", k3.ID); err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][]string{{"--scopes", "photo:write"}, {"--scopes", "admin"}, {"--expires-days", "400"}, {"--expires-days", "366"}} {
		if _, err := c.run(append([]string{"keys", "mint", "--account", acct}, bad...)...); err == nil {
			t.Fatalf("mint %v accepted", bad)
		}
	}
	if _, err := c.run("keys", "revoke", "nosuchkey000"); err == nil {
		t.Fatal("revoking an unknown key succeeded")
	}
}

// TestKEY11_ConsoleNeedsSecret: without MODELEXEC_SECRET minting is refused keys_not_configured.
func TestKEY11_ConsoleNeedsSecret(t *testing.T) {
	c := newConsole(t)
	acct := c.account("pro")
	c.secret = ""
	_, err := c.run("keys", "mint", "--account", acct, "--json")
	if err == nil || !strings.Contains(err.Error(), "keys_not_configured") {
		t.Fatalf("mint without a secret: %v", err)
	}
	// --secret works as the flag form.
	var m minted
	c.ok(&m, "keys", "mint", "--account", acct, "--json", "--secret", "flag-secret-0123456789")
	if m.Key == "" {
		t.Fatal("no key")
	}
	// A short secret would let one signed link give it away: refused, saying how long.
	if _, err := c.run("keys", "mint", "--account", acct, "--json", "--secret", "x"); err == nil || !strings.Contains(err.Error(), "is 1 characters: give at least 16") {
		t.Fatalf("mint with a one-character secret: %v", err)
	}
}

// TestCEIL_ConsoleSetCeiling proves CEIL-04, CEIL-05, CEIL-06, CEIL-07 through the console:
// bounds, a refusal above the most allowed naming it, support holds and their refusal.
func TestCEIL_ConsoleSetCeiling(t *testing.T) {
	c := newConsole(t)
	acct := c.account("pro") // 2000 monthly credits
	k := c.mint(acct, "--ceiling", "1500")
	var l listed
	c.ok(&l, "keys", "list", "--account", acct, "--json")
	if l.Data[0].Ceiling != 1500 || l.Data[0].CeilingMode != "fixed" {
		t.Fatalf("minted ceiling %+v", l.Data[0])
	}
	type set struct {
		ID      string `json:"id"`
		Mode    string `json:"ceiling_mode"`
		Ceiling int64  `json:"ceiling"`
		Support int64  `json:"support_ceiling"`
	}
	var s set
	c.ok(&s, "keys", "set-ceiling", k.ID, "2000", "--json")
	if s.Mode != "fixed" || s.Ceiling != 2000 {
		t.Fatalf("%+v", s)
	}
	for figure, want := range map[string]string{"2001": "above what this key's plan allows: give at most 2000",
		"0": "a whole number of credits from 1 to 2000", "-3": "a whole number of credits from 1 to 2000"} {
		_, err := c.run("keys", "set-ceiling", "--json", "--", k.ID, figure)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("set-ceiling %s: %v", figure, err)
		}
	}
	if _, err := c.run("keys", "set-ceiling", k.ID, "lots"); err == nil {
		t.Fatal("a non-number accepted")
	}
	if _, err := c.run("keys", "mint", "--account", acct, "--ceiling", "2001"); err == nil || !strings.Contains(err.Error(), "give at most 2000") {
		t.Fatalf("mint above the plan: %v", err)
	}
	c.ok(&s, "keys", "set-ceiling", k.ID, "plan", "--json")
	if s.Mode != "plan" {
		t.Fatalf("%+v", s)
	}
	// Support hold.
	c.ok(&s, "keys", "set-ceiling", k.ID, "800", "--by-support", "--json")
	if s.Mode != "fixed" || s.Ceiling != 800 || s.Support != 800 {
		t.Fatalf("support %+v", s)
	}
	c.ok(&s, "keys", "set-ceiling", k.ID, "300", "--json")
	c.ok(&s, "keys", "set-ceiling", k.ID, "800", "--json")
	if s.Ceiling != 800 || s.Support != 800 {
		t.Fatalf("raised back %+v", s)
	}
	for _, figure := range []string{"801", "plan"} {
		_, err := c.run("keys", "set-ceiling", k.ID, figure, "--json")
		if err == nil || !strings.Contains(err.Error(), "the support team holds this key's ceiling at 800") {
			t.Fatalf("set-ceiling %s under a hold: %v", figure, err)
		}
	}
	// A free account (no monthly credits): up to 1,000,000.
	free := c.account("free")
	fk := c.mint(free)
	c.ok(&s, "keys", "set-ceiling", fk.ID, "1000000", "--json")
	if _, err := c.run("keys", "set-ceiling", fk.ID, "1000001"); err == nil || !strings.Contains(err.Error(), "give at most 1000000") {
		t.Fatalf("free above 1,000,000: %v", err)
	}
	c.ok(&l, "keys", "list", "--account", free, "--json")
	c.ok(&s, "keys", "set-ceiling", fk.ID, "plan", "--json")
	c.ok(&l, "keys", "list", "--account", free, "--json")
	if l.Data[0].Ceiling != 0 || l.Data[0].CeilingMode != "plan" {
		t.Fatalf("free follow-plan shows %+v, want 0 (no cap)", l.Data[0])
	}
}

// TestConsoleAccounts: accounts create --plan/--credits/--created-at, set status/plan, credits grant.
func TestConsoleAccounts(t *testing.T) {
	c := newConsole(t)
	var a struct{ ID string }
	c.ok(&a, "accounts", "create", "--plan", "max", "--credits", "250", "--created-at", "2025-01-02T03:04:05Z", "--json")
	var shown map[string]any
	c.ok(&shown, "accounts", "show", a.ID, "--json")
	if shown["plan"] != "max" || shown["balance"] != float64(250) || shown["monthly_allowance"] != float64(6000) || shown["created_at"] != "2025-01-02T03:04:05Z" {
		t.Fatalf("%v", shown)
	}
	c.ok(&shown, "accounts", "set", a.ID, "--status", "limited", "--plan", "pro", "--json")
	if shown["status"] != "limited" || shown["plan"] != "pro" || shown["monthly_allowance"] != float64(2000) {
		t.Fatalf("%v", shown)
	}
	c.ok(&shown, "accounts", "set", a.ID, "--allowance", "2500", "--json")
	if shown["monthly_allowance"] != float64(2500) || shown["plan"] != "pro" {
		t.Fatalf("%v", shown)
	}
	var g map[string]any
	c.ok(&g, "credits", "grant", a.ID, "100", "--json")
	if g["balance"] != float64(350) {
		t.Fatalf("%v", g)
	}
	c.ok(&g, "credits", "grant", a.ID, "--json", "--", "-50")
	if g["balance"] != float64(300) {
		t.Fatalf("%v", g)
	}
	for _, bad := range [][]string{{"accounts", "create", "--plan", "gold"}, {"accounts", "set", a.ID, "--status", "deleted"},
		{"accounts", "create", "--created-at", "yesterday"}, {"accounts", "show", "acct_missing"}} {
		if _, err := c.run(bad...); err == nil {
			t.Fatalf("%v accepted", bad)
		}
	}
}

// TestConsoleOperatorFiguresBounded: what an operator types stays within what the ledger can
// hold. A grant past MaxGrant (or of 0) used to be written, one near the int64 limit left the
// balance unreadable, and a pass took -5 uses; each is refused now by the ledger (the console's
// forms get the same refusals), naming the bound, and writes nothing. credits remove takes
// credits away without the "--" a negative argument needs.
func TestConsoleOperatorFiguresBounded(t *testing.T) {
	c := newConsole(t)
	var a struct{ ID string }
	c.ok(&a, "accounts", "create", "--credits", "100", "--json")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"credits", "grant", a.ID, "9223372036854775807"}, "at most 1000000000 either way"},
		{[]string{"credits", "grant", a.ID, "1000000001"}, "at most 1000000000 either way"},
		{[]string{"credits", "grant", a.ID, "0"}, "other than zero"},
		{[]string{"credits", "remove", a.ID, "1000000001"}, "at most 1000000000 either way"},
		{[]string{"credits", "grant", "acct_missing", "5"}, "there is no account acct_missing"},
		{[]string{"accounts", "create", "--credits", "5000000000"}, "opening balance is a whole number of credits from 0 to 1000000000"},
		{[]string{"accounts", "create", "--allowance", "1000000000001"}, "monthly allowance is a whole number of credits from 0 to 1000000000000"},
		{[]string{"accounts", "set", a.ID, "--allowance", "9223372036854775807"}, "monthly allowance is a whole number of credits from 0 to 1000000000000"},
		{[]string{"passes", "grant", "--account", a.ID, "--name", "p", "--uses=-5"}, "uses is a whole number of jobs, 1 or more (-1: unlimited)"},
		{[]string{"passes", "grant", "--account", a.ID, "--name", "p", "--uses", "0"}, "uses is a whole number of jobs, 1 or more (-1: unlimited)"},
		{[]string{"passes", "grant", "--account", a.ID, "--name", "p", "--max-credits=-5"}, "largest quote covered is a whole number of credits (0: any)"},
		{[]string{"passes", "grant", "--account", a.ID, "--name", "p", "--expires-days", "3651"}, "--expires-days is a number of days from 1 to 3650"},
		{[]string{"passes", "grant", "--account", a.ID, "--name", " "}, "a pass needs a name of at most 100 characters"},
		{[]string{"passes", "grant", "--account", "acct_missing", "--name", "p"}, "there is no account acct_missing"},
	} {
		out, err := c.run(tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("%v: %q, %v; want a refusal saying %q", tc.args, out, err, tc.want)
		}
	}
	var g map[string]any
	c.ok(&g, "credits", "remove", a.ID, "30", "--json")
	if g["balance"] != float64(70) {
		t.Fatalf("credits remove 30 from 100: %v", g)
	}
	var shown map[string]any
	c.ok(&shown, "accounts", "show", a.ID, "--json")
	if shown["balance"] != float64(70) || shown["monthly_allowance"] != float64(2000) {
		t.Fatalf("the refusals changed the account: %v", shown)
	}
}
