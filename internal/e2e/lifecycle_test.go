package e2e_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/jobs"
)

// TestQST03_QueueLifecycle walks the queue rows of the transition table on a model that offers
// a queue (one runner seat): IN_QUEUE with queue_position and nothing charged, low priority
// behind every normal request, max_queue_length → 429 queue_too_long, a queued job cancelled
// at no cost, a queued job past X-Svc-Request-Timeout failed request_timeout and never charged,
// a queued job the model refuses at its turn failed with one event (422 detail on its result),
// and the rest started in order and charged only when started.
// Proves QST-03, QST-05, QST-06, QST-07, QST-09, QST-11, QST-12, QST-15, JOB-03, JOB-11, JOB-12,
// SUB-11, SUB-12, SUB-14, SUB-15, SUB-17, SUB-19, READ-03, READ-07, READ-09 (cancel_refused).
func TestQST03_QueueLifecycle(t *testing.T) {
	each(t, options{cfg: func(c *jobs.Config) { c.Concurrency = map[string]int{mQueue: 1} }}, func(t *testing.T, h *harness) {
		start := h.balance()
		a := h.submit(mQueue, "", `{"positivePrompt":"block-a"}`)
		if a.Code != 200 || a.str("status") != "IN_PROGRESS" {
			t.Fatalf("a: %d %s", a.Code, a.Raw)
		}
		q := a.num("credits_quoted")
		if a.num("credits_charged") != q || h.balance() != start-q {
			t.Fatalf("a charged %d, balance %d", a.num("credits_charged"), h.balance())
		}
		h.waitStarted(1)
		afterA := h.balance()
		queued := func(name, body string, hdr ...string) resp {
			t.Helper()
			r := h.submit(mQueue, "", body, hdr...)
			if r.Code != 200 || r.str("status") != "IN_QUEUE" || r.num("credits_charged") != 0 || r.num("credits_quoted") != q {
				t.Fatalf("%s: %d %s", name, r.Code, r.Raw)
			}
			if _, ok := r.Body["queue_position"]; !ok {
				t.Fatalf("%s: no queue_position", name)
			}
			if r.Body["provider_job_id"] != nil {
				t.Errorf("%s: provider_job_id %v before it was handed to a model", name, r.Body["provider_job_id"])
			}
			if h.balance() != afterA {
				t.Fatalf("%s: queued job charged: balance %d want %d", name, h.balance(), afterA)
			}
			return r
		}
		b := queued("b", `{"positivePrompt":"block-b"}`)
		low := queued("low", `{"positivePrompt":"block-low"}`, "X-Svc-Priority", "low")
		c := queued("c", `{"positivePrompt":"block-c"}`, "X-Alt-Queue-Priority", "normal")
		ref := queued("refuse", `{"positivePrompt":"refuse-at-turn"}`)
		pos := func(r resp) int64 {
			st := h.status(r, false)
			if st.Code != http.StatusOK || st.str("status") != "IN_QUEUE" || st.Body["message"] != nil {
				t.Fatalf("status of queued: %d %s", st.Code, st.Raw)
			}
			return st.num("queue_position")
		}
		if got := []int64{pos(b), pos(c), pos(ref), pos(low)}; !slices.Equal(got, []int64{0, 1, 2, 3}) {
			t.Fatalf("queue positions b,c,refuse,low = %v, want [0 1 2 3] (low behind every normal)", got)
		}
		// Four wait: a low submit queues behind all four, so max_queue_length below that is
		// refused; a normal one queues behind the three normal ones and is accepted at four.
		r := h.submit(mQueue, "max_queue_length=3", `{"positivePrompt":"ok"}`, "X-Svc-Priority", "low")
		expectRefusal(t, h, r, 429, "queue_too_long", afterA, 5)
		if r.num("waiting") != 4 || r.num("max") != 3 {
			t.Errorf("queue_too_long waiting/max: %s", r.Raw)
		}
		r = h.submit(mQueue, "alt_max_queue_length=0", `{"positivePrompt":"ok"}`)
		expectRefusal(t, h, r, 429, "queue_too_long", afterA, 5)
		d := h.submit(mQueue, "max_queue_length=4", `{"positivePrompt":"block-d"}`)
		if d.Code != 200 || d.str("status") != "IN_QUEUE" {
			t.Fatalf("d: %d %s", d.Code, d.Raw)
		}
		// Cancel a queued job: costs nothing; a second cancel is refused with the status.
		cn := h.call(http.MethodPut, d.str("cancel_url"), "")
		if cn.Code != 200 || cn.str("status") != "CANCELLED" || cn.num("credits_charged") != 0 {
			t.Fatalf("cancel queued: %d %s", cn.Code, cn.Raw)
		}
		if h.balance() != afterA {
			t.Fatalf("cancel of a queued job moved the balance to %d", h.balance())
		}
		if st := h.status(d, false); st.str("status") != "COMPLETED" {
			t.Fatalf("cancelled job reads %s", st.Raw)
		}
		if rr := h.call(http.MethodGet, d.str("response_url"), ""); rr.Code < 400 {
			t.Errorf("result of a cancelled job: %d %s", rr.Code, rr.Raw)
		}
		again := h.call(http.MethodPut, d.str("cancel_url"), "")
		if again.Code != 409 || again.str("error") != "cancel_refused" || again.str("status") != "cancelled" || again.Body["charged"] != "no" {
			t.Errorf("second cancel of a job cancelled before it was charged: %d %s", again.Code, again.Raw)
		}
		// Waiting past X-Svc-Request-Timeout fails request_timeout, never charged.
		to := queued("timeout", `{"positivePrompt":"block-t"}`, "X-Alt-Request-Timeout", "1")
		h.clock.Advance(2 * time.Second)
		h.jobs.Sweep(t.Context())
		tj := h.waitSettled(to.str("request_id"))
		if tj.Outcome != jobs.Failed || tj.ErrorCode != "request_timeout" || tj.Charged != 0 || h.balance() != afterA {
			t.Fatalf("timed out job: %+v, balance %d", tj, h.balance())
		}
		if rr := h.call(http.MethodGet, to.str("response_url"), ""); rr.str("error") != "request_timeout" || rr.Body["charged"] != "no" ||
			!strings.Contains(rr.str("message"), "for a seat. Resend") {
			t.Errorf("result of a timed-out job: %d %s", rr.Code, rr.Raw)
		}
		// Release: the rest start one at a time in queue order, each charged as it starts.
		h.runner.Release()
		for _, x := range []resp{a, b, c, ref, low} {
			h.waitSettled(x.str("request_id"))
		}
		order := h.waitStarted(4)
		want := []string{b.str("request_id"), c.str("request_id"), ref.str("request_id"), low.str("request_id")}
		if !slices.Equal(order, want) {
			t.Errorf("start order %v, want %v (b, c, refuse, low)", order, want)
		}
		rj := h.job(ref.str("request_id"))
		if rj.Outcome != jobs.Failed || rj.Charged != 0 {
			t.Errorf("refused at its turn: %+v", rj)
		}
		rr := h.call(http.MethodGet, ref.str("response_url"), "")
		if rr.Code != 422 || !strings.Contains(rr.Raw, `"loc":["body","positivePrompt"]`) {
			t.Errorf("result of a refused job: %d %s", rr.Code, rr.Raw)
		}
		if want := start - 4*q; h.balance() != want {
			t.Errorf("balance %d, want %d (a, b, c, low charged; refused, cancelled and timed out not)", h.balance(), want)
		}
		for _, x := range []resp{a, b, c, low} {
			if j := h.job(x.str("request_id")); j.Outcome != jobs.Succeeded || j.Charged != q {
				t.Errorf("job %s: %s charged %d", j.ID, j.Outcome, j.Charged)
			}
		}
	})
}

