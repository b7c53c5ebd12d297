package e2e_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelexec/modelexec/internal/apierr"
	"github.com/modelexec/modelexec/internal/jobs"
	"github.com/modelexec/modelexec/internal/runners"
)

// TestSUB08_WebhookRefusalWrittenForUsers proves SUB-08 from the reader's side: a per-request
// webhook refused by the URL policy says why in words for the person who sent it (the message
// and the detail's msg), never a Go error chain such as "webhook: webhooks: invalid url:
// private_host: 127.0.0.1"; the machine-readable reason stays in `reason`.
func TestSUB08_WebhookRefusalWrittenForUsers(t *testing.T) {
	each(t, options{}, func(t *testing.T, h *harness) {
		ok := `{"positivePrompt":"ok"}`
		for _, c := range []struct{ hook, reason, says string }{
			{"https://127.0.0.1/h", "private_host", "public host"},
			{"https://10.0.0.7/h", "private_host", "public host"},
			{"http://hooks.example.com/h", "not_https", "https"},
			{"https://user:pw@hooks.example.com/h", "has_userinfo", "password"},
			{"https://hooks.example.com/" + strings.Repeat("a", 2000), "too_long", "2000 characters"},
			{"https://%zz/h", "", "webhook URL"},
		} {
			r := h.submit(mFast, "webhook="+url.QueryEscape(c.hook), ok)
			if r.Code != http.StatusUnprocessableEntity || r.str("error") != "invalid_url" {
				t.Fatalf("%s: %d %s", c.hook, r.Code, r.Raw)
			}
			if c.reason != "" && r.str("reason") != c.reason {
				t.Errorf("%s: reason %q, want %q", c.hook, r.str("reason"), c.reason)
			}
			msgs := []string{r.str("message")}
			if d, _ := r.Body["detail"].([]any); len(d) == 1 {
				m, _ := d[0].(map[string]any)
				s, _ := m["msg"].(string)
				msgs = append(msgs, s)
			} else {
				t.Errorf("%s: detail %v", c.hook, r.Body["detail"])
			}
			for _, m := range msgs {
				if !strings.HasPrefix(m, "The webhook URL") || !strings.Contains(m, c.says) {
					t.Errorf("%s: message %q does not say why (%q)", c.hook, m, c.says)
				}
				for _, leak := range []string{"webhooks:", "webhook:", "invalid url", "private_host", "parse ", "has_userinfo"} {
					if strings.Contains(m, leak) {
						t.Errorf("%s: message %q carries %q", c.hook, m, leak)
					}
				}
			}
		}
	})
}

// manyKeysBody is a body of just under 1 MiB holding n distinct unknown three-letter keys
// ("abc":0,), about 131,000 of them at the limit.
func manyKeysBody(limit int) (string, int) {
	const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	var b strings.Builder
	b.WriteString(`{"positivePrompt":"x"`)
	n := 0
	for i := 0; i < len(letters)*len(letters)*len(letters); i++ {
		k := []byte{letters[i/(52*52)], letters[(i/52)%52], letters[i%52]}
		if b.Len()+len(k)+6 > limit {
			break
		}
		b.WriteString(`,"`)
		b.Write(k)
		b.WriteString(`":0`)
		n++
	}
	b.WriteString("}")
	return b.String(), n
}

