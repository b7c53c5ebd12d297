package jobs

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestQuietWarnWritesARepeatOnceAWhile: a warning that comes on every poll is written once,
// then once a period with how many times it came meanwhile; another warning is not held back.
func TestQuietWarnWritesARepeatOnceAWhile(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	var q quietWarn
	now := time.Unix(1_800_000_000, 0)
	for i := range 120 { // a poll every 100 ms for 12 s
		q.warn(log, now.Add(time.Duration(i)*100*time.Millisecond), "start queued job", "err", "failed to connect")
	}
	q.warn(log, now, "fail lost job", "err", "failed to connect")
	if got := strings.Count(buf.String(), "start queued job"); got != 1 {
		t.Fatalf("%d lines for one repeating warning in 12 s, want 1:\n%s", got, buf.String())
	}
	if !strings.Contains(buf.String(), "fail lost job") {
		t.Fatalf("another warning was held back:\n%s", buf.String())
	}
	q.warn(log, now.Add(31*time.Second), "start queued job", "err", "failed to connect")
	if !strings.Contains(buf.String(), "repeated=119") {
		t.Fatalf("the warning written again does not say how often it came:\n%s", buf.String())
	}
}
