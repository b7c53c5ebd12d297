package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/modelexec/modelexec/internal/jobs"
	"github.com/modelexec/modelexec/internal/server"
	"github.com/modelexec/modelexec/internal/store/postgres"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
)

// TestI26_NoticesBetweenProcesses: processes over one PostgreSQL database tell each other of
// hand-offs and settlements (LISTEN/NOTIFY). Jobs handed off by an API-only process start on a
// worker process at once, though the worker here looks for hand-offs on its own only once an
// hour; a request held on the API process answers with the settlement the worker made; and a
// cancel asked on the API process stops the run on the worker at once.
func TestI26_NoticesBetweenProcesses(t *testing.T) { noticesBetweenProcesses(t, "") }

// TestI26_NoticesThroughRedis: the same, with --redis given: the notices travel through Redis
// pub/sub, which wins over PostgreSQL's LISTEN/NOTIFY (no process listens on the database).
func TestI26_NoticesThroughRedis(t *testing.T) { noticesBetweenProcesses(t, testRedis(t)) }

// splitDeployment stops the harness's own process and starts a front process (api, queue and
// sync roles) behind a test server of its own, as a split deployment runs one; redisURL, when
// set, carries the notices. It answers the front's URL, the front, and a maker of worker
// processes (worker role) sharing its figures, each with its own jobs configuration.
func splitDeployment(t *testing.T, h *harness, redisURL string) (string, *server.Server, func(func(*jobs.Config)) *server.Server) {
	t.Helper()
	h.stopWorker() // the harness's own process plays no part
	var queueH http.Handler
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { queueH.ServeHTTP(w, r) }))
	t.Cleanup(api.Close)
	frontRoles, _ := server.ParseRoles("api,queue,sync")
	workerRoles, _ := server.ParseRoles("worker")
	cfg := server.Config{Roles: frontRoles, PublicURLQueue: api.URL, PublicURLSync: api.URL, Redis: redisURL}
	front := h.newServer(cfg, nil, nil, nil)
	queueH = front.Handler(server.RoleQueue)
	cfg.Roles = workerRoles
	return api.URL, front, func(jobsCfg func(*jobs.Config)) *server.Server { return h.newServer(cfg, nil, jobsCfg, nil) }
}

// runHearing runs the servers' job engines until the test ends, once each hears the others'
// notices: through PostgreSQL's LISTEN, or Redis's subscription when redisURL is set.
func runHearing(t *testing.T, h *harness, redisURL string, servers ...*server.Server) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, len(servers))
	for _, s := range servers {
		go func() { _ = s.Jobs().Run(ctx); done <- struct{}{} }()
	}
	t.Cleanup(func() {
		cancel()
		for range servers {
			<-done
		}
	})
	if redisURL == "" {
		waitForListeners(t, h.db, len(servers))
	} else {
		waitForSubscribers(t, redisURL, server.NoticeChannel(secret), int64(len(servers)))
	}
}

// testRedis is MODELEXEC_TEST_REDIS; the test is skipped without it (and fails under CI=true,
// where .ci/run starts Redis).
func testRedis(t *testing.T) string {
	u := os.Getenv("MODELEXEC_TEST_REDIS")
	if u == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("MODELEXEC_TEST_REDIS is not set under CI=true")
		}
		t.Skip("MODELEXEC_TEST_REDIS not set; skipping")
	}
	return u
}

func noticesBetweenProcesses(t *testing.T, redisURL string) {
	each(t, options{}, func(t *testing.T, h *harness) {
		if h.db.Dialect() != sqlstore.Postgres {
			t.Skip("notices between processes travel through PostgreSQL or Redis, over a PostgreSQL database")
		}
		apiURL, apiSrv, newWorker := splitDeployment(t, h, redisURL)
		lazy := func(c *jobs.Config) { c.PollEvery, c.SweepEvery, c.HeartbeatEvery = time.Hour, time.Hour, time.Hour }
		worker := newWorker(lazy)
		runHearing(t, h, redisURL, apiSrv, worker)
		if redisURL != "" {
			if n := listeners(t, h.db); n != 0 {
				t.Fatalf("%d sessions LISTEN on PostgreSQL though Redis carries the notices", n)
			}
		}

		for i := range 3 {
			r := h.call(http.MethodPost, apiURL+"/svc-serverless/"+mFast, fmt.Sprintf(`{"positivePrompt":"ok %d"}`, i))
			if r.Code != http.StatusOK || r.str("status") != "IN_QUEUE" {
				t.Fatalf("hand-off %d: %d %s", i, r.Code, r.Raw)
			}
			if j := h.waitSettled(r.str("request_id")); j.Outcome != jobs.Succeeded || j.Attempts != 1 {
				t.Fatalf("hand-off %d on the worker: %+v", i, j)
			}
		}
		// A request held on the API process: its answer is the worker's settlement.
		r := h.call(http.MethodPost, apiURL+"/svc-serverless/"+mFast+"?wait=20", `{"positivePrompt":"held"}`)
		if r.Code != http.StatusOK || r.str("status") != "COMPLETED" {
			t.Fatalf("held submit: %d %s", r.Code, r.Raw)
		}
		// A cancel asked on the API process stops the run on the worker (whose heartbeat, which
		// would also bring it, comes once an hour here), and answers the cancelled job.
		r = h.call(http.MethodPost, apiURL+"/svc-serverless/"+mFast, `{"positivePrompt":"hold on"}`)
		for deadline := time.Now().Add(10 * time.Second); h.job(r.str("request_id")).Status != jobs.InProgress; {
			if time.Now().After(deadline) {
				t.Fatal("the handed-off run never started on the worker")
			}
			time.Sleep(time.Millisecond) // polling a condition; no outcome depends on the time
		}
		if cn := h.call(http.MethodPut, r.str("cancel_url"), ""); cn.Code != http.StatusOK {
			t.Fatalf("cancel of a run on another process: %d %s", cn.Code, cn.Raw)
		}
		if j := h.waitSettled(r.str("request_id")); j.Outcome != jobs.Cancelled {
			t.Fatalf("cancelled run: %+v", j)
		}
	})
}

