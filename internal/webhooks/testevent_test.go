package webhooks

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

// Proves WH-35 and WH-39 for the console's test event: it is delivered through the engine with
// the same headers and signature as a job event, carries its own type, is recorded as a
// delivery listed newest first, and goes only to the account's own active endpoint.
func TestWH35_TestEventSignedAndRecorded(t *testing.T) {
	h := newHarness(t)
	ep := h.register("acc_1")
	// A backlog of the endpoint is not what the test event sends.
	h.rcv.setStatus(500)
	if _, err := h.svc.Notify(h.ctx, jobEvent("acc_1", "photo_k1", "photo", JobSucceeded)); err != nil {
		t.Fatal(err)
	}
	h.rcv.setStatus(200)
	h.clock.Advance(time.Second)
	d, err := h.svc.SendTest(h.ctx, "acc_1", ep.ID)
	if err != nil {
		t.Fatal(err)
	}
	if d.Status != DeliveryDelivered || d.Attempts != 1 || d.LastStatusCode == nil || *d.LastStatusCode != 200 || d.EventType != EventTest {
		t.Fatalf("delivery %+v", d)
	}
	evs := h.rcv.events()
	if len(evs) != 1 {
		t.Fatalf("%d events received, want the test event only", len(evs))
	}
	r := evs[0]
	if r.Header.Get(HeaderEvent) != EventTest || r.Header.Get(HeaderDelivery) != d.ID || r.Header.Get(HeaderAttempt) != "1" ||
		r.Header.Get(HeaderAltUserID) != "acc_1" || r.Header.Get(HeaderAltSignature) == "" {
		t.Fatalf("headers %v", r.Header)
	}
	if err := VerifyV2(r.Header.Get(HeaderSignature), r.Body, h.publicKeys(), h.clock.Now(), 5*time.Minute); err != nil {
		t.Fatalf("signature: %v", err)
	}
	var env TestEnvelope
	if err := json.Unmarshal(r.Body, &env); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(env.ID, "evt_test_") || env.Type != EventTest || env.Account != "acc_1" || env.WebhookID == nil ||
		*env.WebhookID != ep.ID || env.Data.WebhookID != ep.ID || env.Data.Message == "" {
		t.Fatalf("envelope %s", r.Body)
	}
	recent, err := h.svc.RecentDeliveries(h.ctx, "acc_1", ep.ID, 10)
	if err != nil || len(recent) != 2 || recent[0].ID != d.ID || recent[1].EventType != EventJobSucceeded {
		t.Fatalf("recent %+v %v", recent, err)
	}
	if _, err := h.svc.RecentDeliveries(h.ctx, "acc_2", ep.ID, 10); !errors.Is(err, ErrNotFound) {
		t.Fatalf("another account's deliveries: %v", err)
	}
	if _, err := h.svc.SendTest(h.ctx, "acc_2", ep.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("another account's endpoint: %v", err)
	}
	h.rcv.setEcho(false)
	pending := h.register("acc_1")
	if _, err := h.svc.SendTest(h.ctx, "acc_1", pending.ID); !errors.Is(err, ErrNotActive) {
		t.Fatalf("pending endpoint: %v", err)
	}
}
