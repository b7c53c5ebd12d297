package main

import (
	"strings"
	"testing"
)

// TestOpenAIUpstreamEnvironment: MODELEXEC_OPENAI_UPSTREAM names several upstreams separated by
// ; (each value holds commas): the second one reaches the server as its own upstream (an
// unknown model there is refused by its name), instead of being glued onto the first one's base
// URL. A base URL with a query, a fragment or spaces is refused, naming the model.
func TestOpenAIUpstreamEnvironment(t *testing.T) {
	serve := []string{"serve", "--dev", "--api-addr", "127.0.0.1:0", "--queue-addr", "127.0.0.1:0", "--sync-addr", "127.0.0.1:0"}
	env := map[string]string{"MODELEXEC_OPENAI_UPSTREAM": "kimi=http://127.0.0.1:1/v1,key=sk-x; nosuch=http://127.0.0.1:1/v2"}
	_, _, err := runCLI(t, env, append(serve, "--data", t.TempDir())...)
	if err == nil || !strings.Contains(err.Error(), "--openai-upstream nosuch: no such language model") {
		t.Fatalf("serve under MODELEXEC_OPENAI_UPSTREAM=%q: modelexec: %v", env["MODELEXEC_OPENAI_UPSTREAM"], err)
	}
	for _, bad := range []string{"kimi=http://h/v1?x=1", "kimi=http://h/v1#f", "kimi=http://h/v1;qwen=http://h/v2", "kimi=http://h/v 1", "kimi=ftp://h/v1", "kimi=/v1"} {
		_, _, err := runCLI(t, nil, append(serve, "--data", t.TempDir(), "--openai-upstream", bad)...)
		if err == nil || !strings.Contains(err.Error(), "--openai-upstream kimi: base URL") {
			t.Fatalf("serve --openai-upstream %q: modelexec: %v", bad, err)
		}
	}
}
