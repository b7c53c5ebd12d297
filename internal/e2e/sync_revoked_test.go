package e2e_test

import (
	"context"
	"log/slog"
	"net/http"
	"testing"

	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/runners"
)

// withFiles is the control runner whose finished runs wrote an output file: a synchronous
// answer then signs a link to it through the egress check, which reads the key afresh.
type withFiles struct{ runners.Runner }

func (r withFiles) Run(ctx context.Context, j runners.Job, env runners.Env) (runners.Result, error) {
	res, err := r.Runner.Run(ctx, j, env)
	if err == nil && res.Document != nil {
		res.Files = []runners.File{{Key: "out/" + j.RequestID + ".png", ContentType: "image/png", Bytes: 2048}}
	}
	return res, err
}

// TestERR03_SyncRunRevokedMidRunSaysItsChargeStands: a synchronous run whose key is revoked
// elsewhere while it runs was charged, and its links are then refused (key_revoked). The gate
// let the key through from its cache (a request just before warmed it), so the refusal after
// the run must not be replaced by a fresh read of the key: the answer says charged "stands",
// retry "poll_first" (x-should-retry: false) and names the status and result URLs, never
// charged "no", as it does for a key the cache did not hold (spec 02 "Error body"; README: a
// synchronous run whose links are refused answers charged "stands", retry "poll_first").
func TestERR03_SyncRunRevokedMidRunSaysItsChargeStands(t *testing.T) {
	each(t, options{runner: func(r runners.Runner) runners.Runner { return withFiles{r} }}, func(t *testing.T, h *harness) {
		ctx := context.Background()
		// Another process over the same database (the CLI): its revocation does not reach
		// h.auth's cache.
		cli := auth.NewService(h.db, auth.Format{Prefix: "svc_sk_"}, auth.NewHasher(secret), h.clock.Now, slog.New(slog.DiscardHandler))
		m, err := h.auth.Mint(ctx, auth.MintParams{AccountID: h.account})
		if err != nil {
			t.Fatal(err)
		}
		url := h.sync.URL + "/svc-serverless/" + mFast
		if warm := h.callKey(m.Key, http.MethodPost, url, `{"positivePrompt":"ok"}`); warm.Code != http.StatusOK {
			t.Fatalf("warm-up run: %d %s", warm.Code, warm.Raw)
		}
		h.waitStarted(1)
		before := h.balance()

		answered := make(chan resp, 1)
		go func() { answered <- h.callKey(m.Key, http.MethodPost, url, `{"positivePrompt":"block"}`) }()
		id := h.waitStarted(1)[0] // charged and running
		if _, err := cli.Revoke(ctx, m.Key[len("svc_sk_"):len("svc_sk_")+12]); err != nil {
			t.Fatal(err)
		}
		h.runner.Release()
		r := <-answered

		if r.Code != http.StatusUnauthorized || r.str("error") != "key_revoked" {
			t.Fatalf("want 401 key_revoked for the links, got %d %s", r.Code, r.Raw)
		}
		if r.str("charged") != "stands" || r.str("retry") != "poll_first" || r.Header.Get("x-should-retry") != "false" ||
			r.str("status_url") == "" || r.str("response_url") == "" {
			t.Fatalf("a run charged before its key was revoked must say its charge stands and where to read it: %v %s", r.Header, r.Raw)
		}
		j := h.waitSettled(id)
		if j.Charged <= 0 || h.balance() != before-j.Charged {
			t.Fatalf("job charged %d, balance %d (was %d): the run was charged", j.Charged, h.balance(), before)
		}
	})
}
