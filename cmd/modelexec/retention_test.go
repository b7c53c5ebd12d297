package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// TestRetentionFlags: serve's retention defaults are 30 days of outputs and 7 days of uploads
// (as the README says), a process with the worker role runs the sweep, and one with both at 0
// keeps every file and runs none.
func TestRetentionFlags(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"serve", "--help"}, func(string) string { return "" }, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	help := out.String() + errOut.String()
	for _, want := range []string{"--retain-outputs=720h", "--retain-uploads=168h"} {
		if !strings.Contains(help, want) {
			t.Fatalf("serve --help does not show %s:\n%s", want, help)
		}
	}
	workers := func(outputs, uploads time.Duration) int {
		c := &ServeCmd{Roles: "worker", APIAddr: "127.0.0.1:0", QueueAddr: "127.0.0.1:0", SyncAddr: "127.0.0.1:0",
			RetainOutputs: outputs, RetainUploads: uploads}
		c.Data, c.Secret = migratedData(t), "retention-secret-0123456789"
		a, err := serveWith(t, c)
		if err != nil {
			t.Fatal(err)
		}
		return a.Workers()
	}
	kept, swept := workers(0, 0), workers(720*time.Hour, 168*time.Hour)
	if swept != kept+1 {
		t.Fatalf("a worker with retention runs %d workers, %d without: want one more, the sweep", swept, kept)
	}
}