// TestIN_SHARED06_ManyUnknownKeysSmallRefusal proves IN-SHARED-06 (a field outside the contract
// is refused before any charge, 422 with detail) at the 1 MiB limit without amplification: a
// body of ~131,000 unknown keys is answered with a short detail list (the first
// apierr.MaxDetail violations, then one entry saying how many more, and detail_truncated), and
// the server's allocations for the refusal stay a small multiple of the body.
func TestIN_SHARED06_ManyUnknownKeysSmallRefusal(t *testing.T) {
	each(t, options{}, func(t *testing.T, h *harness) {
		body, n := manyKeysBody(1 << 20)
		if n < 100_000 {
			t.Fatalf("only %d keys", n)
		}
		before := h.balance()
		h.submit(mFast, "", `{"positivePrompt":"warm","zz":1}`) // warm pools and caches
		var m0, m1 runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m0)
		r := h.submit(mFast, "", body)
		runtime.ReadMemStats(&m1)
		if r.Code != http.StatusUnprocessableEntity || r.str("error") != "invalid_input" {
			t.Fatalf("%d %.300s", r.Code, r.Raw)
		}
		d, _ := r.Body["detail"].([]any)
		if len(d) != apierr.MaxDetail+1 {
			t.Fatalf("detail has %d entries, want %d", len(d), apierr.MaxDetail+1)
		}
		last, _ := d[len(d)-1].(map[string]any)
		if last["type"] != apierr.DetailTruncatedType || r.num("detail_truncated") != int64(n-apierr.MaxDetail) {
			t.Fatalf("last entry %v, detail_truncated %v, want %d more", last, r.Body["detail_truncated"], n-apierr.MaxDetail)
		}
		if msg, _ := last["msg"].(string); !strings.Contains(msg, strconv.Itoa(n-apierr.MaxDetail)+" more") {
			t.Fatalf("last entry msg %q", msg)
		}
		if len(r.Raw) > 16<<10 {
			t.Fatalf("refusal is %d bytes for a %d-byte body", len(r.Raw), len(body))
		}
		alloc := m1.TotalAlloc - m0.TotalAlloc
		t.Logf("body %d bytes, %d keys: refusal %d bytes, %.1f MiB allocated in all (client included)", len(body), n, len(r.Raw), float64(alloc)/(1<<20))
		if alloc > 12<<20 {
			t.Fatalf("one refusal allocated %.1f MiB", float64(alloc)/(1<<20))
		}
		if h.balance() != before {
			t.Fatalf("balance moved: %d → %d", before, h.balance())
		}
	})
}

// noCancel is a runner that cannot stop a job once it runs (runners.Canceller), as a Cog server
// without a cancel route; "lose ..." and "budget ..." prompts fail the way a Cog runner does
// when the server loses the prediction or its provider is out of budget.
type noCancel struct{ runners.Runner }

func (noCancel) CanCancel(string) bool { return false }

func (n noCancel) Run(ctx context.Context, j runners.Job, env runners.Env) (runners.Result, error) {
	var in struct {
		Prompt string `json:"positivePrompt"`
	}
	_ = json.Unmarshal(j.Input, &in)
	switch {
	case strings.HasPrefix(in.Prompt, "lose"):
		return runners.Result{}, &runners.Failure{Code: "upstream_lost", Message: "The model server lost this job; it was stopped and refunded."}
	case strings.HasPrefix(in.Prompt, "budget"):
		return runners.Result{}, &runners.Failure{Code: "vendor_budget_exhausted", Message: "The model's provider is out of budget for now."}
	}
	return n.Runner.Run(ctx, j, env)
}

// TestREAD09_CancelUnsupported proves READ-09 and ERR-83 for cancel_unsupported: a cancel of a
// running job whose runner cannot stop it answers 400 cancel_unsupported carrying product,
// and the job runs on to its end (charged for work it did); a job still waiting is cancelled
// whatever the runner.
func TestREAD09_CancelUnsupported(t *testing.T) {
	each(t, options{runner: func(r runners.Runner) runners.Runner { return noCancel{r} }}, func(t *testing.T, h *harness) {
		r := h.submit(mFast, "", `{"positivePrompt":"block"}`)
		if r.Code != http.StatusOK {
			t.Fatalf("submit: %d %s", r.Code, r.Raw)
		}
		h.waitStarted(1)
		c := h.call(http.MethodPut, r.str("cancel_url"), "")
		if c.Code != http.StatusBadRequest || c.str("error") != "cancel_unsupported" || c.str("product") == "" || c.str("error_type") != "ValidationError" {
			t.Fatalf("cancel: %d %s", c.Code, c.Raw)
		}
		h.runner.Release()
		if j := h.waitSettled(r.str("request_id")); j.Outcome != jobs.Succeeded || j.CancelAsked {
			t.Fatalf("job after a refused cancel: %s, cancel asked %v", j.Outcome, j.CancelAsked)
		}
	})
}

