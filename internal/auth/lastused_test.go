package auth

import (
	"context"
	"testing"
	"time"
)

type touches struct{ writes []map[string]time.Time }

func (s *touches) TouchKeys(_ context.Context, m map[string]time.Time) error {
	s.writes = append(s.writes, m)
	return nil
}

func (s *touches) KeysLastUsed(context.Context, string) (map[string]time.Time, error) {
	return nil, nil
}

func TestLastUsedKeepsTheLatestAndWritesOncePerFlush(t *testing.T) {
	st := &touches{}
	l := &LastUsed{Store: st}
	t0 := time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC)
	l.Note("a", t0.Add(time.Minute))
	l.Note("a", t0) // an older note never moves the time back
	l.Note("b", t0)
	if err := l.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(st.writes) != 1 || !st.writes[0]["a"].Equal(t0.Add(time.Minute)) || !st.writes[0]["b"].Equal(t0) {
		t.Fatalf("writes %v", st.writes)
	}
	if err := l.Flush(context.Background()); err != nil || len(st.writes) != 1 {
		t.Fatalf("a flush with nothing noted wrote: %v %v", st.writes, err)
	}
	for i := range maxNoted + 10 {
		l.Note(string(rune('a'+i%26))+time.Duration(i).String(), t0)
	}
	if n := len(l.seen); n != maxNoted {
		t.Fatalf("%d notes held, want at most %d", n, maxNoted)
	}
}
