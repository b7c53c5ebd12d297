package studio

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"
)

// An awareness entry applies only when newer than the room's (y-protocols' rule); it is the
// sender's own only when no peer here announces the client: a relay is credited to no one.
func TestSTU09_JudgeAwareness(t *testing.T) {
	st := func(clock uint64, state string) awarenessState { return awarenessState{clock, state} }
	for _, c := range []struct {
		name  string
		in    awarenessState
		o     owner
		cur   awarenessState
		known bool
		want  awarenessVerdict
	}{
		{"a new client", st(0, `{}`), ownerNone, awarenessState{}, false, awarenessClaim},
		{"its owner's newer state", st(3, `{}`), ownerSelf, st(2, `{}`), true, awarenessRelay},
		{"its owner leaves", st(3, "null"), ownerSelf, st(2, `{}`), true, awarenessRelease},
		{"a relay of another's state, not newer", st(2, `{}`), ownerOther, st(2, `{}`), true, awarenessDrop},
		{"a relay of another's newer state", st(3, `{}`), ownerOther, st(2, `{}`), true, awarenessRelay},
		{"a relay of another's removal at its clock", st(2, "null"), ownerOther, st(2, `{}`), true, awarenessRelay},
		{"a stale copy of a client that left", st(4, `{}`), ownerNone, st(5, "null"), true, awarenessDrop},
		{"a removal relayed after the client left", st(5, "null"), ownerNone, st(5, "null"), true, awarenessDrop},
		{"a client that left comes back", st(6, `{}`), ownerNone, st(5, "null"), true, awarenessClaim},
		{"another process's client, relayed", st(1, `{}`), ownerNone, st(1, `{}`), true, awarenessDrop},
		{"another process's client, moved here", st(2, `{}`), ownerNone, st(1, `{}`), true, awarenessClaim},
		{"a removal of a client the room never had", st(1, "null"), ownerNone, awarenessState{}, false, awarenessDrop},
	} {
		if got := judgeAwareness(c.in, c.o, c.cur, c.known); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// A process answering another's opening of a room sends the states its own peers announce, in
// answers of at most answerBytes (each travels in one notice between processes), and nothing
// of the states other processes announce (theirs to answer); a process without live peers of
// the document answers nothing.
func TestI26_AnswerAwarenessSendsOwnStatesInBoundedAnswers(t *testing.T) {
	var answers [][]byte
	svc := NewService(Config{Store: NewMemStore(), Now: func() time.Time { return t0 }, Aware: func(_ Key, u []byte) { answers = append(answers, u) }})
	k := Key{Account: "acct", Project: "p", Doc: "brief"}
	svc.AnswerAwareness(k)
	if len(answers) != 0 {
		t.Fatalf("a process without peers answered %d times", len(answers))
	}
	ctx := context.Background()
	big := `{"user":"` + strings.Repeat("x", 3000) + `"}`
	for i := range 3 {
		ss, err := svc.Join(ctx, JoinParams{Key: k, Peer: &listener{}})
		if err != nil {
			t.Fatal(err)
		}
		defer ss.Close()
		if err := ss.Receive(ctx, appendBytes([]byte{msgAwareness}, awarenessUpdate(map[uint64]awarenessState{uint64(i + 1): {1, big}}))); err != nil {
			t.Fatal(err)
		}
	}
	svc.HeardAwareness(k, awarenessUpdate(map[uint64]awarenessState{99: {1, `{"user":"elsewhere"}`}}))
	answers = nil
	svc.AnswerAwareness(k)
	got := map[uint64]string{}
	for _, u := range answers {
		if len(u) > answerBytes {
			t.Errorf("an answer of %d bytes, over %d", len(u), answerBytes)
		}
		changes, err := parseAwareness(u)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range changes {
			got[c.id] = c.state.state
		}
	}
	if len(answers) < 2 || len(got) != 3 || got[1] != big || got[3] != big || got[99] != "" {
		t.Fatalf("%d answers of the states %v, want the 3 announced here, in more than one", len(answers), slices.Collect(maps.Keys(got)))
	}
}
