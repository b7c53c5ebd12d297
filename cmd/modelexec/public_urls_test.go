package main

import (
	"strings"
	"testing"
)

// TestServeRefusesBadPublicURLs: a public base URL that status documents and signed links
// cannot be written on (not absolute, another scheme, no host, a query, a fragment, user-info)
// is refused at start, naming its flag, for each of the three surfaces.
func TestServeRefusesBadPublicURLs(t *testing.T) {
	data := migratedData(t) // each refused start leaves it as it was
	for _, flag := range []string{"--public-url-api", "--public-url-queue", "--public-url-sync"} {
		for _, bad := range []string{"not a url", "http://x/path?q=1#frag", "http://x/path#frag", "http://x/?", "ftp://q", "http://", "https://user:pw@x", "/svc"} {
			_, _, err := runCLI(t, nil, "serve", "--dev", "--data", data, flag, bad,
				"--api-addr", "127.0.0.1:0", "--queue-addr", "127.0.0.1:0", "--sync-addr", "127.0.0.1:0")
			if err == nil || !strings.Contains(err.Error(), flag) {
				t.Fatalf("serve %s %q: modelexec: %v", flag, bad, err)
			}
		}
	}
}
