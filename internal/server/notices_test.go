package server

import (
	"testing"

	"github.com/modelexec/modelexec/internal/studio"
)

// A studio change's notice names its document and revision whatever the names hold (a space,
// a slash, a line break would end the notice's line); anything else is not read as one.
func TestStudioNoticeRoundTrip(t *testing.T) {
	for _, k := range []studio.Key{
		{Account: "acct_a", Project: "p1", Doc: "brief"},
		{Account: "acct_b", Project: "a project/with slashes and\nbreaks", Doc: "brief"},
	} {
		got, rev, ok := studioHeard(studioNotice(k, 42))
		if !ok || got != k || rev != 42 {
			t.Fatalf("%q: read back %+v %d %v", k.Project, got, rev, ok)
		}
	}
	for _, bad := range []string{"", "a/b/c", "a/b/c/x", "a/b/%zz/1", "a/b/c/1/2"} {
		if _, _, ok := studioHeard(bad); ok {
			t.Errorf("%q read as a studio notice", bad)
		}
	}
}

// An awareness notice names its sender, its document whatever the names hold, and the update
// byte for byte; anything else is not read as one.
func TestStudioAwareNoticeRoundTrip(t *testing.T) {
	k := studio.Key{Account: "acct_b", Project: "a project/with slashes and\nbreaks", Doc: "brief"}
	update := []byte{1, 200, 1, 3, 2, '{', '}', 0xff}
	from, got, u, ok := studioAwareHeard(studioAwareNotice("proc1", k, update))
	if !ok || from != "proc1" || got != k || string(u) != string(update) {
		t.Fatalf("read back %q %+v %v %v", from, got, u, ok)
	}
	for _, bad := range []string{"", "p/a/b/c", "p/a/b/c/x/y", "p/a/%zz/c/AQ", "p/a/b/c/%%%"} {
		if _, _, _, ok := studioAwareHeard(bad); ok {
			t.Errorf("%q read as an awareness notice", bad)
		}
	}
}

// A room's opening is told as the asking process and its document whatever the names hold;
// anything else is not read as one.
func TestI26_StudioAskNoticeRoundTrip(t *testing.T) {
	k := studio.Key{Account: "acct_b", Project: "a project/with slashes and\nbreaks", Doc: "canvas:c1"}
	from, got, ok := studioAskHeard(studioAskNotice("proc1", k))
	if !ok || from != "proc1" || got != k {
		t.Fatalf("read back %q %+v %v", from, got, ok)
	}
	for _, bad := range []string{"", "p/a/b", "p/a/b/c/d", "p/a/%zz/c"} {
		if _, _, ok := studioAskHeard(bad); ok {
			t.Errorf("%q read as an awareness query", bad)
		}
	}
}
