package server

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/modelexec/modelexec/internal/accountapi"
)

// errDraining is /readyz's reason while the process drains.
var errDraining = errors.New("the process is draining before it stops")

// drainer is the readiness check that fails from the moment the process begins to drain.
type drainer struct{ on atomic.Bool }

// Ping answers errDraining once the process drains (accountapi.Pinger).
func (d *drainer) Ping(context.Context) error {
	if d.on.Load() {
		return errDraining
	}
	return nil
}

// ReadyName names the check in /readyz's answer.
func (*drainer) ReadyName() string { return accountapi.ReadyDraining }

// drain is the first step of a graceful stop: /readyz answers 503, every answer from now on
// closes its connection (so the balancer's kept-alive connections do not outlive the
// process), the jobs engine takes no more work from the database, and, for a process that
// serves HTTP, the listeners stay open for DrainDelay while the balancer notices.
func (s *Server) drain(servers []*http.Server) {
	s.draining.on.Store(true)
	for _, hs := range servers {
		hs.SetKeepAlivesEnabled(false)
	}
	s.jobs.Quiesce()
	delay := s.cfg.DrainDelay
	if len(servers) == 0 || delay <= 0 {
		return
	}
	s.log.Info("draining: /readyz answers 503 before the listeners close", "delay", delay.String())
	t := time.NewTimer(delay)
	defer t.Stop()
	<-t.C
}

// readyCheck gives a dependency the name /readyz answers when it does not answer.
type readyCheck struct {
	accountapi.Pinger
	name string
}

func (c readyCheck) ReadyName() string { return c.name }

// readiness is /readyz's checks in order: the drain, the database, the storage, and Redis when
// the process uses it (its rate limits and seats: without it every keyed request is refused).
func readiness(draining *drainer, db readyCheck, storage accountapi.Pinger, rdb *redis.Client) []accountapi.Pinger {
	checks := []accountapi.Pinger{draining, db, storage}
	if rdb != nil {
		checks = append(checks, readyCheck{redisPing{rdb}, "redis"})
	}
	return checks
}

type redisPing struct{ rdb *redis.Client }

func (p redisPing) Ping(ctx context.Context) error { return p.rdb.Ping(ctx).Err() }
