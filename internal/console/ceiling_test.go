package console_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
	"github.com/modelexec/modelexec/internal/store/storetest"
)

// This file follows an account owner changing a key's monthly credit ceiling from the keys
// page (spec 02, per-key credit ceilings #4), as the operator's `modelexec keys set-ceiling`
// does: the form posts to /console/keys/{id}/ceiling, a change is answered with a redirect and
// a message, and a refusal is shown again next to the key's form.

var ceilingShown = regexp.MustCompile(`<span class="ceiling-now">([^<]*)</span>`)

// ceilingOf reads a key's row on the keys page: its ceiling as shown, and the row's cells.
func ceilingOf(t *testing.T, page, id string) (ceiling, row string) {
	t.Helper()
	r, ok := keyRows(page)[id]
	if !ok {
		t.Fatalf("key %s is not on the keys page:\n%.3000s", id, page)
	}
	return match(t, ceilingShown, r[1]), r[1]
}

// setCeiling posts the key's ceiling form as the keys page carries it.
func (p *usagePerson) setCeiling(id, mode, figure string) (int, http.Header, string) {
	p.t.Helper()
	return p.post("/console/keys", "/console/keys/"+id+"/ceiling", url.Values{"ceiling_mode": {mode}, "ceiling": {figure}})
}

// keyOf reads a key as the store holds it.
func (s *usageSite) keyOf(id string) auth.KeyRecord {
	s.t.Helper()
	k, err := s.db.Key(context.Background(), id)
	if err != nil {
		s.t.Fatal(err)
	}
	return k
}

