package webhooks

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

func (h *harness) notify(ev JobEvent) []string {
	h.t.Helper()
	ids, err := h.svc.Notify(h.ctx, ev)
	if err != nil {
		h.t.Fatal(err)
	}
	return ids
}

// sweepEvery runs sweeps from `from` every 5 minutes while before `until`.
func (h *harness) sweepEvery(from, until time.Time) {
	for at := from; at.Before(until); at = at.Add(DefaultSweepInterval) {
		h.sweep(at)
	}
}

func eventIDOf(t *testing.T, r received) string {
	var env struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(r.Body, &env); err != nil {
		t.Fatal(err)
	}
	return env.ID
}

// Proves WH-47, WH-48, WH-51 (Svc-Delivery stable): a receiver failing 503 gets seven
// attempts on the ladder, each gap at least its floor and within one sweep of it.
func TestWH47_WH48_LadderWalk(t *testing.T) {
	h := newHarness(t)
	ep := h.register("acc_1")
	h.rcv.setStatus(503)
	h.notify(jobEvent("acc_1", "photo_k1", "photo", JobFailed))
	h.sweepEvery(t0, t0.Add(48*time.Hour))
	evs := h.rcv.events()
	if len(evs) != MaxAttempts {
		t.Fatalf("%d attempts, want 7", len(evs))
	}
	for i, ev := range evs {
		if ev.Header.Get(HeaderAttempt) != strconv.Itoa(i+1) || ev.Header.Get(HeaderDelivery) != evs[0].Header.Get(HeaderDelivery) {
			t.Errorf("attempt %d headers %v", i+1, ev.Header)
		}
		if i == 0 {
			if !ev.At.Equal(t0) {
				t.Errorf("first attempt at %v", ev.At)
			}
			continue
		}
		gap, floor := ev.At.Sub(evs[i-1].At), Ladder[i-1]
		if gap < floor || gap > floor+DefaultSweepInterval {
			t.Errorf("gap before attempt %d = %v, floor %v", i+1, gap, floor)
		}
	}
	if total := evs[6].At.Sub(evs[0].At); total < 36*time.Hour+20*time.Minute || total > 36*time.Hour+50*time.Minute {
		t.Errorf("ladder spans %v, want about 36h20m", total)
	}
	d, _ := h.store.GetDelivery(h.ctx, evs[0].Header.Get(HeaderDelivery))
	if d.Status != DeliveryFailed || d.CloseReason != CloseAttemptsExhausted || d.Attempts != 7 || *d.LastStatusCode != 503 {
		t.Fatalf("delivery %+v", d)
	}
	if e := h.endpoint(ep.ID); e.ConsecutiveFailures != 7 || e.Status != StatusActive || *e.LastStatusCode != 503 || e.LastFailureAt == nil {
		t.Fatalf("endpoint %+v", e)
	}
}

// Proves WH-47 (about 20% jitter): gaps grow by at most 20% and never shrink.
func TestWH47_Jitter(t *testing.T) {
	for n := 1; n < MaxAttempts; n++ {
		lo, _ := RetryGap(n, 0)
		hi, _ := RetryGap(n, 0.999999)
		if lo != Ladder[n-1] || hi < Ladder[n-1]*119/100 || hi > Ladder[n-1]*120/100 {
			t.Errorf("attempt %d: gaps %v..%v", n, lo, hi)
		}
	}
	if _, ok := RetryGap(MaxAttempts, 0); ok {
		t.Error("no gap after the seventh attempt")
	}
	h := newHarness(t, func(c *Config) { c.Jitter = func() float64 { return 0.5 } })
	h.register("acc_1")
	h.rcv.setStatus(500)
	h.notify(jobEvent("acc_1", "photo_k1", "photo", JobSucceeded))
	h.sweep(t0)
	d, _ := h.store.ListDeliveries(h.ctx, ListDeliveriesParams{Account: "acc_1"})
	if want := t0.Add(5*time.Minute + 30*time.Second); !d[0].NextAttemptAt.Equal(want) {
		t.Fatalf("next attempt %v, want %v", d[0].NextAttemptAt, want)
	}
}

// Proves WH-46, WH-45 (3xx is a failure, never followed): a 4xx other than 408/429 stops
// retries and still counts; 408, 429, 5xx and 3xx retry.
func TestWH46_WH45_AnswerClasses(t *testing.T) {
	cases := []struct {
		code      int
		status    DeliveryStatus
		requests  int
		failCount int
	}{
		{200, DeliveryDelivered, 1, 0},
		{204, DeliveryDelivered, 1, 0},
		{400, DeliveryFailed, 1, 1},
		{401, DeliveryFailed, 1, 1},
		{404, DeliveryFailed, 1, 1},
		{422, DeliveryFailed, 1, 1},
		{408, DeliveryScheduled, 1, 1},
		{429, DeliveryScheduled, 1, 1},
		{500, DeliveryScheduled, 1, 1},
		{503, DeliveryScheduled, 1, 1},
		{302, DeliveryScheduled, 1, 1},
		{307, DeliveryScheduled, 1, 1},
	}
	for _, c := range cases {
		t.Run(strconv.Itoa(c.code), func(t *testing.T) {
			h := newHarness(t)
			ep := h.register("acc_1")
			h.rcv.answer = func(r *http.Request, _ []byte) (int, string) {
				if r.Header.Get(HeaderEvent) == EventChallenge {
					return 500, ""
				}
				return c.code, ""
			}
			if c.code >= 300 && c.code < 400 {
				h.rcv.answer = func(r *http.Request, _ []byte) (int, string) { return c.code, "" }
				// Redirect to the receiver itself: following it would show a second request.
				h.rcv.srv.Config.Handler = redirectTo(h.rcv, c.code)
			}
			h.notify(jobEvent("acc_1", "photo_k1", "photo", JobSucceeded))
			h.sweep(t0)
			if n := len(h.rcv.events()); n != c.requests {
				t.Fatalf("%d requests", n)
			}
			d, _ := h.store.GetDelivery(h.ctx, DeliveryID(ep.ID, "evt_photo_k1_succeeded"))
			if d.Status != c.status {
				t.Fatalf("status %s (%s)", d.Status, d.CloseReason)
			}
			if c.status == DeliveryFailed && d.CloseReason != CloseRejected {
				t.Fatalf("close reason %s", d.CloseReason)
			}
			if e := h.endpoint(ep.ID); e.ConsecutiveFailures != c.failCount {
				t.Fatalf("consecutive failures %d", e.ConsecutiveFailures)
			}
		})
	}
}