// TestERR_UpstreamLostAndVendorBudgetOnResultRead proves ERR-16's counterpart for failures that
// are not the request's fault: a job the model lost reads 410 upstream_lost, one its provider
// had no budget for reads 503 vendor_budget_exhausted (retry same_key), both refunded in full.
func TestERR_UpstreamLostAndVendorBudgetOnResultRead(t *testing.T) {
	each(t, options{runner: func(r runners.Runner) runners.Runner { return noCancel{r} }}, func(t *testing.T, h *harness) {
		before := h.balance()
		for _, c := range []struct {
			prompt, code string
			status       int
		}{{"lose this", "upstream_lost", http.StatusGone}, {"budget gone", "vendor_budget_exhausted", http.StatusServiceUnavailable}} {
			r := h.submit(mFast, "", `{"positivePrompt":"`+c.prompt+`"}`)
			if r.Code != http.StatusOK {
				t.Fatalf("submit: %d %s", r.Code, r.Raw)
			}
			j := h.waitSettled(r.str("request_id"))
			if j.ErrorCode != c.code || j.Charged != 0 {
				t.Fatalf("%s: job %s %s charged %d", c.prompt, j.Outcome, j.ErrorCode, j.Charged)
			}
			res := h.call(http.MethodGet, r.str("response_url"), "")
			if res.Code != c.status || res.str("error") != c.code || res.str("docs") == "" {
				t.Fatalf("%s: result read %d %s", c.prompt, res.Code, res.Raw)
			}
		}
		if h.balance() != before {
			t.Fatalf("balance %d, want %d", h.balance(), before)
		}
	})
}

// TestSUB10_WebhookUnsupportedOnSyncHost proves SUB-10: the synchronous host answers on the
// held connection and delivers no per-request webhook, so a webhook sent there is refused
// webhook_unsupported, 422 with detail (DESIGN 12), before any charge, whatever its URL; the queue host takes
// the same webhook.
func TestSUB10_WebhookUnsupportedOnSyncHost(t *testing.T) {
	each(t, options{}, func(t *testing.T, h *harness) {
		before, n := h.balance(), h.countJobs()
		hook := url.QueryEscape("https://hooks.example.com/h")
		// Whatever the URL: a private address, one that is no URL, or a value that cannot be
		// decoded is refused as unsupported here, never judged as an address.
		for _, q := range []string{"webhook=" + hook, "alt_webhook=" + hook, "fal_webhook=" + hook,
			"webhook=" + url.QueryEscape("https://127.0.0.1/h"), "webhook=ftp%3A%2F%2Fx", "webhook=%zz"} {
			r := h.call(http.MethodPost, h.sync.URL+"/svc-serverless/"+mFast+"?"+q, `{"positivePrompt":"ok"}`)
			expectRefusal(t, h, r, http.StatusUnprocessableEntity, "webhook_unsupported", before, n)
			if d, _ := r.Body["detail"].([]any); len(d) != 1 || r.str("error_type") != "ValidationError" {
				t.Fatalf("%s: %s", q, r.Raw)
			}
		}
		if r := h.submit(mFast, "webhook="+hook, `{"positivePrompt":"ok"}`); r.Code != http.StatusOK {
			t.Fatalf("queue host refused the webhook: %d %s", r.Code, r.Raw)
		}
	})
}

// faultTx fails InsertJobs (of a charged job) or InsertEvent while its flag is up, as a store
// that breaks mid-transaction.
type faultStore struct {
	jobs.Store
	failInsert, failEvent *atomic.Bool
}

// InOneStatement goes through InTx: the faults apply to every transaction.
func (f *faultStore) InOneStatement(ctx context.Context, fn func(jobs.Tx) error) error {
	return f.InTx(ctx, fn)
}

func (f *faultStore) InTx(ctx context.Context, fn func(jobs.Tx) error) error {
	return f.Store.InTx(ctx, func(tx jobs.Tx) error { return fn(faultTx{Tx: tx, f: f}) })
}

