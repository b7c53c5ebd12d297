package webhooks

import (
	"context"
	"time"

	"github.com/modelexec/modelexec/internal/batch"
)

// The attempt recorder is the engine's batcher of attempt records: the outcomes that the
// engine's senders finish at one moment, and the attempts they made counted against their
// hosts, are written in one transaction (Store.RecordAttempts).
// A sender waits for its own record before it sends its endpoint's next delivery, so the
// endpoint's state (disabled after ten failures, dead after a 410) is known before the next
// attempt, as when each record was written alone.

// recording is one attempt's record waiting for its batch.
type recording struct {
	ctx    context.Context
	p      AttemptParams
	host   string // the host an attempt went to; "" when nothing was sent
	failed bool   // the attempt did not get a 2xx
	done   chan recorded
}

// outcome is what recording an attempt left: its delivery's endpoint after the change, and
// its host's pause as counted with it.
type outcome struct {
	Recorded
	hostPausedUntil time.Time // zero: not paused (or nothing was sent)
}

type recorded struct {
	outcome
	err error
}

func (e *Engine) newRecorder() *batch.Batcher[*recording] {
	return batch.New(e.cfg.RecordBatch, func(r *recording) string { return r.p.DeliveryID }, e.writeRecords)
}

// record writes p through the recorder and answers what it left; host names the host an
// attempt went to ("" for no attempt).
func (e *Engine) record(ctx context.Context, p AttemptParams, host string, failed bool) (outcome, error) {
	if p.Status == DeliveryScheduled {
		e.dueAt(p.NextAttemptAt) // a retry, a host's pause, a release
	}
	r := &recording{ctx: ctx, p: p, host: host, failed: failed, done: make(chan recorded, 1)}
	e.recorder.Do(r)
	select {
	case got := <-r.done:
		return got.outcome, got.err
	case <-ctx.Done():
		return outcome{}, ctx.Err()
	}
}

// writeRecords writes a batch of records, counts its attempts against their hosts, and answers
// each record. The batch's work outlives a caller that gives up: the first record's context,
// without its cancellation, carries it.
func (e *Engine) writeRecords(rs []*recording) {
	ctx := context.WithoutCancel(rs[0].ctx)
	ps := make([]AttemptParams, len(rs))
	var tallies []HostTally
	at := map[string]int{}
	var now time.Time
	for i, r := range rs {
		ps[i] = r.p
		if r.p.Now.After(now) {
			now = r.p.Now
		}
		if r.host == "" {
			continue
		}
		j, ok := at[r.host]
		if !ok {
			j = len(tallies)
			at[r.host] = j
			tallies = append(tallies, HostTally{Host: r.host})
		}
		tallies[j].Attempts++
		if r.failed {
			tallies[j].Failures++
		}
	}
	// The records and the hosts' counts go in one transaction; a sender's next attempt to a
	// host waits for it, so it knows of a pause these attempts started.
	got, err := e.cfg.Store.RecordAttempts(ctx, AttemptBatch{Now: now, Attempts: ps, Hosts: tallies})
	for i, r := range rs {
		var res recorded
		if err != nil {
			res.err = err
		} else {
			res.Recorded = got.Attempts[i]
			if j, ok := at[r.host]; ok {
				res.hostPausedUntil = got.HostPausedUntil[j]
			}
		}
		r.done <- res
	}
}