func redirectTo(rc *receiver, code int) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc.mu.Lock()
		rc.reqs = append(rc.reqs, received{Header: r.Header.Clone(), At: rc.clock.Now()})
		rc.mu.Unlock()
		http.Redirect(w, r, rc.srv.URL+"/elsewhere", code)
	})
}

// Proves WH-45, LIM-17: at most 2 KB of the answer is read; the client's limits are 5 s / 10 s.
func TestWH45_ReadLimitAndTimeouts(t *testing.T) {
	h := newHarness(t)
	h.rcv.answer = func(*http.Request, []byte) (int, string) { return 200, strings.Repeat("z", 64<<10) }
	ans := h.sender.Post(h.ctx, h.rcv.URL(), http.Header{}, []byte(`{}`))
	if ans.StatusCode != 200 || len(ans.Body) != MaxAnswerRead {
		t.Fatalf("read %d bytes", len(ans.Body))
	}
	if h.sender.client.Timeout != 10*time.Second || ConnectTimeout != 5*time.Second {
		t.Fatalf("timeouts %v %v", h.sender.client.Timeout, ConnectTimeout)
	}
	tr := h.sender.client.Transport.(*http.Transport)
	if tr.Proxy != nil || tr.TLSHandshakeTimeout != 5*time.Second {
		t.Fatal("transport must not use a proxy and must bound the handshake")
	}
	// A receiver slower than the total timeout fails as a timeout (context-bounded here so the
	// test does not wait ten real seconds).
	block := make(chan struct{})
	t.Cleanup(func() { close(block) })
	h.rcv.answer = func(*http.Request, []byte) (int, string) { <-block; return 200, "" }
	ctx, cancel := context.WithTimeout(h.ctx, 50*time.Millisecond)
	defer cancel()
	if ans := h.sender.Post(ctx, h.rcv.URL(), http.Header{}, nil); ans.Failure != FailTimeout {
		t.Fatalf("slow receiver: %+v", ans)
	}
}

// Proves WH-21, WH-22: ten consecutive failures disable the endpoint and new events queue
// (held, not sent); one success before that clears the counter.
func TestWH21_WH22_DisableAfterTenFailures(t *testing.T) {
	h := newHarness(t)
	ep := h.register("acc_1")
	h.rcv.setStatus(500)
	for i := 0; i < 9; i++ {
		h.notify(jobEvent("acc_1", fmt.Sprintf("photo_a%d", i), "photo", JobSucceeded))
	}
	h.sweep(t0)
	if e := h.endpoint(ep.ID); e.ConsecutiveFailures != 9 || e.Status != StatusActive {
		t.Fatalf("after nine: %+v", e)
	}
	h.rcv.setStatus(200)
	h.notify(jobEvent("acc_1", "photo_ok", "photo", JobSucceeded))
	h.clock.Set(t0.Add(time.Minute))
	h.sweep(t0.Add(time.Minute))
	e := h.endpoint(ep.ID)
	if e.ConsecutiveFailures != 0 || e.LastSuccessAt == nil || *e.LastStatusCode != 200 {
		t.Fatalf("success must clear the counter: %+v", e)
	}
	// The nine retries come due at +5 min and succeed.
	h.rcv.setStatus(500)
	for i := 0; i < 10; i++ {
		h.notify(jobEvent("acc_1", fmt.Sprintf("photo_b%d", i), "photo", JobSucceeded))
	}
	h.sweep(t0.Add(2 * time.Minute))
	e = h.endpoint(ep.ID)
	if e.Status != StatusDisabled || e.DisabledReason != ReasonTooManyFailures || e.ConsecutiveFailures != 10 {
		t.Fatalf("after ten: %+v", e)
	}
	if r := h.svc.Record(e); r.DisabledReason == nil || *r.DisabledReason != "too_many_failures" {
		t.Fatalf("record %+v", r)
	}
	sent := len(h.rcv.events())
	ids := h.notify(jobEvent("acc_1", "photo_new", "photo", JobSucceeded))
	d, _ := h.store.GetDelivery(h.ctx, ids[0])
	if d.Status != DeliveryHeld {
		t.Fatalf("new event on a disabled endpoint: %s", d.Status)
	}
	h.sweepEvery(t0.Add(5*time.Minute), t0.Add(3*time.Hour))
	if n := len(h.rcv.events()); n != sent {
		t.Fatalf("disabled endpoint received %d more", n-sent)
	}
	ds, _ := h.store.ListDeliveries(h.ctx, ListDeliveriesParams{EndpointID: ep.ID})
	held := 0
	for _, d := range ds {
		if d.Status == DeliveryHeld {
			held++
		}
	}
	if held != 20 { // nine a*, ten b* waiting for retries, and the new one
		t.Fatalf("held %d", held)
	}
}

