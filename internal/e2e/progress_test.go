package e2e_test

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/jobs"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
)

// TestI26_ProgressAcrossProcesses: a job runs on a worker process while its caller holds a
// status stream (logs=1) on a front process. The runner's log line reaches the stream while
// the job still runs (a Progressed notice after the worker wrote it), though the worker here
// heartbeats, and so writes progress on its own, only once an hour. Over PostgreSQL's
// notices, then over Redis's.
func TestI26_ProgressAcrossProcesses(t *testing.T) {
	t.Run("listen-notify", func(t *testing.T) { progressAcrossProcesses(t, "") })
	t.Run("redis", func(t *testing.T) { progressAcrossProcesses(t, testRedis(t)) })
}

func progressAcrossProcesses(t *testing.T, redisURL string) {
	each(t, options{}, func(t *testing.T, h *harness) {
		if h.db.Dialect() != sqlstore.Postgres {
			t.Skip("notices between processes travel through PostgreSQL or Redis, over a PostgreSQL database")
		}
		frontURL, frontSrv, newWorker := splitDeployment(t, h, redisURL)
		worker := newWorker(func(c *jobs.Config) { c.HeartbeatEvery = time.Hour })
		runHearing(t, h, redisURL, frontSrv, worker)

		r := h.call(http.MethodPost, frontURL+"/svc-serverless/"+mFast, `{"positivePrompt":"hold progress"}`)
		if r.Code != http.StatusOK {
			t.Fatalf("submit: %d %s", r.Code, r.Raw)
		}
		id := r.str("request_id")
		events := streamEvents(t, t.Context(), h.key, r.str("status_url")+"/stream?logs=1")
		deadline := time.After(10 * time.Second)
		for seen := false; !seen; {
			select {
			case ev := <-events:
				seen = strings.Contains(ev, `"IN_PROGRESS"`) && strings.Contains(ev, "running hold progress")
			case <-deadline:
				j := h.job(id)
				t.Fatalf("the runner's log never reached the stream on the front process while the job ran (job %s, stored logs %v)", j.Status, j.Logs)
			}
		}
		if cn := h.call(http.MethodPut, r.str("cancel_url"), ""); cn.Code != http.StatusOK {
			t.Fatalf("cancel: %d %s", cn.Code, cn.Raw)
		}
		h.waitSettled(id)
	})
}

// streamEvents opens a status stream and sends each event's data on the channel until ctx
// ends or the stream closes.
func streamEvents(t *testing.T, ctx context.Context, key, url string) <-chan string {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK {
		res.Body.Close()
		t.Fatalf("status stream: %d", res.StatusCode)
	}
	out := make(chan string, 64)
	go func() {
		defer res.Body.Close()
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				select {
				case out <- data:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return out
}
