// Package webhookstest holds the conformance suite every webhooks.Store and webhooks.KeyStore
// implementation must pass (MemStore here, the SQL stores in their adapters), so that the
// delivery engine behaves the same over each. It imports only the webhooks package and testing.
package webhookstest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/webhooks"
)

var t0 = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

// RunStoreSuite runs the Store conformance suite; newStore returns an empty store per call.
func RunStoreSuite(t *testing.T, newStore func(t *testing.T) webhooks.Store) {
	ctx := context.Background()
	create := func(t *testing.T, s webhooks.Store, id, account string) webhooks.Endpoint {
		t.Helper()
		e, err := s.CreateEndpoint(ctx, webhooks.CreateEndpointParams{ID: id, Account: account, URL: "https://example.com/" + id, Now: t0, MaxNotDead: 5})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	activate := func(t *testing.T, s webhooks.Store, id string) {
		t.Helper()
		if _, err := s.RecordChallenge(ctx, webhooks.RecordChallengeParams{EndpointID: id, Now: t0, Passed: true, RetainFrom: t0.Add(-72 * time.Hour), ReleaseSpacing: 3 * time.Second}); err != nil {
			t.Fatal(err)
		}
	}
	enqueue := func(t *testing.T, s webhooks.Store, at time.Time, endpointID, event string) []string {
		t.Helper()
		ids, err := s.EnqueueDeliveries(ctx, webhooks.EnqueueParams{Now: at, Deliveries: []webhooks.NewDelivery{{
			ID: webhooks.DeliveryID(endpointID, event), EndpointID: endpointID, Account: "acc", EventID: event,
			EventType: webhooks.EventJobSucceeded, JobID: event, Body: []byte(`{"id":"` + event + `"}`)}}})
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}

	t.Run("CreateGetListLimit", func(t *testing.T) {
		s := newStore(t)
		e := create(t, s, "wh_1", "acc")
		if e.Status != webhooks.StatusPending || e.Verified || !e.CreatedAt.Equal(t0) || e.Products != nil {
			t.Fatalf("created %+v", e)
		}
		if _, err := s.GetEndpoint(ctx, "wh_missing"); !errors.Is(err, webhooks.ErrNotFound) {
			t.Fatalf("missing: %v", err)
		}
		for i := 2; i <= 5; i++ {
			create(t, s, "wh_"+string(rune('0'+i)), "acc")
		}
		if _, err := s.CreateEndpoint(ctx, webhooks.CreateEndpointParams{ID: "wh_6", Account: "acc", URL: "https://example.com/", Now: t0, MaxNotDead: 5}); !errors.Is(err, webhooks.ErrTooManyWebhooks) {
			t.Fatalf("sixth: %v", err)
		}
		create(t, s, "wh_other", "acc2")
		list, err := s.ListEndpoints(ctx, "acc")
		if err != nil || len(list) != 5 {
			t.Fatalf("list %d %v", len(list), err)
		}
	})

	t.Run("ChallengeFailKeepsStatus", func(t *testing.T) {
		s := newStore(t)
		create(t, s, "wh_1", "acc")
		code := 200
		rec, err := s.RecordChallenge(ctx, webhooks.RecordChallengeParams{EndpointID: "wh_1", Now: t0, Passed: false,
			Verification: &webhooks.Verification{Reason: "nonce_not_echoed", StatusCode: &code, Body: "x", CheckedAt: t0}})
		if err != nil || rec.Endpoint.Status != webhooks.StatusPending || rec.Endpoint.Verification == nil || rec.Endpoint.Verification.Reason != "nonce_not_echoed" {
			t.Fatalf("%+v %v", rec, err)
		}
		activate(t, s, "wh_1")
		e, _ := s.GetEndpoint(ctx, "wh_1")
		if e.Status != webhooks.StatusActive || !e.Verified || e.VerifiedAt == nil || e.Verification != nil {
			t.Fatalf("after pass %+v", e)
		}
	})

	t.Run("EnqueueByEndpointStatusAndIdempotent", func(t *testing.T) {
		s := newStore(t)
		create(t, s, "wh_p", "acc")
		if ids := enqueue(t, s, t0, "wh_p", "evt_1"); len(ids) != 0 {
			t.Fatal("pending endpoint got a delivery")
		}
		create(t, s, "wh_a", "acc")
		activate(t, s, "wh_a")
		if ids := enqueue(t, s, t0, "wh_a", "evt_1"); len(ids) != 1 {
			t.Fatal("active endpoint got no delivery")
		}
		if ids := enqueue(t, s, t0, "wh_a", "evt_1"); len(ids) != 0 {
			t.Fatal("duplicate inserted")
		}
		d, err := s.GetDelivery(ctx, webhooks.DeliveryID("wh_a", "evt_1"))
		if err != nil || d.Status != webhooks.DeliveryScheduled || !d.NextAttemptAt.Equal(t0) || !d.CreatedAt.Equal(t0) || string(d.Body) != `{"id":"evt_1"}` {
			t.Fatalf("delivery %+v %v", d, err)
		}
		ids, _ := s.EnqueueDeliveries(ctx, webhooks.EnqueueParams{Now: t0, Deliveries: []webhooks.NewDelivery{{ID: "dlv_req", Account: "acc", EventID: "evt_1", URL: "https://example.com/cb", Body: []byte("{}")}}})
		if len(ids) != 1 {
			t.Fatal("per-request delivery not inserted")
		}
	})

	t.Run("ClaimLeaseAndPerEndpointCap", func(t *testing.T) {
		s := newStore(t)
		create(t, s, "wh_a", "acc")
		activate(t, s, "wh_a")
		for i := 0; i < 5; i++ {
			enqueue(t, s, t0.Add(time.Duration(i)*time.Second), "wh_a", "evt_"+string(rune('a'+i)))
		}
		now := t0.Add(time.Minute)
		got, err := s.ClaimDue(ctx, webhooks.ClaimParams{Now: now, Limit: 10, PerEndpoint: 3, LeaseUntil: now.Add(time.Hour)})
		if err != nil || len(got) != 3 || got[0].EventID != "evt_a" || got[2].EventID != "evt_c" {
			t.Fatalf("claimed %+v %v", got, err)
		}
		again, _ := s.ClaimDue(ctx, webhooks.ClaimParams{Now: now, Limit: 10, PerEndpoint: 3, LeaseUntil: now.Add(time.Hour)})
		if len(again) != 2 {
			t.Fatalf("leased rows claimed twice: %d", len(again))
		}
		later, _ := s.ClaimDue(ctx, webhooks.ClaimParams{Now: now.Add(time.Hour), Limit: 10, PerEndpoint: 10, LeaseUntil: now.Add(2 * time.Hour)})
		if len(later) != 5 {
			t.Fatalf("expired leases: %d", len(later))
		}
	})

	t.Run("AttemptDisableHoldAndRelease", func(t *testing.T) {
		s := newStore(t)
		create(t, s, "wh_a", "acc")
		activate(t, s, "wh_a")
		enqueue(t, s, t0, "wh_a", "evt_x")
		enqueue(t, s, t0.Add(time.Second), "wh_a", "evt_y")
		code := 500
		var e webhooks.Endpoint
		for i := 0; i < 3; i++ {
			var err error
			e, err = recordOne(t, s, webhooks.AttemptParams{DeliveryID: webhooks.DeliveryID("wh_a", "evt_x"), EndpointID: "wh_a", Now: t0,
				Attempted: true, StatusCode: &code, Status: webhooks.DeliveryScheduled, NextAttemptAt: t0.Add(5 * time.Minute),
				Effect: webhooks.EffectFailure, DisableAfter: 3})
			if err != nil {
				t.Fatal(err)
			}
		}
		if e.Status != webhooks.StatusDisabled || e.DisabledReason != webhooks.ReasonTooManyFailures || e.ConsecutiveFailures != 3 {
			t.Fatalf("endpoint %+v", e)
		}
		ds, _ := s.ListDeliveries(ctx, webhooks.ListDeliveriesParams{EndpointID: "wh_a"})
		for _, d := range ds {
			if d.Status != webhooks.DeliveryHeld {
				t.Fatalf("not held on disable: %+v", d)
			}
		}
		if ds[0].Attempts != 3 || *ds[0].LastStatusCode != 500 {
			t.Fatalf("attempts %+v", ds[0])
		}
		if ids := enqueue(t, s, t0.Add(2*time.Second), "wh_a", "evt_z"); len(ids) != 1 {
			t.Fatal("disabled endpoint must queue")
		}
		d, _ := s.GetDelivery(ctx, webhooks.DeliveryID("wh_a", "evt_z"))
		if d.Status != webhooks.DeliveryHeld {
			t.Fatalf("queued as %s", d.Status)
		}
		at := t0.Add(time.Hour)
		rec, err := s.RecordChallenge(ctx, webhooks.RecordChallengeParams{EndpointID: "wh_a", Now: at, Passed: true, RetainFrom: t0.Add(time.Second / 2), ReleaseSpacing: 3 * time.Second})
		if err != nil || rec.Released != 2 || rec.Expired != 1 || rec.Endpoint.ConsecutiveFailures != 0 || rec.Endpoint.DisabledReason != "" {
			t.Fatalf("release %+v %v", rec, err)
		}
		y, _ := s.GetDelivery(ctx, webhooks.DeliveryID("wh_a", "evt_y"))
		x, _ := s.GetDelivery(ctx, webhooks.DeliveryID("wh_a", "evt_x"))
		if !y.NextAttemptAt.Equal(at) || y.Status != webhooks.DeliveryScheduled || x.CloseReason != webhooks.CloseHeldPastWindow {
			t.Fatalf("x %+v y %+v", x, y)
		}
		// 410: dead at once, waiting rows held.
		e, _ = recordOne(t, s, webhooks.AttemptParams{DeliveryID: y.ID, EndpointID: "wh_a", Now: at, Attempted: true, StatusCode: ptr(410),
			Status: webhooks.DeliveryFailed, CloseReason: webhooks.CloseEndpointGone, Effect: webhooks.EffectGone, DisableAfter: 10})
		if e.Status != webhooks.StatusDead || e.DeadAt == nil || e.DisabledReason != webhooks.ReasonEndpointGone {
			t.Fatalf("dead %+v", e)
		}
		if z, _ := s.GetDelivery(ctx, webhooks.DeliveryID("wh_a", "evt_z")); z.Status != webhooks.DeliveryHeld {
			t.Fatalf("z %+v", z)
		}
		if ids := enqueue(t, s, at, "wh_a", "evt_new"); len(ids) != 0 {
			t.Fatal("dead endpoint queued")
		}
		// A pass that would bring it back beside five not dead is refused; it stays dead.
		for _, id := range []string{"wh_l1", "wh_l2", "wh_l3", "wh_l4", "wh_l5"} {
			create(t, s, id, "acc")
		}
		if _, err := s.RecordChallenge(ctx, webhooks.RecordChallengeParams{EndpointID: "wh_a", Now: at, Passed: true, MaxNotDead: 5}); !errors.Is(err, webhooks.ErrTooManyWebhooks) {
			t.Fatalf("a sixth brought back: %v", err)
		}
		if e, _ := s.GetEndpoint(ctx, "wh_a"); e.Status != webhooks.StatusDead {
			t.Fatalf("refused pass left %+v", e)
		}
		// Success clears the counter.
		activate(t, s, "wh_a")
		e, _ = recordOne(t, s, webhooks.AttemptParams{DeliveryID: webhooks.DeliveryID("wh_a", "evt_z"), EndpointID: "wh_a", Now: at, Attempted: true,
			StatusCode: ptr(200), Status: webhooks.DeliveryDelivered, Effect: webhooks.EffectSuccess})
		if e.ConsecutiveFailures != 0 || e.LastSuccessAt == nil {
			t.Fatalf("success %+v", e)
		}
	})

	t.Run("AttemptsTogether", func(t *testing.T) {
		// One transaction of several records: each applies in order over what the ones before
		// it left, and a delivery deleted meanwhile is answered Gone without failing the rest.
		s := newStore(t)
		create(t, s, "wh_a", "acc")
		activate(t, s, "wh_a")
		enqueue(t, s, t0, "wh_a", "evt_1")
		enqueue(t, s, t0.Add(time.Second), "wh_a", "evt_2")
		enqueue(t, s, t0.Add(2*time.Second), "wh_a", "evt_3")
		fail := func(evt string) webhooks.AttemptParams {
			return webhooks.AttemptParams{DeliveryID: webhooks.DeliveryID("wh_a", evt), EndpointID: "wh_a", Now: t0, Attempted: true, StatusCode: ptr(503),
				Status: webhooks.DeliveryScheduled, NextAttemptAt: t0.Add(5 * time.Minute), Effect: webhooks.EffectFailure, DisableAfter: 2}
		}
		batch, err := s.RecordAttempts(ctx, webhooks.AttemptBatch{Now: t0, Attempts: []webhooks.AttemptParams{fail("evt_1"),
			{DeliveryID: "dlv_missing", EndpointID: "wh_a", Now: t0, Status: webhooks.DeliveryScheduled, NextAttemptAt: t0}, fail("evt_2")},
			Hosts: []webhooks.HostTally{{Host: "hooks.example", Attempts: 2, Failures: 2}}})
		got := batch.Attempts
		if err != nil || len(got) != 3 || len(batch.HostPausedUntil) != 1 || !batch.HostPausedUntil[0].IsZero() {
			t.Fatalf("records %+v %v", batch, err)
		}
		if got[0].Gone || got[0].Endpoint.ConsecutiveFailures != 1 || got[0].Endpoint.Status != webhooks.StatusActive {
			t.Fatalf("first %+v", got[0])
		}
		if !got[1].Gone {
			t.Fatalf("missing delivery %+v", got[1])
		}
		if got[2].Endpoint.ConsecutiveFailures != 2 || got[2].Endpoint.Status != webhooks.StatusDisabled {
			t.Fatalf("second %+v", got[2])
		}
		for _, evt := range []string{"evt_1", "evt_2", "evt_3"} {
			if d, _ := s.GetDelivery(ctx, webhooks.DeliveryID("wh_a", evt)); d.Status != webhooks.DeliveryHeld {
				t.Fatalf("%s %s after the endpoint was disabled", evt, d.Status)
			}
		}
		if e, _ := s.GetEndpoint(ctx, "wh_a"); e.ConsecutiveFailures != 2 || e.Status != webhooks.StatusDisabled {
			t.Fatalf("stored %+v", e)
		}
	})

	t.Run("SweepState", func(t *testing.T) {
		// A sweep starts from the endpoints it claimed for (a deleted one is absent) and the
		// hosts paused now: a host reaching 2,000 attempts within the hour is paused for one.
		s := newStore(t)
		create(t, s, "wh_a", "acc")
		create(t, s, "wh_b", "acc")
		got, err := s.RecordAttempts(ctx, webhooks.AttemptBatch{Now: t0, Hosts: []webhooks.HostTally{
			{Host: "busy.example", Attempts: webhooks.HostMaxDeliveriesPerHour}, {Host: "calm.example", Attempts: 3}}})
		if err != nil || !got.HostPausedUntil[0].Equal(t0.Add(webhooks.HostPause)) || !got.HostPausedUntil[1].IsZero() {
			t.Fatalf("counts %+v %v", got, err)
		}
		st, err := s.SweepState(ctx, []string{"wh_a", "wh_b", "wh_gone"}, t0.Add(time.Minute))
		if err != nil || len(st.Endpoints) != 2 || st.Endpoints["wh_b"].Account != "acc" {
			t.Fatalf("endpoints %+v %v", st.Endpoints, err)
		}
		if len(st.Paused) != 1 || !st.Paused["busy.example"].Equal(t0.Add(webhooks.HostPause)) {
			t.Fatalf("paused %+v", st.Paused)
		}
		if later, _ := s.SweepState(ctx, nil, t0.Add(webhooks.HostPause)); len(later.Paused) != 0 {
			t.Fatalf("a pause outlived its hour: %+v", later.Paused)
		}
	})

	t.Run("PauseDoesNotCount", func(t *testing.T) {
		s := newStore(t)
		create(t, s, "wh_a", "acc")
		activate(t, s, "wh_a")
		enqueue(t, s, t0, "wh_a", "evt_p")
		id := webhooks.DeliveryID("wh_a", "evt_p")
		e, err := recordOne(t, s, webhooks.AttemptParams{DeliveryID: id, EndpointID: "wh_a", Now: t0, Status: webhooks.DeliveryScheduled, NextAttemptAt: t0.Add(time.Hour)})
		d, _ := s.GetDelivery(ctx, id)
		if err != nil || e.ConsecutiveFailures != 0 || d.Attempts != 0 || d.LastAttemptAt != nil || !d.NextAttemptAt.Equal(t0.Add(time.Hour)) {
			t.Fatalf("pause %+v %+v %v", e, d, err)
		}
	})

	t.Run("ExpireAndDelete", func(t *testing.T) {
		s := newStore(t)
		create(t, s, "wh_a", "acc")
		activate(t, s, "wh_a")
		enqueue(t, s, t0, "wh_a", "evt_old")
		enqueue(t, s, t0.Add(2*time.Hour), "wh_a", "evt_new")
		n, err := s.ExpireOld(ctx, webhooks.ExpireParams{Now: t0.Add(73 * time.Hour), CreatedBefore: t0.Add(time.Hour)})
		if err != nil || n != 1 {
			t.Fatalf("expired %d %v", n, err)
		}
		existed, err := s.DeleteEndpoint(ctx, "other", "wh_a")
		if existed || err != nil {
			t.Fatal("deleted across accounts")
		}
		existed, err = s.DeleteEndpoint(ctx, "acc", "wh_a")
		if !existed || err != nil {
			t.Fatal("not deleted")
		}
		if _, err := s.GetDelivery(ctx, webhooks.DeliveryID("wh_a", "evt_new")); !errors.Is(err, webhooks.ErrNotFound) {
			t.Fatalf("queued delivery kept: %v", err)
		}
		if existed, _ := s.DeleteEndpoint(ctx, "acc", "wh_a"); existed {
			t.Fatal("existed twice")
		}
	})

	t.Run("RecentNewestFirstBoundedAndClaimOne", func(t *testing.T) {
		s := newStore(t)
		create(t, s, "wh_a", "acc")
		activate(t, s, "wh_a")
		create(t, s, "wh_b", "acc")
		activate(t, s, "wh_b")
		for i := range 5 {
			enqueue(t, s, t0.Add(time.Duration(i)*time.Minute), "wh_a", "evt_"+string(rune('a'+i)))
		}
		enqueue(t, s, t0.Add(10*time.Minute), "wh_b", "evt_b")
		got, err := s.RecentDeliveries(ctx, "wh_a", 3)
		if err != nil || len(got) != 3 {
			t.Fatalf("recent %v %v", got, err)
		}
		for i, want := range []string{"evt_e", "evt_d", "evt_c"} {
			if got[i].EventID != want || got[i].EndpointID != "wh_a" {
				t.Fatalf("recent[%d] = %s of %s, want %s", i, got[i].EventID, got[i].EndpointID, want)
			}
		}
		if none, err := s.RecentDeliveries(ctx, "wh_none", 3); err != nil || len(none) != 0 {
			t.Fatalf("unknown endpoint: %v %v", none, err)
		}
		// A claim naming one delivery takes that row only, even behind older due rows.
		one := webhooks.DeliveryID("wh_a", "evt_d")
		claimed, err := s.ClaimDue(ctx, webhooks.ClaimParams{Now: t0.Add(time.Hour), Limit: 1, DeliveryID: one, LeaseUntil: t0.Add(2 * time.Hour)})
		if err != nil || len(claimed) != 1 || claimed[0].ID != one {
			t.Fatalf("claim one: %v %v", claimed, err)
		}
		again, err := s.ClaimDue(ctx, webhooks.ClaimParams{Now: t0.Add(time.Hour), Limit: 1, DeliveryID: one, LeaseUntil: t0.Add(2 * time.Hour)})
		if err != nil || len(again) != 0 {
			t.Fatalf("leased row claimed again: %v %v", again, err)
		}
	})
}

func ptr[T any](v T) *T { return &v }

// RunKeyStoreSuite runs the KeyStore conformance suite.
func RunKeyStoreSuite(t *testing.T, newStore func(t *testing.T) webhooks.KeyStore) {
	ctx := context.Background()
	s := newStore(t)
	k := webhooks.StoredKey{KID: "kid1", Sealed: []byte{1, 2, 3}, PublishAt: t0, ActiveFrom: t0, CreatedAt: t0}
	if err := s.InsertSigningKey(ctx, k); err != nil {
		t.Fatal(err)
	}
	if err := s.InsertSigningKey(ctx, k); !errors.Is(err, webhooks.ErrDuplicate) {
		t.Fatalf("same kid: %v", err)
	}
	if err := s.InsertSigningKey(ctx, webhooks.StoredKey{KID: "kid2", Sealed: []byte{4}, PublishAt: t0, ActiveFrom: t0, CreatedAt: t0}); !errors.Is(err, webhooks.ErrDuplicate) {
		t.Fatalf("same active_from: %v", err)
	}
	if err := s.InsertSigningKey(ctx, webhooks.StoredKey{KID: "kid2", Sealed: []byte{4}, PublishAt: t0, ActiveFrom: t0.Add(time.Hour), CreatedAt: t0}); err != nil {
		t.Fatal(err)
	}
	ks, err := s.ListSigningKeys(ctx)
	if err != nil || len(ks) != 2 {
		t.Fatalf("list %v %v", ks, err)
	}
	if err := s.DeleteSigningKey(ctx, "kid1"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteSigningKey(ctx, "kid1"); err != nil {
		t.Fatal("deleting a missing key is no error")
	}
	ks, _ = s.ListSigningKeys(ctx)
	if len(ks) != 1 || ks[0].KID != "kid2" || !ks[0].ActiveFrom.Equal(t0.Add(time.Hour)) || string(ks[0].Sealed) != "\x04" {
		t.Fatalf("after delete %+v", ks)
	}
}

// recordOne records one attempt alone and answers its endpoint after the change.
func recordOne(t testing.TB, s webhooks.Store, p webhooks.AttemptParams) (webhooks.Endpoint, error) {
	t.Helper()
	got, err := s.RecordAttempts(context.Background(), webhooks.AttemptBatch{Now: p.Now, Attempts: []webhooks.AttemptParams{p}})
	if err != nil {
		return webhooks.Endpoint{}, err
	}
	if got.Attempts[0].Gone {
		return webhooks.Endpoint{}, webhooks.ErrNotFound
	}
	return got.Attempts[0].Endpoint, nil
}
