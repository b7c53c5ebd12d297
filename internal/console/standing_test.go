package console_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/webhooks"
)

var mintedID = regexp.MustCompile(`Key (\S+) minted`)

// TestConsoleBannedOrSuspendedAccountChangesNothing: once an account is banned or suspended
// (spec 02: every key refused), its console still signs in and shows the account, but every
// form that would change something is refused with 403 and the status's code, nothing reaches
// the receiver, and a form with typed fields is shown again with them.
func TestConsoleBannedOrSuspendedAccountChangesNothing(t *testing.T) {
	for _, st := range []auth.Status{auth.Banned, auth.Suspended} {
		t.Run(string(st), func(t *testing.T) {
			f := newWHFixture(t)
			rc := newHookReceiver(t)
			account := "acct_" + string(st)
			b := f.signIn(t, account, string(st)+"@example.com")

			// While live: an endpoint, a test event (a delivery to resend), a key.
			hook, dlv, key := whileLive(t, b, rc)

			if err := f.db.SetAccountStatus(context.Background(), account, st); err != nil {
				t.Fatal(err)
			}
			code := "account_" + string(st)
			if status, _ := b.get("/console/webhooks"); status != http.StatusOK {
				t.Fatalf("the webhooks page of a %s account answered %d", st, status)
			}
			refused := func(what, path string, form url.Values, kept ...string) {
				t.Helper()
				status, page := b.submit(path, form)
				if status != http.StatusForbidden || !strings.Contains(page, code) || !strings.Contains(page, "nothing was done") {
					t.Errorf("%s by a %s account answered %d, want 403 naming %s:\n%.3000s", what, st, status, code, page)
				}
				for _, k := range kept {
					if !strings.Contains(page, k) {
						t.Errorf("%s refused does not keep %q in the form", what, k)
					}
				}
			}
			other := newHookReceiver(t)
			refused("adding an endpoint", "/console/webhooks", url.Values{"url": {other.URL()}, "product": {"photo"}}, `value="`+other.URL()+`"`)
			refused("a test event", "/console/webhooks/"+hook+"/test", nil)
			refused("a re-challenge", "/console/webhooks/"+hook+"/challenge", nil)
			refused("a resend", "/console/webhooks/deliveries/"+dlv+"/resend", nil)
			refused("deleting an endpoint", "/console/webhooks/"+hook+"/delete", nil)
			refused("minting a key", "/console/keys", url.Values{"expires_days": {"90"}, "name": {"kept name"}}, `value="kept name"`)
			refused("revoking a key", "/console/keys/"+key+"/revoke", nil)
			refused("a playground run", "/console/playground", url.Values{"model": {"image-lite"}, "in.positivePrompt": {"a red bicycle"}}, "a red bicycle")
			if n := len(rc.events()); n != 1 {
				t.Errorf("the receiver got %d events, want only the one sent while live", n)
			}
			_, page := b.get("/console/webhooks")
			if got := whEndpointIDs(page); len(got) != 1 || got[0] != hook {
				t.Errorf("endpoints after the refusals: %v, want only %s", got, hook)
			}
			// Signing out is never refused.
			if status, page := b.submit("/console/sign-out", nil); status != http.StatusOK || !strings.Contains(page, `name="password"`) {
				t.Errorf("sign-out of a %s account answered %d", st, status)
			}
		})
	}
}

// TestERR27_ConsoleLimitedAccountWritesNothing: a limited account may read but not spend or write
// (spec 02 account_limited; the write bucket covers webhook changes). Its console used to add,
// re-challenge, test, delete and resend webhooks as if it were live, while POST /v1/webhooks
// answered 403 account_limited. Each of those forms now answers 403 naming account_limited and
// the write bucket in words, a playground run names the generate bucket, nothing reaches the
// receiver; the pages still read, and keys (managed only in the console, no API bucket but
// read) can still be revoked.
func TestERR27_ConsoleLimitedAccountWritesNothing(t *testing.T) {
	f := newWHFixture(t)
	rc := newHookReceiver(t)
	const account = "acct_limited_console"
	b := f.signIn(t, account, "limited@example.com")

	hook, dlv, key := whileLive(t, b, rc)

	if err := f.db.SetAccountStatus(context.Background(), account, auth.Limited); err != nil {
		t.Fatal(err)
	}
	if status, _ := b.get("/console/webhooks"); status != http.StatusOK {
		t.Fatalf("the webhooks page of a limited account answered %d", status)
	}
	refused := func(what, path, bucket string, form url.Values, kept ...string) {
		t.Helper()
		status, page := b.submit(path, form)
		if status != http.StatusForbidden || !strings.Contains(page, "account_limited, bucket "+bucket) ||
			!strings.Contains(page, "may read but not spend or write") || !strings.Contains(page, "nothing was done") {
			t.Errorf("%s by a limited account answered %d, want 403 naming account_limited and bucket %s:\n%.3000s", what, status, bucket, page)
		}
		for _, k := range kept {
			if !strings.Contains(page, k) {
				t.Errorf("%s refused does not keep %q in the form", what, k)
			}
		}
	}
	other := newHookReceiver(t)
	refused("adding an endpoint", "/console/webhooks", "write", url.Values{"url": {other.URL()}, "product": {"photo"}}, `value="`+other.URL()+`"`)
	refused("a test event", "/console/webhooks/"+hook+"/test", "write", nil)
	refused("a re-challenge", "/console/webhooks/"+hook+"/challenge", "write", nil)
	refused("a resend", "/console/webhooks/deliveries/"+dlv+"/resend", "write", nil)
	refused("deleting an endpoint", "/console/webhooks/"+hook+"/delete", "write", nil)
	refused("a playground run", "/console/playground", "generate", url.Values{"model": {"image-lite"}, "in.positivePrompt": {"a red bicycle"}}, "a red bicycle")
	if n := len(rc.events()) + len(other.events()); n != 1 {
		t.Errorf("the receivers got %d events, want only the one sent while live", n)
	}
	_, page := b.get("/console/webhooks")
	if got := whEndpointIDs(page); len(got) != 1 || got[0] != hook {
		t.Errorf("endpoints after the refusals: %v, want only %s", got, hook)
	}
	if status, page := b.submit("/console/keys/"+key+"/revoke", nil); status >= 400 {
		t.Errorf("revoking a key of a limited account answered %d:\n%.2000s", status, page)
	}
}

// whileLive makes, while the account is live, an endpoint, a test event (a delivery to resend)
// and a key, and returns their ids.
func whileLive(t *testing.T, b *whBrowser, rc *hookReceiver) (hook, delivery, key string) {
	t.Helper()
	_, page := b.submit("/console/webhooks", url.Values{"url": {rc.URL()}, "product": {"photo"}})
	ids := whEndpointIDs(page)
	if len(ids) != 1 {
		t.Fatalf("endpoints on the page: %v\n%s", ids, page)
	}
	b.submit("/console/webhooks/"+ids[0]+"/test", nil)
	evs := rc.events()
	if len(evs) != 1 {
		t.Fatalf("the receiver got %d events while live", len(evs))
	}
	_, page = b.submit("/console/keys", url.Values{"expires_days": {"90"}, "name": {"ci"}})
	return ids[0], evs[0].Header.Get(webhooks.HeaderDelivery), match(t, mintedID, page)
}
