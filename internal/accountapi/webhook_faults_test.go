package accountapi_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
	"github.com/modelexec/modelexec/internal/store/storetest"
	"github.com/modelexec/modelexec/internal/webhooks"
)

// failingHooks is the webhooks store failing every endpoint statement while down is set, as a
// database that stopped answering.
type failingHooks struct {
	webhooks.Store
	down *atomic.Bool
}

var errHooksDown = errors.New("injected: the database is gone")

func (f failingHooks) CreateEndpoint(ctx context.Context, p webhooks.CreateEndpointParams) (webhooks.Endpoint, error) {
	if f.down.Load() {
		return webhooks.Endpoint{}, errHooksDown
	}
	return f.Store.CreateEndpoint(ctx, p)
}

func (f failingHooks) GetEndpoint(ctx context.Context, id string) (webhooks.Endpoint, error) {
	if f.down.Load() {
		return webhooks.Endpoint{}, errHooksDown
	}
	return f.Store.GetEndpoint(ctx, id)
}

func (f failingHooks) ListEndpoints(ctx context.Context, account string) ([]webhooks.Endpoint, error) {
	if f.down.Load() {
		return nil, errHooksDown
	}
	return f.Store.ListEndpoints(ctx, account)
}

func (f failingHooks) DeleteEndpoint(ctx context.Context, account, id string) (bool, error) {
	if f.down.Load() {
		return false, errHooksDown
	}
	return f.Store.DeleteEndpoint(ctx, account, id)
}

// TestERR89_WebhookStoreFailures proves ERR-89's three server-side rows over HTTP: while the
// webhooks store fails, registering answers 500 webhook_not_created, listing and re-challenging
// 500 webhook_read_failed, deleting 500 webhook_delete_failed; none carries the store's error.
// Once it answers again the endpoint registered before is listed and deleted.
func TestERR89_WebhookStoreFailures(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *sqlstore.DB) {
		rc := newWHReceiver(t)
		var down atomic.Bool
		e := newWHEnvOn(t, db, rootsOf(rc.srv), failingHooks{Store: sqlstore.Webhooks{DB: db}, down: &down})
		storetest.NewAccount(t, db, "acct_a", auth.Pro, 1000)
		key := e.mint("acct_a")
		reg := e.do("POST", "/v1/webhooks", key, map[string]any{"url": rc.URL()})
		e.want(reg, 201, "")
		id, _ := reg.body["id"].(string)

		down.Store(true)
		for _, c := range []struct{ method, path, code string }{
			{"POST", "/v1/webhooks", "webhook_not_created"},
			{"GET", "/v1/webhooks", "webhook_read_failed"},
			{"POST", "/v1/webhooks/" + id, "webhook_read_failed"},
			{"DELETE", "/v1/webhooks/" + id, "webhook_delete_failed"},
		} {
			var body any
			if c.method == "POST" && c.path == "/v1/webhooks" {
				body = map[string]any{"url": rc.URL()}
			}
			a := e.do(c.method, c.path, key, body)
			e.want(a, 500, c.code)
			if strings.Contains(a.raw, "injected") {
				t.Fatalf("%s %s carries the store's error: %s", c.method, c.path, a.raw)
			}
		}
		down.Store(false)
		list := e.do("GET", "/v1/webhooks", key, nil)
		e.want(list, 200, "")
		if data, _ := list.body["data"].([]any); len(data) != 1 {
			t.Fatalf("after the store is back: %s", list.raw)
		}
		e.want(e.do("DELETE", "/v1/webhooks/"+id, key, nil), 200, "")
	})
}
