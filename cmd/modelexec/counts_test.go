package main

import (
	"strings"
	"testing"
)

// TestServeRefusesNegativeCounts: serve refuses a negative --model-concurrency or
// --usage-export-rows (flag or environment) before it starts, naming the flag, instead of
// silently running with the default (4 jobs at once, 100000 rows).
func TestServeRefusesNegativeCounts(t *testing.T) {
	data := t.TempDir()
	base := []string{"serve", "--data", data, "--api-addr", freePort(t), "--queue-addr", freePort(t), "--sync-addr", freePort(t)}
	for _, tc := range []struct {
		args []string
		env  map[string]string
		flag string
	}{
		{[]string{"--model-concurrency=-3"}, nil, "--model-concurrency"},
		{[]string{"--usage-export-rows=-1"}, nil, "--usage-export-rows"},
		{nil, map[string]string{"MODELEXEC_USAGE_EXPORT_ROWS": "-1"}, "--usage-export-rows"},
	} {
		_, _, err := runCLI(t, tc.env, append(append([]string{}, base...), tc.args...)...)
		if err == nil || !strings.HasPrefix(err.Error(), tc.flag+" is -") {
			t.Fatalf("serve %v %v: modelexec: %v", tc.args, tc.env, err)
		}
	}
}
