package studio

import "testing"

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