// Proves WH-23, WH-25, LIM-06 (a dead endpoint does not count towards the five): a 410 makes
// the endpoint dead at once; nothing new is queued; a passing re-challenge sends only the
// events that were waiting then, none older than 72 h.
func TestWH23_WH25_DeadOn410(t *testing.T) {
	h := newHarness(t)
	ep := h.register("acc_1")
	h.rcv.setStatus(500)
	h.notify(jobEvent("acc_1", "photo_old", "photo", JobSucceeded)) // waits at t0, will pass 72 h
	h.sweep(t0)
	h.clock.Set(t0.Add(40 * time.Hour))
	h.notify(jobEvent("acc_1", "photo_w1", "photo", JobSucceeded))
	h.notify(jobEvent("acc_1", "photo_w2", "photo", JobSucceeded))
	h.rcv.answer = func(_ *http.Request, body []byte) (int, string) {
		if strings.Contains(string(body), "photo_w1") {
			return 410, "gone"
		}
		return 500, ""
	}
	// One sweep: photo_old fails again, photo_w1 answers 410, photo_w2 is then held.
	st := h.sweep(t0.Add(40 * time.Hour))
	e := h.endpoint(ep.ID)
	if e.Status != StatusDead || e.DisabledReason != ReasonEndpointGone || *e.LastStatusCode != 410 {
		t.Fatalf("endpoint %+v stats %+v", e, st)
	}
	if ids := h.notify(jobEvent("acc_1", "photo_after", "photo", JobSucceeded)); len(ids) != 0 {
		t.Fatal("a dead endpoint must not queue new events")
	}
	gone := 0
	ds, _ := h.store.ListDeliveries(h.ctx, ListDeliveriesParams{EndpointID: ep.ID})
	for _, d := range ds {
		if d.CloseReason == CloseEndpointGone {
			gone++
		}
	}
	if gone != 1 {
		t.Fatalf("deliveries %+v", ds)
	}
	// A dead endpoint does not count towards the five.
	for i := 0; i < 5; i++ {
		h.register("acc_1")
	}
	h.svc.Delete(h.ctx, "acc_1", mustList(h, "acc_1")[1].ID)
	// 73 hours after the first event: it is past the window.
	at := t0.Add(73 * time.Hour)
	h.clock.Set(at)
	h.rcv.answer = nil
	h.rcv.setStatus(200)
	before := len(h.rcv.events())
	reg, err := h.svc.Rechallenge(h.ctx, "acc_1", ep.ID)
	if err != nil || reg.Endpoint.Status != StatusActive || reg.Endpoint.DisabledReason != "" {
		t.Fatalf("re-challenge %+v %v", reg.Endpoint, err)
	}
	h.sweepEvery(at, at.Add(time.Hour))
	var got []string
	for _, r := range h.rcv.events()[before:] {
		got = append(got, eventIDOf(t, r))
	}
	// photo_w1 got the 410 (closed endpoint_gone), photo_w2 was waiting, photo_old expired.
	if len(got) != 1 || got[0] != "evt_photo_w2_succeeded" {
		t.Fatalf("sent after revival: %v", got)
	}
	old, _ := h.store.GetDelivery(h.ctx, DeliveryID(ep.ID, "evt_photo_old_succeeded"))
	if old.Status != DeliveryFailed || old.CloseReason != CloseHeldPastWindow {
		t.Fatalf("old %+v", old)
	}
}

func mustList(h *harness, account string) []Endpoint {
	eps, err := h.svc.List(h.ctx, account)
	if err != nil {
		h.t.Fatal(err)
	}
	return eps
}

// Proves WH-24: after a passing re-challenge queued events go oldest first, the first at once,
// then 20 a minute: about 100 per sweep.
func TestWH24_ReleasePacing(t *testing.T) {
	h := newHarness(t)
	ep := h.register("acc_1")
	h.rcv.setStatus(500)
	for i := 0; i < 10; i++ {
		h.notify(jobEvent("acc_1", fmt.Sprintf("photo_f%02d", i), "photo", JobSucceeded))
	}
	h.sweep(t0)
	if h.endpoint(ep.ID).Status != StatusDisabled {
		t.Fatal("not disabled")
	}
	for i := 0; i < 240; i++ {
		h.clock.Advance(time.Second)
		h.notify(jobEvent("acc_1", fmt.Sprintf("photo_q%03d", i), "photo", JobSucceeded))
	}
	h.rcv.setStatus(200)
	at := t0.Add(time.Hour)
	h.clock.Set(at)
	before := len(h.rcv.events())
	if _, err := h.svc.Rechallenge(h.ctx, "acc_1", ep.ID); err != nil {
		t.Fatal(err)
	}
	if n := len(h.rcv.events()) - before; n != 1 {
		t.Fatalf("%d sent at once, want 1", n)
	}
	want := []int{100, 100, 49}
	for i, w := range want {
		n0 := len(h.rcv.events())
		h.sweep(at.Add(time.Duration(i+1) * DefaultSweepInterval))
		if n := len(h.rcv.events()) - n0; n != w {
			t.Fatalf("sweep %d sent %d, want %d", i+1, n, w)
		}
	}
	// Oldest first: the ten failed ones (created first), then q000..q239.
	var order []string
	for _, r := range h.rcv.events()[before:] {
		order = append(order, eventIDOf(t, r))
	}
	// (the ten f* share one created_at, so among them the id decides).
	if len(order) != 250 {
		t.Fatalf("%d total", len(order))
	}
	for i, id := range order {
		if (i < 10) != strings.HasPrefix(id, "evt_photo_f") {
			t.Fatalf("position %d: %s", i, id)
		}
		if i > 10 && order[i] < order[i-1] {
			t.Fatalf("out of order at %d: %s after %s", i, order[i], order[i-1])
		}
	}
}