// TestCEIL06_ConsoleChangesAKeysCeiling proves CEIL-06 from the console: the owner makes a
// key's ceiling looser and tighter within the plan's bound and back to the plan, each change
// answered 303 with a message and shown on the keys page, while the month's spend under the
// key stays counted. A figure above the plan, zero, a word or no choice at all is refused next
// to the key's form with the most allowed, and changes nothing.
func TestCEIL06_ConsoleChangesAKeysCeiling(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *sqlstore.DB) {
		s := newUsageSite(t, db, 0)
		key := s.account("acct_c6")
		pk, err := s.auth.Parse(key)
		if err != nil {
			t.Fatal(err)
		}
		id := pk.ID
		j := s.run(key, "a lighthouse at dusk")
		spent := s.keyOf(id).SpentIn(s.clock.Now())
		if spent == 0 || spent != j.Charged {
			t.Fatalf("the key spent %d, the job charged %d", spent, j.Charged)
		}
		a, err := s.auth.Account(context.Background(), "acct_c6")
		if err != nil || a.MonthlyAllowance < 1600 {
			t.Fatalf("the account's allowance %d (%v) leaves no room for the test's figures", a.MonthlyAllowance, err)
		}
		p := s.signIn("acct_c6")
		if _, row := ceilingOf(t, p.page("/console/keys"), id); !strings.Contains(row, `action="/console/keys/`+id+`/ceiling"`) {
			t.Fatalf("the live key's row has no ceiling form:\n%s", row)
		}

		for _, tc := range []struct {
			mode, figure, shown string
			want                auth.Ceiling
		}{
			{"fixed", "1,500", "1,500", auth.Ceiling{Mode: auth.Fixed, Amount: 1500}},                                                       // tighter than the plan
			{"fixed", "1", "1", auth.Ceiling{Mode: auth.Fixed, Amount: 1}},                                                                  // tighter, below what is spent
			{"fixed", fmtInt(a.MonthlyAllowance), groupInt(a.MonthlyAllowance), auth.Ceiling{Mode: auth.Fixed, Amount: a.MonthlyAllowance}}, // looser, to the bound
			{"plan", "", "plan (" + groupInt(a.MonthlyAllowance) + ")", auth.Ceiling{Mode: auth.FollowPlan}},
		} {
			code, hd, body := p.setCeiling(id, tc.mode, tc.figure)
			if code != http.StatusSeeOther || hd.Get("Location") != "/console/keys" {
				t.Fatalf("%s %q answered %d to %q: %.2000s", tc.mode, tc.figure, code, hd.Get("Location"), body)
			}
			page := p.page("/console/keys")
			if !strings.Contains(page, "monthly credit ceiling is now "+tc.shown+".") || !strings.Contains(page, "The "+groupInt(spent)+" credits spent under it this month still count.") {
				t.Fatalf("%s %q: the page after the change does not say so:\n%.3000s", tc.mode, tc.figure, page)
			}
			if shown, row := ceilingOf(t, page, id); shown != tc.shown || !strings.Contains(row, `<td class="num">`+groupInt(spent)+`</td>`) {
				t.Fatalf("%s %q: the row shows ceiling %q, want %q, and its spend %d:\n%s", tc.mode, tc.figure, shown, tc.shown, spent, row)
			}
			if k := s.keyOf(id); k.Ceiling != tc.want || k.SpentIn(s.clock.Now()) != spent {
				t.Fatalf("%s %q: the key holds %+v with %d spent, want %+v with %d", tc.mode, tc.figure, k.Ceiling, k.SpentIn(s.clock.Now()), tc.want, spent)
			}
		}

		most := "Give at most " + groupInt(a.MonthlyAllowance) + " credits."
		for _, tc := range []struct {
			mode, figure string
			code         int
			says         string
		}{
			{"fixed", fmtInt(a.MonthlyAllowance + 1), http.StatusBadRequest, "The ceiling is above what the plan allows. " + most}, // ceiling_too_high
			{"fixed", "0", http.StatusBadRequest, "zero spells no cap. " + most},
			{"fixed", "-5", http.StatusBadRequest, most},
			{"fixed", "lots", http.StatusBadRequest, "The ceiling is a whole number of credits."},
			{"fixed", "", http.StatusBadRequest, "The ceiling is a whole number of credits."},
			{"", "", http.StatusBadRequest, "Pick “Follow the plan” or “A fixed figure”"},
		} {
			code, _, body := p.setCeiling(id, tc.mode, tc.figure)
			_, row := ceilingOf(t, body, id)
			if code != tc.code || !regexp.MustCompile(`<p class="error ceiling-error" role="alert">[^<]*`+regexp.QuoteMeta(tc.says)).MatchString(row) {
				t.Fatalf("%s %q answered %d, want %d and %q next to the form:\n%s", tc.mode, tc.figure, code, tc.code, tc.says, row)
			}
			if tc.mode == "fixed" && !strings.Contains(row, `value="`+tc.figure+`"`) {
				t.Fatalf("the refused figure %q is not kept in the form:\n%s", tc.figure, row)
			}
			if k := s.keyOf(id); k.Ceiling != (auth.Ceiling{Mode: auth.FollowPlan}) || k.SpentIn(s.clock.Now()) != spent {
				t.Fatalf("%s %q was refused but the key holds %+v with %d spent", tc.mode, tc.figure, k.Ceiling, k.SpentIn(s.clock.Now()))
			}
		}
	})
}

// TestCEIL07_ConsoleSupportHeldCeiling proves CEIL-07 from the console: a figure the support
// team set binds the key. The page says so; the owner lowers it and raises it back up to that
// figure, but a larger figure or the plan is refused ceiling_held with the figure as the most
// allowed, and the key keeps its ceiling.
func TestCEIL07_ConsoleSupportHeldCeiling(t *testing.T) {
	s := newUsageSite(t, storetest.OpenSQLite(t), 0)
	key := s.account("acct_c7")
	pk, err := s.auth.Parse(key)
	if err != nil {
		t.Fatal(err)
	}
	id := pk.ID
	if _, err := s.auth.SetCeiling(context.Background(), id, auth.CeilingRequest{Amount: 1500, BySupport: true}); err != nil {
		t.Fatal(err)
	}
	p := s.signIn("acct_c7")
	if shown, row := ceilingOf(t, p.page("/console/keys"), id); shown != "1,500" || !strings.Contains(row, "Set by the support team: at most 1,500 credits") {
		t.Fatalf("the held key's row shows %q and no word of the hold:\n%s", shown, row)
	}
	for _, figure := range []string{"1000", "1500"} { // lowered, then raised back to the hold
		if code, _, body := p.setCeiling(id, "fixed", figure); code != http.StatusSeeOther {
			t.Fatalf("fixed %s under a hold of 1,500 answered %d: %.2000s", figure, code, body)
		}
	}
	for _, tc := range []struct{ mode, figure string }{{"fixed", "1501"}, {"plan", ""}} {
		code, _, body := p.setCeiling(id, tc.mode, tc.figure)
		_, row := ceilingOf(t, body, id)
		if code != http.StatusConflict || !strings.Contains(row, "A ceiling set by support binds this key. Give at most 1,500 credits.") {
			t.Fatalf("%s %q over a hold of 1,500 answered %d, want 409 ceiling_held with the figure:\n%s", tc.mode, tc.figure, code, row)
		}
	}
	if k := s.keyOf(id); k.Ceiling != (auth.Ceiling{Mode: auth.Fixed, Amount: 1500, Support: 1500}) {
		t.Fatalf("the held key holds %+v", k.Ceiling)
	}
}

