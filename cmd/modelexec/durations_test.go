package main

import (
	"strings"
	"testing"
)

// TestServeRefusesNegativeDurations: serve refuses a negative --retain-outputs, --retain-uploads,
// --drain-delay or --shutdown-grace (given as a flag or in the environment) before it starts,
// naming the flag, instead of keeping files for ever or skipping the drain.
func TestServeRefusesNegativeDurations(t *testing.T) {
	data := t.TempDir()
	base := []string{"serve", "--data", data, "--api-addr", freePort(t), "--queue-addr", freePort(t), "--sync-addr", freePort(t)}
	for _, tc := range []struct {
		args []string
		env  map[string]string
		flag string
	}{
		{[]string{"--retain-outputs=-1h"}, nil, "--retain-outputs"},
		{[]string{"--retain-uploads=-1s"}, nil, "--retain-uploads"},
		{[]string{"--drain-delay=-5s"}, nil, "--drain-delay"},
		{[]string{"--shutdown-grace=-1s"}, nil, "--shutdown-grace"},
		{nil, map[string]string{"MODELEXEC_RETAIN_OUTPUTS": "-1h"}, "--retain-outputs"},
	} {
		_, _, err := runCLI(t, tc.env, append(append([]string{}, base...), tc.args...)...)
		if err == nil || !strings.HasPrefix(err.Error(), tc.flag+" is -") || !strings.Contains(err.Error(), "give a duration of 0 or more") {
			t.Fatalf("serve %v %v: modelexec: %v", tc.args, tc.env, err)
		}
	}
}

// TestServeRefusesATrustedProxyThatIsNotAnAddress: a --trusted-proxies entry (flag or
// environment) that is neither an address nor a CIDR range stops serve before it listens,
// naming the entry, instead of quietly trusting nothing.
func TestServeRefusesATrustedProxyThatIsNotAnAddress(t *testing.T) {
	data := t.TempDir()
	base := []string{"serve", "--data", data, "--api-addr", freePort(t), "--queue-addr", freePort(t), "--sync-addr", freePort(t)}
	for _, tc := range []struct {
		args []string
		env  map[string]string
	}{
		{[]string{"--trusted-proxies", "10.0.0.0/8,haproxy.internal"}, nil},
		{nil, map[string]string{"MODELEXEC_TRUSTED_PROXIES": "haproxy.internal"}},
	} {
		_, _, err := runCLI(t, tc.env, append(append([]string{}, base...), tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), `trusted proxy "haproxy.internal" is neither an address nor a CIDR range`) {
			t.Fatalf("serve %v %v: modelexec: %v", tc.args, tc.env, err)
		}
	}
}