// Proves WH-49, LIM-16: a held event older than 72 hours is never sent and closes
// held_past_window.
func TestWH49_Retention(t *testing.T) {
	h := newHarness(t)
	ep := h.register("acc_1")
	h.rcv.setStatus(500)
	for i := 0; i < 10; i++ {
		h.notify(jobEvent("acc_1", fmt.Sprintf("photo_f%d", i), "photo", JobSucceeded))
	}
	h.sweep(t0)
	h.clock.Set(t0.Add(71 * time.Hour))
	keep := h.notify(jobEvent("acc_1", "photo_recent", "photo", JobSucceeded))[0]
	st := h.sweep(t0.Add(72*time.Hour + time.Minute))
	if st.Expired != 10 {
		t.Fatalf("expired %d", st.Expired)
	}
	for i := 0; i < 10; i++ {
		d, _ := h.store.GetDelivery(h.ctx, DeliveryID(ep.ID, fmt.Sprintf("evt_photo_f%d_succeeded", i)))
		if d.Status != DeliveryFailed || d.CloseReason != CloseHeldPastWindow || d.ClosedAt == nil {
			t.Fatalf("delivery %+v", d)
		}
	}
	if d, _ := h.store.GetDelivery(h.ctx, keep); d.Status != DeliveryHeld {
		t.Fatalf("recent %+v", d)
	}
}

// Proves WH-50: 100 failures within an hour pause the host for an hour; the paused attempts
// are not sent and not counted as failures; after the hour they go.
func TestWH50_HostPause(t *testing.T) {
	h := newHarness(t)
	h.rcv.setStatus(500)
	for i := 0; i < 130; i++ {
		ev := jobEvent("acc_1", fmt.Sprintf("photo_p%03d", i), "photo", JobSucceeded)
		ev.CallbackURL = h.rcv.URL()
		h.notify(ev)
	}
	h.cfg.Workers = 1
	eng := h.newEngine()
	st, err := eng.RunOnce(h.ctx, t0)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(h.rcv.events()); n != HostMaxFailuresPerHour || st.Paused != 30 {
		t.Fatalf("sent %d, paused %d", n, st.Paused)
	}
	ds, _ := h.store.ListDeliveries(h.ctx, ListDeliveriesParams{Account: "acc_1"})
	paused := 0
	for _, d := range ds {
		if d.Attempts == 0 {
			paused++
			if d.Status != DeliveryScheduled || !d.NextAttemptAt.Equal(t0.Add(HostPause)) || d.LastAttemptAt != nil {
				t.Fatalf("paused delivery %+v", d)
			}
		}
	}
	if paused != 30 {
		t.Fatalf("paused %d", paused)
	}
	// Retries due at +5 min are paused too, without counting.
	h.sweep(t0.Add(5 * time.Minute))
	if n := len(h.rcv.events()); n != 100 {
		t.Fatalf("sent during pause: %d", n)
	}
	h.rcv.setStatus(200)
	h.sweep(t0.Add(HostPause))
	if n := len(h.rcv.events()); n != 230 {
		t.Fatalf("after the pause %d", n)
	}
	// Registered endpoints on a paused host keep their counter.
	g := NewMemHostGate()
	for i := 0; i < HostMaxDeliveriesPerHour-1; i++ {
		g.Record(h.ctx, t0.Add(time.Duration(i)*time.Second), []HostTally{{Host: "h", Attempts: 1}})
	}
	if u := g.pausedAt(t0.Add(time.Hour - time.Second))["h"]; !u.IsZero() {
		t.Fatal("paused before 2000")
	}
	at := t0.Add(HostMaxDeliveriesPerHour * time.Second / 2)
	g2 := NewMemHostGate()
	for i := 0; i < HostMaxDeliveriesPerHour; i++ {
		g2.Record(h.ctx, t0.Add(time.Duration(i)*time.Second/2), []HostTally{{Host: "h", Attempts: 1}})
	}
	if u := g2.pausedAt(at)["h"]; u.IsZero() {
		t.Fatal("2000 deliveries within an hour must pause")
	}
	// Spread over more than an hour, 2000 deliveries do not pause.
	g3 := NewMemHostGate()
	for i := 0; i < HostMaxDeliveriesPerHour; i++ {
		g3.Record(h.ctx, t0.Add(time.Duration(i)*2*time.Second), []HostTally{{Host: "h", Attempts: 1}})
	}
	if u := g3.pausedAt(t0.Add(4001 * time.Second))["h"]; !u.IsZero() {
		t.Fatal("sliding window")
	}
}

// Proves WH-50 (a pause is not a failure) on a registered endpoint.
func TestWH50_PauseIsNotAFailure(t *testing.T) {
	h := newHarness(t)
	ep := h.register("acc_1")
	host := "127.0.0.1"
	for i := 0; i < HostMaxFailuresPerHour; i++ {
		if _, err := h.store.RecordAttempts(h.ctx, AttemptBatch{Now: t0, Hosts: []HostTally{{Host: host, Attempts: 1, Failures: 1}}}); err != nil {
			t.Fatal(err)
		}
	}
	h.notify(jobEvent("acc_1", "photo_k", "photo", JobSucceeded))
	st := h.sweep(t0)
	if st.Paused != 1 || len(h.rcv.events()) != 0 {
		t.Fatalf("stats %+v", st)
	}
	if e := h.endpoint(ep.ID); e.ConsecutiveFailures != 0 || e.LastFailureAt != nil {
		t.Fatalf("pause counted: %+v", e)
	}
}