// TestQST08_StallCeiling: a run past the model's stall ceiling (1 s in the test catalogue) is
// stopped, failed stalled and refunded whole. Proves QST-08, QST-11, PRICE-02.
func TestQST08_StallCeiling(t *testing.T) {
	each(t, options{}, func(t *testing.T, h *harness) {
		before := h.balance()
		r := h.submit(mStall, "wait=10", `{"positivePrompt":"block"}`)
		if r.Code != 200 || r.str("status") != "COMPLETED" {
			t.Fatalf("stalled submit: %d %s", r.Code, r.Raw)
		}
		j := h.job(r.str("request_id"))
		if j.Outcome != jobs.Failed || j.ErrorCode != "stalled" || j.Charged != 0 || j.Reserved != j.Quoted {
			t.Fatalf("stalled job: %+v", j)
		}
		if h.balance() != before || r.num("credits_remaining") != before {
			t.Fatalf("balance %d (remaining %d), want refunded to %d", h.balance(), r.num("credits_remaining"), before)
		}
		if rr := h.call(http.MethodGet, r.str("response_url"), ""); rr.str("error") != "stalled" {
			t.Errorf("result of a stalled job: %d %s", rr.Code, rr.Raw)
		}
	})
}

// TestREAD03_CancelRunning: a running job asked to stop settles at the work done, at or
// below the quote, the rest refunded; a settled job refuses cancel with its status.
// Proves READ-03, READ-09, PRICE-02, QST-11.
func TestREAD03_CancelRunning(t *testing.T) {
	each(t, options{}, func(t *testing.T, h *harness) {
		before := h.balance()
		r := h.submit(mFast, "", `{"positivePrompt":"block"}`)
		if r.Code != 200 || r.str("status") != "IN_PROGRESS" {
			t.Fatalf("submit: %d %s", r.Code, r.Raw)
		}
		q := r.num("credits_quoted")
		h.waitStarted(1)
		cn := h.call(http.MethodPut, r.str("cancel_url"), "")
		if cn.Code != 200 || cn.str("status") != "CANCELLED" {
			t.Fatalf("cancel: %d %s", cn.Code, cn.Raw)
		}
		charged := cn.num("credits_charged")
		if charged <= 0 || charged > q || charged+cn.num("credits_refunded") != q {
			t.Fatalf("cancel settled at %d (refunded %d) of a %d quote", charged, cn.num("credits_refunded"), q)
		}
		if h.balance() != before-charged {
			t.Fatalf("balance %d, want %d", h.balance(), before-charged)
		}
		again := h.call(http.MethodPut, r.str("cancel_url"), "")
		if again.Code != 409 || again.str("error") != "cancel_refused" || again.str("status") != "cancelled" || (charged > 0) != (again.Body["charged"] == "stands") {
			t.Errorf("cancel of a cancelled job: %d %s", again.Code, again.Raw)
		}
		ok := h.submit(mFast, "wait=10", `{"positivePrompt":"ok"}`)
		if c := h.call(http.MethodPut, ok.str("cancel_url"), ""); c.Code != 409 || c.str("error") != "cancel_refused" || c.str("status") != "succeeded" || c.Body["charged"] != "stands" {
			t.Errorf("cancel of a succeeded job: %d %s", c.Code, c.Raw)
		}
	})
}

