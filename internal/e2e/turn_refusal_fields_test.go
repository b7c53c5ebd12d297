package e2e_test

import (
	"net/http"
	"testing"

	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/jobs"
)

// TestERR81_TurnRefusalCarriesItsFields: a queued job whose account no longer covers its quote
// at its turn fails insufficient_credits, and its result read carries `required` and `balance`
// as they stood at the turn, as a submit refused for credits does (spec 02 "Codes"). Before,
// the read rebuilt the error from its code alone. Proves ERR-81 (and PRICE-22) at a job's turn.
func TestERR81_TurnRefusalCarriesItsFields(t *testing.T) {
	each(t, options{cfg: func(c *jobs.Config) { c.Concurrency = map[string]int{mQueue: 1} }}, func(t *testing.T, h *harness) {
		const funds = 32 // a, then b, at a quote of 11 to 16; never c after them
		acct, key := h.newAccount("acct_turn", auth.Pro, funds, nil)
		submit := func(prompt string) resp {
			return h.callKey(key, http.MethodPost, h.queue.URL+"/svc-serverless/"+mQueue, `{"positivePrompt":"`+prompt+`"}`)
		}
		a := submit("block-a")
		if a.Code != 200 || a.str("status") != "IN_PROGRESS" {
			t.Fatalf("a: %d %s", a.Code, a.Raw)
		}
		q := a.num("credits_quoted")
		if 2*q > funds || 3*q <= funds {
			t.Fatalf("quote %d: the test needs two jobs covered by %d credits and not three", q, funds)
		}
		h.waitStarted(1)
		// b and c wait, each covered by the balance a left; b's charge at its turn leaves too
		// little for c's.
		b, c := submit("ok-b"), submit("ok-c")
		for _, r := range []resp{b, c} {
			if r.Code != 200 || r.str("status") != "IN_QUEUE" {
				t.Fatalf("queued: %d %s", r.Code, r.Raw)
			}
		}
		h.runner.Release()
		if j := h.waitSettled(b.str("request_id")); j.Outcome != jobs.Succeeded {
			t.Fatalf("b: %s %s, want succeeded", j.Outcome, j.ErrorCode)
		}
		j := h.waitSettled(c.str("request_id"))
		if j.Outcome != jobs.Failed || j.ErrorCode != "insufficient_credits" || j.Charged != 0 {
			t.Fatalf("c at its turn: %s %s charged %d, want failed insufficient_credits", j.Outcome, j.ErrorCode, j.Charged)
		}
		rr := h.callKey(key, http.MethodGet, c.str("response_url"), "")
		if rr.Code != 402 || rr.str("error") != "insufficient_credits" || rr.Body["charged"] != "no" {
			t.Fatalf("result of c: %d %s", rr.Code, rr.Raw)
		}
		left := funds - 2*q
		if rr.num("required") != q || rr.num("balance") != left {
			t.Errorf("result of c carries required %v, balance %v, want %d and %d: %s", rr.Body["required"], rr.Body["balance"], q, left, rr.Raw)
		}
		if got := h.balanceOf(acct); got != left {
			t.Errorf("balance %d, want %d", got, left)
		}
	})
}