// waitForListeners returns once n sessions listen on db's notice channel.
func waitForListeners(t *testing.T, db *sqlstore.DB, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if listeners(t, db) >= n {
			return
		}
		time.Sleep(time.Millisecond) // polling a condition; no outcome depends on the time
	}
	t.Fatalf("fewer than %d processes listen for notices", n)
}

// listeners counts the sessions that LISTEN on db's notice channel: this test's processes, not
// those of other tests sharing the database.
func listeners(t *testing.T, db *sqlstore.DB) int {
	t.Helper()
	var listening int
	if err := db.SQL().QueryRowContext(context.Background(), `SELECT count(*) FROM pg_stat_activity
 WHERE datname = current_database() AND query = 'LISTEN "' || $1 || '"'`, postgres.NoticeChannel(db)).Scan(&listening); err != nil {
		t.Fatal(err)
	}
	return listening
}

// waitForSubscribers returns once Redis counts n subscribers on channel.
func waitForSubscribers(t *testing.T, redisURL, channel string, n int64) {
	t.Helper()
	opt, err := redis.ParseURL(redisURL)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		counts, err := rdb.PubSubNumSub(context.Background(), channel).Result()
		if err != nil {
			t.Fatal(err)
		}
		if counts[channel] >= n {
			return
		}
		time.Sleep(time.Millisecond) // polling a condition; no outcome depends on the time
	}
	t.Fatalf("fewer than %d processes subscribe to %s", n, channel)
}

// TestI26_FrontProcessHearsNotices: a process without the worker role, wired as `serve` wires
// it (its background work started by RunWorkers), listens for the other processes' notices,
// so a request it holds is answered when a worker settles the job, not at its next poll.
func TestI26_FrontProcessHearsNotices(t *testing.T) {
	each(t, options{}, func(t *testing.T, h *harness) {
		if h.db.Dialect() != sqlstore.Postgres {
			t.Skip("notices between processes travel through PostgreSQL or Redis, over a PostgreSQL database")
		}
		apiURL, front, newWorker := splitDeployment(t, h, "")
		worker := newWorker(nil)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{}, 2)
		for _, s := range []*server.Server{front, worker} {
			go func() { _ = s.RunWorkers(ctx); done <- struct{}{} }()
		}
		defer func() { cancel(); <-done; <-done }()
		waitForListeners(t, h.db, 2)
		r := h.call(http.MethodPost, apiURL+"/svc-serverless/"+mFast+"?wait=20", `{"positivePrompt":"held on the front"}`)
		if r.Code != http.StatusOK || r.str("status") != "COMPLETED" {
			t.Fatalf("held submit on the front: %d %s", r.Code, r.Raw)
		}
	})
}

// TestI26_DrainingWorkerTakesNoWork: a worker that drains (Quiesce, the first step of its
// stop) takes no hand-off, though it hears of it at once: the job waits for a worker that
// does not drain, which runs it.
func TestI26_DrainingWorkerTakesNoWork(t *testing.T) {
	each(t, options{}, func(t *testing.T, h *harness) {
		if h.db.Dialect() != sqlstore.Postgres {
			t.Skip("notices between processes travel through PostgreSQL or Redis, over a PostgreSQL database")
		}
		apiURL, front, newWorker := splitDeployment(t, h, "")
		named := func(owner string) func(*jobs.Config) { return func(c *jobs.Config) { c.Owner = owner } }
		draining := newWorker(named("proc_draining"))
		draining.Jobs().Quiesce()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan struct{}, 3)
		run := func(s *server.Server) { go func() { _ = s.RunWorkers(ctx); done <- struct{}{} }() }
		run(front)
		run(draining)
		waitForListeners(t, h.db, 2)

		r := h.call(http.MethodPost, apiURL+"/svc-serverless/"+mFast, `{"positivePrompt":"handed off while a worker drains"}`)
		if r.Code != http.StatusOK || r.str("status") != "IN_QUEUE" {
			t.Fatalf("hand-off: %d %s", r.Code, r.Raw)
		}
		run(newWorker(named("proc_live")))
		j := h.waitSettled(r.str("request_id"))
		var ran string
		for _, l := range j.Logs {
			if _, owner, ok := strings.Cut(l.Message, " started on "); ok {
				ran = owner
			}
		}
		if j.Outcome != jobs.Succeeded || ran != "proc_live" {
			t.Fatalf("job %s ran on %q, want the worker that does not drain", j.Outcome, ran)
		}
		cancel()
		<-done
		<-done
		<-done
	})
}