// TestQST12_FailedResults: a refusal as written answers 422 with detail on the result read,
// a failure answers its catalogue row; both refunded and COMPLETED on the queue protocol.
// Proves QST-12, READ-07, PRICE-02.
func TestQST12_FailedResults(t *testing.T) {
	each(t, options{}, func(t *testing.T, h *harness) {
		before := h.balance()
		r := h.submit(mFast, "wait=10", `{"positivePrompt":"refuse"}`)
		if r.str("status") != "COMPLETED" || h.balance() != before {
			t.Fatalf("refused: %s balance %d", r.Raw, h.balance())
		}
		rr := h.call(http.MethodGet, r.str("response_url"), "")
		if rr.Code != 422 || rr.str("error") != "content_policy" || !strings.Contains(rr.Raw, `"loc":["body","positivePrompt"]`) {
			t.Errorf("refused result: %d %s", rr.Code, rr.Raw)
		}
		f := h.submit(mFast, "wait=10", `{"positivePrompt":"fail"}`)
		fr := h.call(http.MethodGet, f.str("response_url"), "")
		if fr.Code < 500 || fr.str("error") != "run_failed" || h.balance() != before {
			t.Errorf("failed result: %d %s, balance %d", fr.Code, fr.Raw, h.balance())
		}
	})
}