// Proves WH-28, WH-51: a job settled twice notifies once; duplicates of a delivery carry the
// same event id and Svc-Delivery; a restart in the middle of the ladder loses nothing.
func TestWH28_WH51_DuplicatesAndRestart(t *testing.T) {
	h := newHarness(t)
	ep := h.register("acc_1")
	ev := jobEvent("acc_1", "photo_k1", "photo", JobSucceeded)
	ev.CallbackURL = h.rcv.URL()
	first := h.notify(ev)
	again := h.notify(ev)
	if len(first) != 2 || len(again) != 0 {
		t.Fatalf("first %v again %v", first, again)
	}
	// A different outcome of the same job is another event.
	if ids := h.notify(jobEvent("acc_1", "photo_k1", "photo", JobCancelled)); len(ids) != 1 {
		t.Fatalf("other outcome %v", ids)
	}
	h.svc.Delete(h.ctx, "acc_1", ep.ID) // keep the rest of the test to the per-request row
	h.rcv.setStatus(503)
	h.sweep(t0)
	h.sweep(t0.Add(5 * time.Minute))
	// Restart: a new engine over the same store carries on with attempt 3.
	h.cfg.Sender = NewSender(SenderConfig{Policy: h.cfg.Policy, RootCAs: h.sender.client.Transport.(*http.Transport).TLSClientConfig.RootCAs})
	eng := h.newEngine()
	h.rcv.setStatus(200)
	at := t0.Add(5*time.Minute + 15*time.Minute)
	h.clock.Set(at)
	if _, err := eng.RunOnce(h.ctx, at); err != nil {
		t.Fatal(err)
	}
	evs := h.rcv.events()
	if len(evs) != 3 {
		t.Fatalf("%d requests", len(evs))
	}
	for i, r := range evs {
		if r.Header.Get(HeaderDelivery) != first[1] && r.Header.Get(HeaderDelivery) != first[0] {
			t.Fatalf("delivery id %s", r.Header.Get(HeaderDelivery))
		}
		if r.Header.Get(HeaderAttempt) != strconv.Itoa(i+1) {
			t.Fatalf("attempt %d header %s", i+1, r.Header.Get(HeaderAttempt))
		}
	}
	// A crash after claiming (nothing recorded): the lease runs out and the delivery is sent
	// again with the same Svc-Delivery (at least once).
	ev2 := jobEvent("acc_1", "photo_k2", "photo", JobSucceeded)
	ev2.CallbackURL = h.rcv.URL()
	ids := h.notify(ev2)
	claimed, _ := h.store.ClaimDue(h.ctx, ClaimParams{Now: at, Limit: 10, LeaseUntil: at.Add(20 * time.Minute)})
	if len(claimed) != 1 || claimed[0].ID != ids[0] {
		t.Fatalf("claimed %+v", claimed)
	}
	h.sweep(at.Add(5 * time.Minute))
	if len(h.rcv.events()) != 3 {
		t.Fatal("leased row sent by another sweep")
	}
	h.sweep(at.Add(20 * time.Minute))
	evs = h.rcv.events()
	if len(evs) != 4 || evs[3].Header.Get(HeaderDelivery) != ids[0] {
		t.Fatalf("after lease: %d", len(evs))
	}
}

// Proves WH-26, WH-27, WH-29, WH-04: every settled outcome emits one event type; endpoints get
// only their products; chat delivers nothing; pending and dead endpoints get nothing.
func TestWH26_WH27_WH29_FanOut(t *testing.T) {
	h := newHarness(t)
	all := h.register("acc_1")
	photo := h.register("acc_1", "photo")
	chat := h.register("acc_1", "chat")
	other := h.register("acc_2")
	for _, c := range []struct{ status, typ string }{{JobSucceeded, EventJobSucceeded}, {JobFailed, EventJobFailed}, {JobCancelled, EventJobCancelled}} {
		h.notify(jobEvent("acc_1", "music_"+c.status, "music", c.status))
		h.notify(jobEvent("acc_1", "photo_"+c.status, "photo", c.status))
	}
	turn := jobEvent("acc_1", "chat_1", "chat", JobSucceeded)
	if ids := h.notify(turn); len(ids) != 0 {
		t.Fatal("chat delivered")
	}
	turn = jobEvent("acc_1", "text_1", "external", JobSucceeded)
	turn.Chat = true
	if ids := h.notify(turn); len(ids) != 0 {
		t.Fatal("chat turn delivered")
	}
	h.sweep(t0)
	count := map[string][]string{}
	for _, r := range h.rcv.events() {
		var env Envelope
		json.Unmarshal(r.Body, &env)
		count[*env.WebhookID] = append(count[*env.WebhookID], env.Type)
		if r.Header.Get(HeaderEvent) != env.Type {
			t.Fatalf("Svc-Event %s vs %s", r.Header.Get(HeaderEvent), env.Type)
		}
	}
	if len(count[all.ID]) != 6 || len(count[photo.ID]) != 3 || len(count[chat.ID]) != 0 || len(count[other.ID]) != 0 {
		t.Fatalf("fan-out %v", count)
	}
	if _, err := (JobEvent{JobID: "x", Status: "running"}).EventType(); err == nil {
		t.Fatal("unsettled status accepted")
	}
}

