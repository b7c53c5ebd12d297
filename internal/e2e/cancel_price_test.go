package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/modelexec/modelexec/internal/runners"
)

// stopsAfter runs the control runner and, when the run is stopped, reports the steps its
// prompt names done ("hold 42": 42 of the input's steps), as the image runners do
// (Done = steps done / steps).
type stopsAfter struct{ inner runners.Runner }

func (r stopsAfter) Run(ctx context.Context, j runners.Job, env runners.Env) (runners.Result, error) {
	res, err := r.inner.Run(ctx, j, env)
	var in struct {
		Prompt string `json:"positivePrompt"`
		Steps  int    `json:"steps"`
	}
	var done int
	if err != nil && json.Unmarshal(j.Input, &in) == nil && in.Steps > 0 {
		if _, scan := fmt.Sscanf(in.Prompt, "hold %d", &done); scan == nil {
			res.Done = float64(done) / float64(in.Steps)
		}
	}
	return res, err
}

// TestPRICE10_CancelChargesTheWorkDoneRoundedOnce: a running job cancelled part way is
// charged the exact price of its quoted work times the share done, rounded up once, never
// above the quote (DESIGN 29, 30): image-4b at 2048×2048 and 50 steps is quoted 10 credits
// (9.5233…); 42 steps cost 2048×2048×42/28/1e6 × 1.2715 = 7.9996…, so 8 credits, not the 9 of
// the rounded quote times 42/50. The cancel's answer, the job and the ledger agree.
// Proves PRICE-02, PRICE-10, READ-03.
func TestPRICE10_CancelChargesTheWorkDoneRoundedOnce(t *testing.T) {
	each(t, options{runner: func(r runners.Runner) runners.Runner { return stopsAfter{r} }}, func(t *testing.T, h *harness) {
		for _, c := range []struct {
			steps  int
			charge int64
		}{{42, 8}, {21, 4}, {46, 9}, {47, 9}, {25, 5}} {
			before := h.balance()
			r := h.submit("image-4b", "", fmt.Sprintf(`{"positivePrompt":"hold %d","width":2048,"height":2048,"steps":50}`, c.steps))
			if r.Code != 200 || r.num("credits_quoted") != 10 {
				t.Fatalf("submit: %d %s", r.Code, r.Raw)
			}
			h.waitStarted(1)
			cn := h.call(http.MethodPut, r.str("cancel_url"), "")
			if cn.Code != 200 || cn.str("status") != "CANCELLED" {
				t.Fatalf("cancel: %d %s", cn.Code, cn.Raw)
			}
			if cn.num("credits_charged") != c.charge || cn.num("credits_refunded") != 10-c.charge {
				t.Errorf("%d of 50 steps: cancel answered %s; want %d charged, %d refunded", c.steps, cn.Raw, c.charge, 10-c.charge)
			}
			if got := h.balance(); got != before-c.charge {
				t.Errorf("%d of 50 steps: balance %d, want %d", c.steps, got, before-c.charge)
			}
			if j := h.job(r.str("request_id")); j.Charged != c.charge {
				t.Errorf("%d of 50 steps: job charged %d, want %d", c.steps, j.Charged, c.charge)
			}
		}
	})
}