// TestREAD04_StreamSendsEachLogLineOnce: with logs=1 each event of the status stream carries
// the log lines new since the stream's last event, so a client that adds up what it receives
// (fal's client does) holds every line once, in order, as the status read lists them. Every
// event used to carry the whole list: fal's client showed 81 lines for 13. Proves READ-04 for
// the logs of a streamed document.
func TestREAD04_StreamSendsEachLogLineOnce(t *testing.T) {
	each(t, options{}, func(t *testing.T, h *harness) {
		r := h.submit(mFast, "", `{"positivePrompt":"chatty"}`)
		h.waitStarted(1)
		req, _ := http.NewRequest(http.MethodGet, r.str("status_url")+"/stream?logs=1", nil)
		req.Header.Set("Authorization", "Bearer "+h.key)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var got []string
		events := 0
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			line := sc.Text()
			if !strings.HasPrefix(line, "data: ") {
				continue
			}
			var doc struct {
				Status string `json:"status"`
				Logs   *[]struct {
					Message string `json:"message"`
				} `json:"logs"`
			}
			if err := json.Unmarshal([]byte(line[6:]), &doc); err != nil || doc.Logs == nil {
				t.Fatalf("event without logs: %s", line)
			}
			for _, l := range *doc.Logs {
				got = append(got, l.Message)
			}
			if events++; events == 1 {
				h.runner.Release()
			}
		}
		st := h.status(r, true)
		var all []string
		for _, l := range st.Body["logs"].([]any) {
			all = append(all, l.(map[string]any)["message"].(string))
		}
		runner := []string{"running chatty", "step 1", "step 2", "step 3"}
		if len(all) < len(runner) || !slices.Equal(all[len(all)-len(runner):], runner) {
			t.Fatalf("status read logs %q lack the runner's %q", all, runner)
		}
		if events < 2 || !slices.Equal(got, all) {
			t.Fatalf("log lines added up over %d events: %q, want the status read's %q", events, got, all)
		}
	})
}

// TestREAD04_StatusStream: the stream sends the status document once per change and closes
// after COMPLETED. Proves READ-04.
func TestREAD04_StatusStream(t *testing.T) {
	each(t, options{}, func(t *testing.T, h *harness) {
		r := h.submit(mFast, "", `{"positivePrompt":"block"}`)
		h.waitStarted(1)
		req, _ := http.NewRequest(http.MethodGet, r.str("status_url")+"/stream", nil)
		req.Header.Set("Authorization", "Bearer "+h.key)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
			t.Fatalf("stream: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
		}
		sc := bufio.NewScanner(res.Body)
		var events []map[string]any
		var raws []string
		released := false
		done := make(chan struct{})
		go func() {
			defer close(done)
			for sc.Scan() {
				line := sc.Text()
				if !strings.HasPrefix(line, "data: ") {
					continue
				}
				var doc map[string]any
				_ = json.Unmarshal([]byte(line[6:]), &doc)
				events = append(events, doc)
				raws = append(raws, line)
				if !released {
					released = true
					h.runner.Release()
				}
			}
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("stream did not close after COMPLETED")
		}
		if len(events) < 2 || events[0]["status"] != "IN_PROGRESS" || events[len(events)-1]["status"] != "COMPLETED" {
			t.Fatalf("events %v", raws)
		}
		for i := 1; i < len(raws); i++ {
			if raws[i] == raws[i-1] {
				t.Errorf("event %d repeats the previous one", i)
			}
		}
	})
}

// TestREAD01_LogsOptionCheckedOnReads: the logs option is read on a status read and a status
// stream as on a submit: 1, true, 0 or false, anything else refused 422 invalid_input at
// query.logs; it used to be taken as "no logs" on reads. Proves READ-01 and READ-04's options.
func TestREAD01_LogsOptionCheckedOnReads(t *testing.T) {
	each(t, options{}, func(t *testing.T, h *harness) {
		r := h.submit(mFast, "wait=10", `{"positivePrompt":"ok"}`)
		if r.Code != 200 {
			t.Fatalf("submit: %d %s", r.Code, r.Raw)
		}
		for _, u := range []string{r.str("status_url"), r.str("status_url") + "/stream"} {
			for _, v := range []string{"yes", "2", ""} {
				got := h.call(http.MethodGet, u+"?logs="+v, "")
				if got.Code != 422 || got.str("error") != "invalid_input" || !strings.Contains(got.Raw, `"loc":["query","logs"]`) {
					t.Errorf("%s?logs=%s: %d %s", u, v, got.Code, got.Raw)
				}
			}
		}
		for _, v := range []string{"1", "true", "0", "false"} {
			if got := h.call(http.MethodGet, r.str("status_url")+"?logs="+v, ""); got.Code != 200 {
				t.Errorf("status?logs=%s: %d %s", v, got.Code, got.Raw)
			}
		}
	})
}