// Proves WH-31, WH-32, WH-34, WH-35, WH-36: the envelope exactly, the headers, and that
// Svc-Delivery and Svc-Attempt are outside both signatures.
func TestWH31_WH32_WH35_EnvelopeAndHeaders(t *testing.T) {
	h := newHarness(t)
	ep := h.register("acc_1")
	ev := jobEvent("acc_1", "photo_k1", "photo", JobFailed)
	ev.CreditsCharged, ev.CreditsReserved = nil, nil // ledger unreadable
	h.notify(ev)
	h.notify(jobEvent("acc_1", "photo_k2", "photo", JobSucceeded))
	h.sweep(t0)
	evs := h.rcv.events()
	want := `{"id":"evt_photo_k1_failed","type":"job.failed","created":` + strconv.FormatInt(t0.Unix(), 10) +
		`,"data":{"id":"photo_k1","object":"job","product":"photo","status":"failed","error_code":"stalled","credits_charged":null,"credits_reserved":null},"account":"acc_1","webhook_id":"` + ep.ID + `"}`
	var got received
	for _, r := range evs {
		if strings.Contains(string(r.Body), "photo_k1") {
			got = r
		}
	}
	if string(got.Body) != want {
		t.Fatalf("envelope\n got %s\nwant %s", got.Body, want)
	}
	for _, r := range evs {
		for _, bad := range []string{"prompt", "output", "url", "http"} {
			if strings.Contains(strings.ToLower(string(r.Body)), bad) {
				t.Fatalf("delivery carries %q: %s", bad, r.Body)
			}
		}
	}
	ok := evs[0]
	if strings.Contains(string(ok.Body), "photo_k1") {
		ok = evs[1]
	}
	if !strings.Contains(string(ok.Body), `"error_code":null,"credits_charged":12,"credits_reserved":15`) {
		t.Fatalf("success data %s", ok.Body)
	}
	hd := got.Header
	if hd.Get("Content-Type") != "application/json" || hd.Get(HeaderEvent) != EventJobFailed || !strings.HasPrefix(hd.Get(HeaderDelivery), "dlv_") ||
		hd.Get(HeaderAttempt) != "1" || hd.Get(HeaderAltRequestID) != "req_photo_k1" || hd.Get(HeaderAltUserID) != "acc_1" ||
		hd.Get(HeaderAltTimestamp) != strconv.FormatInt(t0.Unix(), 10) || !strings.Contains(hd.Get("User-Agent"), "webhook") {
		t.Fatalf("headers %v", hd)
	}
	// Both signatures verify from the body and the signed headers alone.
	pubs := h.publicKeys()
	if err := VerifyV2(hd.Get(HeaderSignature), got.Body, pubs, t0, 5*time.Minute); err != nil {
		t.Fatal(err)
	}
	p, _ := ParseSignatureHeader(hd.Get(HeaderSignature))
	if err := VerifyAlt(pubs[p.KID], hd.Get(HeaderAltSignature), hd.Get(HeaderAltRequestID), hd.Get(HeaderAltUserID), hd.Get(HeaderAltTimestamp), got.Body); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{hd.Get(HeaderSignature), hd.Get(HeaderAltSignature)} {
		if strings.Contains(s, hd.Get(HeaderDelivery)) {
			t.Fatal("Svc-Delivery inside a signature header")
		}
	}
}

// Proves WH-30, WH-33: a per-request webhook gets the queue-protocol body once, with no
// registration and no challenge, webhook_id null; a failure carries the reason.
func TestWH30_WH33_PerRequest(t *testing.T) {
	h := newHarness(t)
	ok := jobEvent("acc_9", "photo_r1", "photo", JobSucceeded)
	ok.CallbackURL = h.rcv.URL()
	bad := jobEvent("acc_9", "photo_r2", "photo", JobCancelled)
	bad.ErrorCode = nil
	bad.CallbackURL = h.rcv.URL()
	h.notify(ok)
	h.notify(bad)
	h.sweep(t0)
	reqs := h.rcv.all()
	if len(reqs) != 2 {
		t.Fatalf("%d requests (a challenge must not be sent)", len(reqs))
	}
	bodies := map[string]string{}
	for _, r := range reqs {
		var b RequestBody
		json.Unmarshal(r.Body, &b)
		bodies[b.RequestID] = string(r.Body)
		if r.Header.Get(HeaderAltRequestID) != b.RequestID || r.Header.Get(HeaderAltUserID) != "acc_9" {
			t.Fatalf("headers %v", r.Header)
		}
		if err := VerifyV2(r.Header.Get(HeaderSignature), r.Body, h.publicKeys(), t0, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	if bodies["req_photo_r1"] != `{"request_id":"req_photo_r1","gateway_request_id":"gw_photo_r1","status":"OK","payload":{"id":"photo_r1","object":"job","product":"photo","status":"succeeded","error_code":null,"credits_charged":12,"credits_reserved":15},"error":null,"account":"acc_9","webhook_id":null}` {
		t.Fatalf("ok body %s", bodies["req_photo_r1"])
	}
	if bodies["req_photo_r2"] != `{"request_id":"req_photo_r2","gateway_request_id":"gw_photo_r2","status":"ERROR","payload":null,"error":"cancelled","account":"acc_9","webhook_id":null}` {
		t.Fatalf("error body %s", bodies["req_photo_r2"])
	}
	// Sent once: later sweeps send nothing more.
	h.sweepEvery(t0.Add(5*time.Minute), t0.Add(time.Hour))
	if len(h.rcv.all()) != 2 {
		t.Fatal("per-request webhook sent twice")
	}
	// The same job id in another account (idempotency keys are per account) is its own delivery.
	twin := ok
	twin.Account = "acc_other"
	if ids := h.notify(twin); len(ids) != 1 {
		t.Fatal("per-request delivery of another account's same job id was dropped")
	}
	// A per-request URL that stopped passing is never contacted.
	priv := jobEvent("acc_9", "photo_r3", "photo", JobSucceeded)
	priv.CallbackURL = "https://10.0.0.5/hook"
	ids := h.notify(priv)
	h.sweep(t0.Add(time.Hour))
	if d, _ := h.store.GetDelivery(h.ctx, ids[0]); d.Status != DeliveryFailed || d.CloseReason != CloseURLRefused || d.Attempts != 0 {
		t.Fatalf("private per-request %+v", d)
	}
	if err := h.svc.CheckCallbackURL("https://localhost/x"); urlReason(err) != ReasonPrivateHost {
		t.Fatalf("CheckCallbackURL %v", err)
	}
}

// Proves WH-48 (a sweep every 5 minutes) for the Run loop: it sweeps at once, then on the
// interval and on Wake, and stops with its context.
func TestWH48_RunLoop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		keys := NewMemKeyStore()
		ring, _ := NewKeyRing(KeyRingConfig{Store: keys, Secret: testSecret})
		eng, err := NewEngine(Config{Store: NewMemStore(), Keys: ring})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error)
		go func() { done <- eng.Run(ctx) }()
		synctest.Wait()
		if ks, _ := keys.ListSigningKeys(ctx); len(ks) != 1 {
			t.Fatalf("first sweep did not run: %d keys", len(ks))
		}
		time.Sleep(DefaultSweepInterval)
		synctest.Wait()
		eng.Wake()
		synctest.Wait()
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

// A receiver that sends its status at once and then trickles the rest of its answer past the
// total time fails as a timeout (it was recorded delivered, so it was never retried and never
// disabled). Context-bounded here, as above, so the test does not wait ten real seconds.
func TestWH45_TrickledAnswerIsATimeout(t *testing.T) {
	h := newHarness(t)
	block := make(chan struct{})
	t.Cleanup(func() { close(block) })
	h.rcv.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		io.WriteString(w, "o")
		w.(http.Flusher).Flush()
		<-block
	})
	ctx, cancel := context.WithTimeout(h.ctx, 200*time.Millisecond)
	defer cancel()
	if ans := h.sender.Post(ctx, h.rcv.URL(), http.Header{}, []byte(`{}`)); ans.Failure != FailTimeout || ans.StatusCode != 0 {
		t.Fatalf("a trickled answer: %+v", ans)
	}
}

