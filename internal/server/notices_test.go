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
