package webhooks_test

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
	"github.com/modelexec/modelexec/internal/store/storetest"
	"github.com/modelexec/modelexec/internal/webhooks"
)

// BenchmarkDeliveriesPostgres measures signed webhook deliveries a second on PostgreSQL with
// two delivery engines over one database (two processes of a service, each its own sender and
// key ring), sending to an HTTPS receiver on loopback: 40 accounts with 5 endpoints each and
// 400 settled jobs, each delivered to its account's five endpoints (2,000 deliveries), every
// endpoint's deliveries in order, one at a time. The engines run as a service's do
// (Engine.Run: a sweep again as soon as one that claimed deliveries ends, the attempts' records
// written together). A destination host takes at most 2,000 deliveries an hour (spec 02), so
// each iteration starts afresh: a new database and receiver, set up off the clock.
//
//	go test -run '^$' -bench DeliveriesPostgres -benchtime 3x ./internal/webhooks
func BenchmarkDeliveriesPostgres(b *testing.B) {
	var sent int64
	var took time.Duration
	for range b.N {
		b.StopTimer()
		rcv, svcs := benchDeployment(b)
		b.StartTimer()
		start := time.Now()
		benchDeliver(b, rcv, svcs)
		took += time.Since(start)
		sent += rcv.events.Load()
	}
	b.ReportMetric(float64(sent)/took.Seconds(), "deliveries/s")
}

const benchAccounts, benchEndpoints, benchJobCount = 40, 5, 400

// benchDeployment is a fresh database with two processes' webhook services and the endpoints
// of benchAccounts accounts, registered (challenged) at the receiver.
func benchDeployment(b *testing.B) (*benchReceiver, []*webhooks.Service) {
	db := storetest.OpenPostgres(b)
	rcv := newBenchReceiver(b)
	svcs := []*webhooks.Service{benchService(b, db, rcv), benchService(b, db, rcv)}
	for a := range benchAccounts {
		acct := fmt.Sprintf("acct_wh_%02d", a)
		storetest.NewAccount(b, db, acct, auth.Pro, 0)
		for range benchEndpoints {
			reg, err := svcs[a%2].Register(context.Background(), webhooks.RegisterParams{Account: acct, URL: rcv.srv.URL + "/hook"})
			if err != nil || !reg.Passed {
				b.Fatalf("register: %+v %v", reg, err)
			}
		}
	}
	return rcv, svcs
}

// benchDeliver notifies benchJobCount settled jobs and runs both engines until every delivery
// arrived.
func benchDeliver(b *testing.B, rcv *benchReceiver, svcs []*webhooks.Service) {
	ctx := context.Background()
	want := int64(benchJobCount * benchEndpoints)
	evs := make([]webhooks.JobEvent, benchJobCount)
	for j := range evs {
		charged, n := int64(10), benchJobs.Add(1)
		evs[j] = webhooks.JobEvent{JobID: fmt.Sprintf("photo_b%d", n), RequestID: fmt.Sprintf("req-b%d", n),
			Account: fmt.Sprintf("acct_wh_%02d", j%benchAccounts), Product: "photo", Status: webhooks.JobSucceeded,
			CreditsCharged: &charged, CreditsReserved: &charged, SettledAt: time.Now()}
	}
	if _, err := svcs[0].NotifyAll(ctx, evs); err != nil {
		b.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, s := range svcs {
		wg.Go(func() {
			if err := s.Engine().Run(runCtx); err != nil {
				b.Error(err)
			}
		})
	}
	for deadline := time.Now().Add(2 * time.Minute); rcv.events.Load() < want && time.Now().Before(deadline); {
		select {
		case <-rcv.arrived:
		case <-time.After(time.Second):
		}
	}
	stop()
	wg.Wait()
	if got := rcv.events.Load(); got < want {
		b.Fatalf("%d deliveries arrived, want %d", got, want)
	}
}

// benchWorkers is each engine's senders (webhooks.DefaultWorkers unless changed to compare).
var benchWorkers = webhooks.DefaultWorkers

// benchJobs numbers the benchmark's jobs across its runs (an event's deliveries are made once).
var benchJobs atomic.Int64

// benchReceiver answers challenges with their nonce and counts the other deliveries.
type benchReceiver struct {
	srv     *httptest.Server
	events  atomic.Int64
	arrived chan struct{} // a delivery arrived
}

func newBenchReceiver(b *testing.B) *benchReceiver {
	rc := &benchReceiver{arrived: make(chan struct{}, 1)}
	rc.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.Header.Get(webhooks.HeaderEvent) == webhooks.EventChallenge {
			var env webhooks.ChallengeEnvelope
			_ = json.Unmarshal(body, &env)
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]string{"nonce": env.Data.Nonce})
			return
		}
		rc.events.Add(1)
		select {
		case rc.arrived <- struct{}{}:
		default:
		}
		_, _ = io.WriteString(w, "ok")
	}))
	rc.srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	b.Cleanup(rc.srv.Close)
	return rc
}

// benchService is one process's webhooks service over db, trusting the receiver's certificate.
func benchService(b *testing.B, db *sqlstore.DB, rcv *benchReceiver) *webhooks.Service {
	policy := webhooks.AllowLoopbackForTests(b)
	roots := x509.NewCertPool()
	roots.AddCert(rcv.srv.Certificate())
	keys, err := webhooks.NewKeyRing(webhooks.KeyRingConfig{Store: sqlstore.WebhookKeys{DB: db}, Secret: []byte("deployment-secret-for-the-bench-0123456789")})
	if err != nil {
		b.Fatal(err)
	}
	svc, err := webhooks.NewService(webhooks.Config{Store: sqlstore.Webhooks{DB: db}, Keys: keys,
		Policy: policy, Sender: webhooks.NewSender(webhooks.SenderConfig{Policy: policy, RootCAs: roots}),
		PublicBaseURL: "https://api.bench.invalid", Workers: benchWorkers})
	if err != nil {
		b.Fatal(err)
	}
	return svc
}
