package main

import (
	"regexp"
	"testing"
)

// TestHelpListsOnlyFlagsThatAct: each command's --help offers only the flags it reads: no
// --create on serve and migrate (they always create), no --secret or --key-prefix on migrate,
// no --log-level or --log-format where nothing is logged. Scripts written for earlier releases
// that pass them still run.
func TestHelpListsOnlyFlagsThatAct(t *testing.T) {
	for _, tc := range []struct {
		args      []string
		want, not []string
	}{
		{[]string{"serve"}, []string{"--secret", "--log-level", "--log-format", "--database"}, []string{"--create"}},
		{[]string{"migrate"}, []string{"--data", "--database"}, []string{"--create", "--secret", "--key-prefix", "--log-level", "--log-format"}},
		{[]string{"accounts", "create"}, []string{"--create", "--secret", "--key-prefix"}, []string{"--log-level", "--log-format"}},
		{[]string{"keys", "mint"}, []string{"--create", "--secret"}, []string{"--log-level", "--log-format"}},
		{[]string{"users", "create"}, []string{"--create", "--secret"}, []string{"--log-level", "--log-format"}},
	} {
		out, _, err := runCLI(t, nil, append(tc.args, "--help")...)
		if err != nil {
			t.Fatalf("%v --help: %v", tc.args, err)
		}
		for _, f := range tc.want {
			if !regexp.MustCompile(`(?m)^\s+` + f + `\b`).MatchString(out) {
				t.Fatalf("%v --help lacks %s:\n%s", tc.args, f, out)
			}
		}
		for _, f := range tc.not {
			if regexp.MustCompile(`(?m)^\s+` + f + `\b`).MatchString(out) {
				t.Fatalf("%v --help lists %s, which it does not use:\n%s", tc.args, f, out)
			}
		}
	}
	data := t.TempDir()
	if _, _, err := runCLI(t, nil, "migrate", "--data", data, "--secret", "0123456789abcdef0123", "--log-format", "json", "--create"); err != nil {
		t.Fatalf("migrate with the flags earlier releases listed: %v", err)
	}
	if _, _, err := runCLI(t, nil, "accounts", "create", "--data", data, "--log-level", "error", "--json"); err != nil {
		t.Fatalf("accounts create --log-level: %v", err)
	}
}
