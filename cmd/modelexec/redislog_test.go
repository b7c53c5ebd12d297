package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestRedisMessagesInTheStructuredLog: with --log-format json, what go-redis says about a
// Redis it cannot reach is a JSON record of the process's log, not a plain line of its own
// between the records.
func TestRedisMessagesInTheStructuredLog(t *testing.T) {
	var buf syncBuffer
	LogFlags{LogFormat: "json", LogLevel: "info"}.logger(&buf)
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 100 * time.Millisecond})
	defer rdb.Close()
	for range 8 { // go-redis speaks up after repeated failed dials
		_ = rdb.Ping(context.Background()).Err()
	}
	out := buf.String()
	if !strings.Contains(out, "redis") {
		t.Fatalf("go-redis said nothing into the log: %q", out)
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("a log line that is not JSON: %q", line)
		}
	}
}