// One endpoint's deliveries are sent for at most GroupBudget a sweep: a receiver taking 15 s
// an answer got all 5 in one sweep, holding every other endpoint's behind that sweep for up
// to 100 of them a sweep. The rest are given back unattempted and due, and the next sweep
// sends them; each delivery still goes once. Its answer's time, not the sweep's start, is when
// it was attempted.
func TestWH48_SlowReceiverHoldsOneSweepForGroupBudget(t *testing.T) {
	h := newHarness(t)
	ep := h.register("acc_1")
	for i := range 5 {
		h.notify(jobEvent("acc_1", fmt.Sprintf("photo_s%d", i), "photo", JobSucceeded))
	}
	h.rcv.answer = func(*http.Request, []byte) (int, string) {
		h.clock.Advance(15 * time.Second)
		return 200, "ok"
	}
	s, err := h.svc.Engine().RunOnce(h.ctx, h.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	if got := len(h.rcv.events()); got != 2 || s.Delivered != 2 {
		t.Fatalf("one sweep sent %d (stats %+v), want 2 within the 20 s budget", got, s)
	}
	e := h.endpoint(ep.ID)
	if e.LastSuccessAt == nil || !e.LastSuccessAt.Equal(t0.Add(30*time.Second)) {
		t.Fatalf("last success at %v, want the second answer's time %v", e.LastSuccessAt, t0.Add(30*time.Second))
	}
	if _, err := h.svc.Engine().RunOnce(h.ctx, h.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := h.svc.Engine().RunOnce(h.ctx, h.clock.Now()); err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, r := range h.rcv.events() {
		seen[r.Header.Get(HeaderDelivery)]++
		if r.Header.Get("Idempotency-Key") != r.Header.Get(HeaderDelivery) || r.Header.Get(HeaderAttempt) != "1" {
			t.Fatalf("delivery headers %v", r.Header)
		}
	}
	if len(seen) != 5 {
		t.Fatalf("%d deliveries reached the receiver after three sweeps, want 5: %v", len(seen), seen)
	}
	for id, n := range seen {
		if n != 1 {
			t.Fatalf("%s sent %d times", id, n)
		}
	}
}

// A failed attempt's retry gap counts from when the attempt ended.
func TestWH47_GapCountsFromTheAttemptsEnd(t *testing.T) {
	h := newHarness(t)
	h.register("acc_1")
	ids := h.notify(jobEvent("acc_1", "photo_g", "photo", JobSucceeded))
	h.rcv.answer = func(*http.Request, []byte) (int, string) {
		h.clock.Advance(8 * time.Second)
		return 503, "busy"
	}
	if _, err := h.svc.Engine().RunOnce(h.ctx, h.clock.Now()); err != nil {
		t.Fatal(err)
	}
	d, err := h.store.GetDelivery(h.ctx, ids[0])
	if err != nil {
		t.Fatal(err)
	}
	end := t0.Add(8 * time.Second)
	if d.LastAttemptAt == nil || !d.LastAttemptAt.Equal(end) || !d.NextAttemptAt.Equal(end.Add(Ladder[0])) {
		t.Fatalf("attempted at %v, next at %v; want %v and %v", d.LastAttemptAt, d.NextAttemptAt, end, end.Add(Ladder[0]))
	}
}

// roundTripFunc answers a Sender's requests in the test, with no network.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Proves WH-48 across a restart: deliveries that a process claimed (leased for Lease) and never
// sent before it was killed are sent by the restarted process as soon as their lease runs out,
// not on its next 5-minute sweep (its first sweep, at start, found them leased): the engine
// sweeps again when the earliest lease it knows of falls due.
func TestWH48_RestartSendsLeasedDeliveriesWhenTheLeaseEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var mu sync.Mutex
		var sent []time.Time
		svc, cfg := serviceAnswering(t, func(r *http.Request) (*http.Response, error) {
			mu.Lock()
			sent = append(sent, time.Now())
			mu.Unlock()
			return &http.Response{StatusCode: 200, Header: http.Header{}, Body: io.NopCloser(strings.NewReader("ok")), Request: r}, nil
		})
		store := cfg.Store
		const n = 5
		for i := range n {
			ev := jobEvent("acc_1", fmt.Sprintf("photo_k%d", i), "photo", JobSucceeded)
			ev.CallbackURL = "https://hooks.example.com/hook"
			if ids, err := svc.Notify(ctx, ev); err != nil || len(ids) != 1 {
				t.Fatalf("notify: %v %v", ids, err)
			}
		}
		// The process that was killed had claimed them all.
		restarted, err := NewEngine(cfg)
		if err != nil {
			t.Fatal(err)
		}
		lease, start := restarted.cfg.Lease, time.Now()
		if lease >= DefaultSweepInterval {
			t.Fatalf("lease %s is not shorter than the sweep interval", lease)
		}
		if claimed, err := store.ClaimDue(ctx, ClaimParams{Now: start, Limit: 100, LeaseUntil: start.Add(lease)}); err != nil || len(claimed) != n {
			t.Fatalf("claimed %d (%v)", len(claimed), err)
		}
		count := func() int { mu.Lock(); defer mu.Unlock(); return len(sent) }

		done := make(chan error, 1)
		go func() { done <- restarted.Run(ctx) }()
		synctest.Wait()
		if got := count(); got != 0 {
			t.Fatalf("%d sent while the dead process's lease held", got)
		}
		time.Sleep(lease - time.Second)
		synctest.Wait()
		if got := count(); got != 0 {
			t.Fatalf("%d sent before the lease ran out", got)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		mu.Lock()
		at := append([]time.Time(nil), sent...)
		mu.Unlock()
		if len(at) != n {
			t.Fatalf("%d of %d sent when the lease ran out (%s after the restart); the next sweep would be at %s", len(at), n, lease, DefaultSweepInterval)
		}
		for _, a := range at {
			if d := a.Sub(start); d != lease {
				t.Errorf("sent %s after the restart, want %s (the lease's end)", d, lease)
			}
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

// A slow receiver delays only its own deliveries (docs/webhooks.md): while one account's
// receiver hangs on an attempt, another account's delivery queued a second later goes out at
// once, not when the hanging attempt times out. Proves WH-47's timing for the other account.
func TestWH47_AHangingReceiverHoldsUpNoOneElse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		release := make(chan struct{})
		var mu sync.Mutex
		goodAt := map[string]time.Time{}
		svc, _ := serviceAnswering(t, func(r *http.Request) (*http.Response, error) {
			if r.URL.Host == "hang.example.com" {
				select { // a receiver that never answers, until the test lets it
				case <-release:
				case <-r.Context().Done():
					return nil, r.Context().Err()
				}
			} else {
				mu.Lock()
				goodAt[r.Header.Get(HeaderDelivery)] = time.Now()
				mu.Unlock()
			}
			return &http.Response{StatusCode: 200, Header: http.Header{}, Body: io.NopCloser(strings.NewReader("ok")), Request: r}, nil
		})
		done := make(chan error, 1)
		go func() { done <- svc.Engine().Run(ctx) }()
		notify := func(account, job, url string) {
			ev := jobEvent(account, job, "photo", JobSucceeded)
			ev.CallbackURL = url
			if ids, err := svc.Notify(ctx, ev); err != nil || len(ids) != 1 {
				t.Fatalf("notify: %v %v", ids, err)
			}
		}
		notify("acc_noisy", "photo_hang", "https://hang.example.com/hook")
		synctest.Wait() // its attempt is under way, and hangs
		time.Sleep(time.Second)
		queued := time.Now()
		notify("acc_good", "photo_good", "https://good.example.com/hook")
		synctest.Wait()
		mu.Lock()
		got := len(goodAt)
		var at time.Time
		for _, a := range goodAt {
			at = a
		}
		mu.Unlock()
		if got != 1 || !at.Equal(queued) {
			t.Fatalf("the other account's delivery: %d sent, %s after it was queued, while another receiver hangs", got, at.Sub(queued))
		}
		close(release)
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

// serviceAnswering is a webhooks service on a memory store whose sender's requests are answered
// by rt, with no jitter: for tests in a synctest bubble, where no real connection is made.
func serviceAnswering(t *testing.T, rt roundTripFunc) (*Service, Config) {
	t.Helper()
	ring, err := NewKeyRing(KeyRingConfig{Store: NewMemKeyStore(), Secret: testSecret})
	if err != nil {
		t.Fatal(err)
	}
	sender := NewSender(SenderConfig{})
	sender.client.Transport = rt
	cfg := Config{Store: NewMemStore(), Keys: ring, Sender: sender, Secret: testSecret, PublicBaseURL: "https://api.example.com",
		Jitter: func() float64 { return 0 }}
	svc, err := NewService(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return svc, cfg
}