type faultTx struct {
	jobs.Tx
	f *faultStore
}

var errInjected = errors.New("injected store failure")

func (t faultTx) InsertJobs(ctx context.Context, js []jobs.Job) error {
	for _, j := range js {
		if j.Reserved > 0 && t.f.failInsert.Load() {
			return errInjected
		}
	}
	return t.Tx.InsertJobs(ctx, js)
}

func (t faultTx) InsertEvent(ctx context.Context, e jobs.Event) error {
	if t.f.failEvent.Load() {
		return errInjected
	}
	return t.Tx.InsertEvent(ctx, e)
}

func (t faultTx) CloseJob(ctx context.Context, j jobs.Job, e *jobs.Event) error {
	if e != nil && t.f.failEvent.Load() {
		return errInjected
	}
	return t.Tx.CloseJob(ctx, j, e)
}

// TestERR_JobRecordFailedAndSettleFailed proves the two server-side rows where they arise: a
// charged submit whose job cannot be recorded answers 500 job_record_failed with the charge
// reversed (the same transaction) and a resend under the same key succeeds, charged once; a
// cancel of a waiting job that cannot be settled answers 500 settle_failed (poll_first) and the
// job still waits, so a later cancel closes it at no cost.
func TestERR_JobRecordFailedAndSettleFailed(t *testing.T) {
	var failInsert, failEvent atomic.Bool
	wrap := func(s jobs.Store) jobs.Store {
		return &faultStore{Store: s, failInsert: &failInsert, failEvent: &failEvent}
	}
	each(t, options{store: wrap, cfg: func(c *jobs.Config) { c.Concurrency = map[string]int{mQueue: 1} }}, func(t *testing.T, h *harness) {
		before := h.balance()
		body := `{"positivePrompt":"ok","idempotency_key":"record-1"}`
		failInsert.Store(true)
		r := h.submit(mFast, "", body)
		failInsert.Store(false)
		if r.Code != http.StatusInternalServerError || r.str("error") != "job_record_failed" || r.str("charged") != "refunded" {
			t.Fatalf("submit while the job cannot be recorded: %d %s", r.Code, r.Raw)
		}
		if h.balance() != before || h.countJobs() != 0 {
			t.Fatalf("balance %d (want %d), %d jobs", h.balance(), before, h.countJobs())
		}
		again := h.submit(mFast, "", body)
		if again.Code != http.StatusOK {
			t.Fatalf("resend: %d %s", again.Code, again.Raw)
		}
		h.waitSettled(again.str("request_id"))
		afterOne := h.balance()
		if afterOne >= before {
			t.Fatalf("resend not charged: %d → %d", before, afterOne)
		}

		// A waiting job behind a running one.
		a := h.submit(mQueue, "", `{"positivePrompt":"block-a"}`)
		h.waitStarted(2)
		b := h.submit(mQueue, "", `{"positivePrompt":"ok-b"}`)
		if a.Code != http.StatusOK || b.str("status") != "IN_QUEUE" {
			t.Fatalf("a %d %s / b %s", a.Code, a.Raw, b.Raw)
		}
		failEvent.Store(true)
		c := h.call(http.MethodPut, b.str("cancel_url"), "")
		failEvent.Store(false)
		if c.Code != http.StatusInternalServerError || c.str("error") != "settle_failed" || c.str("retry") != "poll_first" {
			t.Fatalf("cancel while the job cannot be settled: %d %s", c.Code, c.Raw)
		}
		if j := h.job(b.str("request_id")); j.Settled() {
			t.Fatalf("job settled by a failed cancel: %s", j.Outcome)
		}
		if c := h.call(http.MethodPut, b.str("cancel_url"), ""); c.Code != http.StatusOK || c.str("status") != "CANCELLED" {
			t.Fatalf("second cancel: %d %s", c.Code, c.Raw)
		}
		h.runner.Release()
		h.waitSettled(a.str("request_id"))
	})
}
