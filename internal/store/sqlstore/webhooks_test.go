package sqlstore_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/jobs"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
	"github.com/modelexec/modelexec/internal/store/storetest"
	"github.com/modelexec/modelexec/internal/webhooks"
	"github.com/modelexec/modelexec/internal/webhooks/webhookstest"
)

// The SQL webhooks stores pass the conformance suites the in-memory ones pass, on both
// dialects, so the delivery engine behaves the same over each. Proves, on SQL: WH-51 (durable
// rows, leases), WH-06 (not-dead limit), WH-10 (delete drops queued), WH-19/WH-14 (pending gets
// nothing), WH-21, WH-22, WH-23, WH-24 (release oldest first, paced), WH-49 (held_past_window).
// The key store suite: WH-42 (keys in the database, unique kid and switch instant).
func TestWH51_StoreConformanceSQLite(t *testing.T) {
	webhookstest.RunStoreSuite(t, func(t *testing.T) webhooks.Store { return sqlstore.Webhooks{DB: storetest.OpenSQLite(t)} })
}

func TestWH51_StoreConformancePostgres(t *testing.T) {
	webhookstest.RunStoreSuite(t, func(t *testing.T) webhooks.Store { return sqlstore.Webhooks{DB: storetest.OpenPostgres(t)} })
}

func TestWH42_KeyStoreConformanceSQLite(t *testing.T) {
	webhookstest.RunKeyStoreSuite(t, func(t *testing.T) webhooks.KeyStore { return sqlstore.WebhookKeys{DB: storetest.OpenSQLite(t)} })
}

func TestWH42_KeyStoreConformancePostgres(t *testing.T) {
	webhookstest.RunKeyStoreSuite(t, func(t *testing.T) webhooks.KeyStore { return sqlstore.WebhookKeys{DB: storetest.OpenPostgres(t)} })
}

var h0 = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

// The shared host gate pauses a host for an hour after the attempt or failure threshold
// within an hour, for every process on the database; old minutes fall out of the window.
func TestWH50_HostGateShared(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *sqlstore.DB) {
		ctx := context.Background()
		a := sqlstore.Webhooks{DB: db, HostMaxAttempts: 5, HostMaxFailures: 3}
		b := sqlstore.Webhooks{DB: db, HostMaxAttempts: 5, HostMaxFailures: 3} // another process
		for i := 0; i < 4; i++ {
			if _, err := recordHosts(ctx, a, h0.Add(time.Duration(i)*time.Minute), []webhooks.HostTally{{Host: "x.example", Attempts: 1}}); err != nil {
				t.Fatal(err)
			}
		}
		if u, err := hostPausedUntil(ctx, b, "x.example", h0.Add(5*time.Minute)); err != nil || !u.IsZero() {
			t.Fatalf("paused early: %v %v", u, err)
		}
		at := h0.Add(5 * time.Minute)
		// Attempts counted together: the answer says which hosts the count paused, in the
		// tallies' order.
		paused, err := recordHosts(ctx, b, at, []webhooks.HostTally{{Host: "x.example", Attempts: 1}, {Host: "calm.example", Attempts: 2}})
		if err != nil || len(paused) != 2 || !paused[0].Equal(at.Add(webhooks.HostPause)) || !paused[1].IsZero() {
			t.Fatalf("record: %v %v", paused, err)
		}
		if u, _ := hostPausedUntil(ctx, a, "x.example", at); !u.Equal(at.Add(webhooks.HostPause)) {
			t.Fatalf("not paused platform-wide: %v", u)
		}
		if again, _ := recordHosts(ctx, a, at.Add(time.Minute), []webhooks.HostTally{{Host: "x.example", Attempts: 1}}); !again[0].Equal(at.Add(webhooks.HostPause)) {
			t.Fatalf("a paused host's count answers %v", again)
		}
		if u, _ := hostPausedUntil(ctx, a, "other.example", at); !u.IsZero() {
			t.Fatal("another host paused")
		}
		if u, _ := hostPausedUntil(ctx, a, "x.example", at.Add(webhooks.HostPause)); !u.IsZero() {
			t.Fatal("pause outlived its hour")
		}
		// Failures: three within the hour pause; spread over more than an hour they do not.
		for i := 0; i < 3; i++ {
			if _, err := recordHosts(ctx, a, h0.Add(time.Duration(i)*40*time.Minute), []webhooks.HostTally{{Host: "f.example", Attempts: 1, Failures: 1}}); err != nil {
				t.Fatal(err)
			}
		}
		if u, _ := hostPausedUntil(ctx, a, "f.example", h0.Add(81*time.Minute)); !u.IsZero() {
			t.Fatal("failures older than an hour counted")
		}
		if _, err := recordHosts(ctx, a, h0.Add(82*time.Minute), []webhooks.HostTally{{Host: "f.example", Attempts: 1, Failures: 1}}); err != nil {
			t.Fatal(err)
		}
		if u, _ := hostPausedUntil(ctx, a, "f.example", h0.Add(82*time.Minute)); u.IsZero() {
			t.Fatal("three failures within the hour did not pause")
		}
	})
}

// The spec's figure: 100 failures within an hour pause the host (default thresholds).
func TestWH50_HostGateDefaultFailureThreshold(t *testing.T) {
	ctx := context.Background()
	g := sqlstore.Webhooks{DB: storetest.OpenSQLite(t)}
	for i := 0; i < webhooks.HostMaxFailuresPerHour; i++ {
		if u, _ := hostPausedUntil(ctx, g, "h.example", h0); !u.IsZero() {
			t.Fatalf("paused after %d failures", i)
		}
		if _, err := recordHosts(ctx, g, h0.Add(time.Duration(i)*time.Second), []webhooks.HostTally{{Host: "h.example", Attempts: 1, Failures: 1}}); err != nil {
			t.Fatal(err)
		}
	}
	if u, _ := hostPausedUntil(ctx, g, "h.example", h0.Add(2*time.Minute)); u.IsZero() {
		t.Fatal("100 failures did not pause")
	}
}