// TestCEIL06_ConsoleCeilingOnlyForTheOwnersLiveKeys: the ceiling form changes only the
// account's own live keys. Another account's key is not found (404) and keeps its ceiling;
// the console's key, which has no ceiling, has no form and is refused (409); a revoked key has
// no form and is refused; and a form without its csrf token is refused (403) and changes nothing.
func TestCEIL06_ConsoleCeilingOnlyForTheOwnersLiveKeys(t *testing.T) {
	s := newUsageSite(t, storetest.OpenSQLite(t), 0)
	own := s.account("acct_own")
	other := s.account("acct_other")
	ownPK, _ := s.auth.Parse(own)
	otherPK, _ := s.auth.Parse(other)
	p := s.signIn("acct_own")
	plan := auth.Ceiling{Mode: auth.FollowPlan}

	if code, _, body := p.setCeiling(otherPK.ID, "fixed", "100"); code != http.StatusNotFound || !strings.Contains(body, "There is no such page.") {
		t.Fatalf("another account's key answered %d: %.2000s", code, body)
	}
	if k := s.keyOf(otherPK.ID); k.Ceiling != plan {
		t.Fatalf("another account's key now holds %+v", k.Ceiling)
	}

	console := auth.ConsoleKeyIDOf("acct_own")
	if _, row := ceilingOf(t, p.page("/console/keys"), console); strings.Contains(row, "/ceiling") {
		t.Fatalf("the console's key has a ceiling form:\n%s", row)
	}
	if code, _, body := p.setCeiling(console, "fixed", "100"); code != http.StatusConflict || !strings.Contains(body, "no monthly credit ceiling of its own") {
		t.Fatalf("the console's key answered %d: %.3000s", code, body)
	}
	if k := s.keyOf(console); k.Ceiling != (auth.Ceiling{Mode: auth.NoCap}) {
		t.Fatalf("the console's key now holds %+v", k.Ceiling)
	}

	// A form without its csrf token, sent from the console's own origin.
	req, _ := http.NewRequest(http.MethodPost, s.url+"/console/keys/"+ownPK.ID+"/ceiling",
		strings.NewReader(url.Values{"ceiling_mode": {"fixed"}, "ceiling": {"100"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", s.url)
	res, err := p.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if b := body(res); res.StatusCode != http.StatusForbidden || !strings.Contains(b, "did not come from this console") {
		t.Fatalf("a form without its token answered %d: %.2000s", res.StatusCode, b)
	}
	if k := s.keyOf(ownPK.ID); k.Ceiling != plan {
		t.Fatalf("a form without its token changed the key to %+v", k.Ceiling)
	}

	if _, err := s.auth.Revoke(context.Background(), ownPK.ID); err != nil {
		t.Fatal(err)
	}
	if _, row := ceilingOf(t, p.page("/console/keys"), ownPK.ID); strings.Contains(row, "/ceiling") {
		t.Fatalf("the revoked key has a ceiling form:\n%s", row)
	}
	if code, _, body := p.setCeiling(ownPK.ID, "fixed", "100"); code != http.StatusConflict || !strings.Contains(body, "is revoked") {
		t.Fatalf("the revoked key answered %d: %.3000s", code, body)
	}
	if k := s.keyOf(ownPK.ID); k.Ceiling != plan {
		t.Fatalf("the revoked key now holds %+v", k.Ceiling)
	}
}

func fmtInt(n int64) string { return strconv.FormatInt(n, 10) }

// groupInt writes n as the console does: 1,234,567.
func groupInt(n int64) string {
	s := fmtInt(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