// The outbox view returns settled jobs' events oldest first until marked fanned out.
func TestWH28_OutboxPendingAndMark(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *sqlstore.DB) {
		ctx := context.Background()
		for i, id := range []string{"photo_a", "photo_b", "chat_c"} {
			product := "photo"
			if i == 2 {
				product = "chat"
			}
			err := db.InTx(ctx, func(tx *sqlstore.Tx) error {
				return tx.InsertEvent(ctx, jobs.Event{ID: "evt_" + id + "_succeeded", AccountID: "acc", JobID: id, RequestID: "req_" + id,
					Type: "job.succeeded", Product: product, Status: jobs.Succeeded, Charged: 3, Reserved: 4, Webhook: "https://cb.example/" + id,
					CreatedAt: h0.Add(time.Duration(i) * time.Second)})
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		o := sqlstore.WebhookOutbox{DB: db}
		evs, err := o.Pending(ctx, 2)
		if err != nil || len(evs) != 2 || evs[0].JobID != "photo_a" || evs[1].JobID != "photo_b" {
			t.Fatalf("pending %+v %v", evs, err)
		}
		e := evs[0]
		if e.Account != "acc" || e.Status != "succeeded" || e.Charged != 3 || e.Reserved != 4 || e.Webhook != "https://cb.example/photo_a" ||
			!e.CreatedAt.Equal(h0) || e.Type != "job.succeeded" || e.RequestID != "req_photo_a" {
			t.Fatalf("row %+v", e)
		}
		if err := o.MarkFannedOut(ctx, []int64{evs[0].Seq, evs[1].Seq}); err != nil {
			t.Fatal(err)
		}
		evs, _ = o.Pending(ctx, 10)
		if len(evs) != 1 || evs[0].JobID != "chat_c" {
			t.Fatalf("after mark %+v", evs)
		}
	})
}

// Concurrent sweeps claim disjoint rows (FOR UPDATE SKIP LOCKED on PostgreSQL, the write lock
// on SQLite): no delivery is sent twice by two engines sharing the database (WH-51).
func TestWH51_ConcurrentClaimsDisjoint(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *sqlstore.DB) {
		ctx := context.Background()
		s := sqlstore.Webhooks{DB: db}
		var news []webhooks.NewDelivery
		for i := 0; i < 60; i++ {
			id := "dlv_" + string(rune('A'+i/26)) + string(rune('a'+i%26))
			news = append(news, webhooks.NewDelivery{ID: id, Account: "acc", EventID: id, EventType: webhooks.EventJobSucceeded, URL: "https://cb.example/", Body: []byte("{}")})
		}
		if ids, err := s.EnqueueDeliveries(ctx, webhooks.EnqueueParams{Now: h0, Deliveries: news}); err != nil || len(ids) != 60 {
			t.Fatalf("enqueue %d %v", len(ids), err)
		}
		seen := make(chan string, 120)
		errs := make(chan error, 6)
		for w := 0; w < 6; w++ {
			go func() {
				got, err := s.ClaimDue(ctx, webhooks.ClaimParams{Now: h0, Limit: 15, LeaseUntil: h0.Add(time.Hour)})
				for _, d := range got {
					seen <- d.ID
				}
				errs <- err
			}()
		}
		for w := 0; w < 6; w++ {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		close(seen)
		count := map[string]int{}
		for id := range seen {
			count[id]++
			if count[id] > 1 {
				t.Fatalf("%s claimed twice", id)
			}
		}
		if len(count) != 60 {
			t.Fatalf("claimed %d of 60", len(count))
		}
	})
}

// The console's list of an endpoint's latest deliveries reads the recent index in order: no
// whole-table scan and no sort of the endpoint's history, on either database.
func TestWH51_RecentDeliveriesIndexed(t *testing.T) {
	for name, open := range map[string]func(testing.TB) *sqlstore.DB{"sqlite": storetest.OpenSQLite, "postgres": storetest.OpenPostgres} {
		t.Run(name, func(t *testing.T) {
			plan, err := open(t).Explain(context.Background(), "console: recent deliveries")
			if err != nil {
				t.Fatal(err)
			}
			joined := strings.Join(plan, "\n")
			if !strings.Contains(joined, "webhook_deliveries_recent") || strings.Contains(joined, "TEMP B-TREE") ||
				strings.Contains(joined, "Seq Scan") || strings.Contains(joined, "Sort") {
				t.Fatalf("plan does not read webhook_deliveries_recent in order:\n%s", joined)
			}
		})
	}
}

// hostPausedUntil answers when host's pause ends as a sweep reads it (SweepState), or the zero
// time when it is not paused at now.
func hostPausedUntil(ctx context.Context, s sqlstore.Webhooks, host string, now time.Time) (time.Time, error) {
	st, err := s.SweepState(ctx, nil, now)
	return st.Paused[host], err
}

// recordHosts counts tallies at now as a batch of attempts does, and answers their pauses.
func recordHosts(ctx context.Context, s sqlstore.Webhooks, now time.Time, tallies []webhooks.HostTally) ([]time.Time, error) {
	got, err := s.RecordAttempts(ctx, webhooks.AttemptBatch{Now: now, Hosts: tallies})
	return got.HostPausedUntil, err
}
