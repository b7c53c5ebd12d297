package jobs

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/modelexec/modelexec/internal/ledger"
	"github.com/modelexec/modelexec/internal/runners"
)

// A request held until its job settles (?wait, the sync host, a cancel) used to read the job
// from the database twice: once when it began to wait and once when the broker said the job
// changed. When the job runs in this process, the run itself hands the committed settlement
// to its waiters: no read at all.

// keepSettled records the job as its settlement committed it, for the waiters of a job that
// runs in this process and for later reads (finals).
func (s *Service) keepSettled(requestID string, j Job) {
	j = asStored(j)
	s.finals.keep(j)
	s.mu.Lock()
	rj := s.running[requestID]
	s.mu.Unlock()
	if rj == nil {
		return
	}
	rj.mu.Lock()
	rj.settled = &j
	rj.mu.Unlock()
}

// asStored gives the job as a read from the store would: times at the store's precision, in
// UTC, and the documents the runner returned as JSON values (a read decodes them from JSON).
func asStored(j Job) Job {
	micros := func(t *time.Time) *time.Time {
		if t == nil {
			return nil
		}
		v := t.Truncate(time.Microsecond).UTC()
		return &v
	}
	j.FinishedAt, j.StartedAt, j.StartBy, j.LeaseUntil = micros(j.FinishedAt), micros(j.StartedAt), micros(j.StartBy), micros(j.LeaseUntil)
	j.CreatedAt = *micros(&j.CreatedAt)
	if j.Coverage != nil {
		var c ledger.Coverage
		if b, err := json.Marshal(j.Coverage); err == nil && json.Unmarshal(b, &c) == nil {
			j.Coverage = &c
		}
	}
	if j.Result != nil {
		var r runners.Result
		if b, err := json.Marshal(j.Result); err == nil && json.Unmarshal(b, &r) == nil {
			j.Result = &r
		}
	}
	if len(j.ErrorFields) > 0 {
		var f map[string]any
		if b, err := json.Marshal(j.ErrorFields); err == nil && json.Unmarshal(b, &f) == nil {
			j.ErrorFields = f
		}
	}
	if len(j.ErrorDetail) > 0 {
		var d []runners.Violation
		if b, err := json.Marshal(j.ErrorDetail); err == nil && json.Unmarshal(b, &d) == nil {
			j.ErrorDetail = d
		}
	}
	return j
}

// waitRunning is Wait for a job running in this process: it waits for the run's end and
// answers the settlement the run committed. ok is false when the job does not run here, or
// its run ended without a settlement, or the run outlasted one poll interval (the caller then
// reads and polls the store).
func (s *Service) waitRunning(ctx context.Context, accountID, requestID string, deadline, poll <-chan time.Time) (j Job, timedOut, ok bool, err error) {
	s.mu.Lock()
	rj := s.running[requestID]
	s.mu.Unlock()
	if rj == nil || rj.job.AccountID != accountID {
		return Job{}, false, false, nil
	}
	select {
	case <-rj.done:
		rj.mu.Lock()
		settled := rj.settled
		rj.mu.Unlock()
		if settled == nil {
			return Job{}, false, false, nil
		}
		return *settled, false, true, nil
	case <-ctx.Done():
		// The caller is gone or out of time: answer the job as it stands.
		j, err := s.Get(context.WithoutCancel(ctx), accountID, requestID)
		if err != nil {
			return Job{}, false, true, err
		}
		return j, true, true, ctx.Err()
	case <-poll:
		// A long run: go on as for a job of another process (read, and poll the store), so a
		// settlement made elsewhere is seen.
		return Job{}, false, false, nil
	case <-deadline:
		j, err := s.Get(ctx, accountID, requestID)
		if err != nil {
			return Job{}, false, true, err
		}
		return j, !j.Settled(), true, nil
	}
}

// A settled job never changes again (COMPLETED is final, and nothing rewrites or deletes a
// settled row), so a read of one may be answered from memory: the status poll that sees
// COMPLETED and the result read that follows it read nothing when this process settled the
// job or read it settled before, and such reads come within seconds of the settlement. The
// memory is bounded twice: the most recent settledKept jobs, holding at most settledBytes of
// heap together (an image job holds about 3 KiB: some 1,300 jobs); a job that alone holds
// more than settledBytes/64 is not kept (its reads go to the store), so requests with large
// inputs cannot fill the memory with what they sent.
const (
	settledKept  = 2048
	settledBytes = 4 << 20
)

// finals holds recently settled jobs by request id, oldest evicted first.
type finals struct {
	mu    sync.Mutex
	jobs  map[string]keptJob
	order []string // request ids, oldest first from head
	head  int
	bytes int // held by the jobs kept
}

type keptJob struct {
	job  Job
	size int
}

func newFinals() *finals {
	return &finals{jobs: make(map[string]keptJob)}
}

// get answers the settled job with request id id, if kept.
func (f *finals) get(id string) (Job, bool) {
	f.mu.Lock()
	k, ok := f.jobs[id]
	f.mu.Unlock()
	return k.job, ok
}

// keep remembers j, which must be settled and as a read answers it.
func (f *finals) keep(j Job) {
	if !j.Settled() {
		return
	}
	j.BalanceAfter = nil // known to the request that waited on the job, not to later reads
	size := heldBytes(j)
	f.mu.Lock()
	defer f.mu.Unlock()
	if old, ok := f.jobs[j.RequestID]; ok {
		f.bytes += size - old.size
		f.jobs[j.RequestID] = keptJob{j, size}
		f.evict()
		return
	}
	if size > settledBytes/64 {
		return
	}
	f.order = append(f.order, j.RequestID)
	f.jobs[j.RequestID] = keptJob{j, size}
	f.bytes += size
	f.evict()
}

// evict drops the oldest jobs while more are kept, or more bytes held, than the bounds allow.
func (f *finals) evict() {
	for len(f.jobs) > settledKept || f.bytes > settledBytes {
		id := f.order[f.head]
		f.head++
		if k, ok := f.jobs[id]; ok {
			f.bytes -= k.size
			delete(f.jobs, id)
		}
	}
	if f.head > settledKept && f.head*2 > len(f.order) {
		f.order = append(f.order[:0:0], f.order[f.head:]...)
		f.head = 0
	}
}

// heldBytes estimates the heap j holds while kept: the job itself, stored by value in the
// map with its pointed-to times and its identifiers (jobBytes), its input, its result's
// document, files and metrics, its error, its logs and its metrics. The figures follow Go's
// layout (a map's slots in groups of eight with their control bytes, a value in an interface
// boxed on the heap), so that the byte bound is a bound on memory
// (TestSettledJobsHeapWithinBytes measures it).
func heldBytes(j Job) int {
	n := jobBytes + len(j.Input) + len(j.ErrorMessage) + metricsBytes(j.Metrics)
	for _, l := range j.Logs {
		n += 96 + len(l.Message) + len(l.Level) + len(l.Source)
	}
	for _, v := range j.ErrorDetail {
		n += 96 + len(v.Msg) + len(v.Type)
	}
	if r := j.Result; r != nil {
		n += 96 + valueBytes(r.Document) + metricsBytes(r.Metrics)
		for _, f := range r.Files {
			n += 48 + len(f.Key) + len(f.ContentType)
		}
	}
	return n
}

// jobBytes is what a kept job holds whatever its contents: the Job value in the map's slot
// (about 480 bytes, a slot of a map about a third empty on average), its key in the order of
// eviction, its four times and its identifiers.
const jobBytes = 1024

// metricsBytes estimates a map[string]float64: its header and, per entry, a slot (key header,
// value, control byte, room left in its group) and the key's bytes.
func metricsBytes(m map[string]float64) int {
	if m == nil {
		return 0
	}
	n := 64
	for k := range m {
		n += 40 + len(k)
	}
	return n
}

// valueBytes estimates the memory a decoded JSON value holds: a map's header and a slot per
// entry (a key and an interface, with room left in its group), an array's backing, and a
// scalar boxed in its interface.
func valueBytes(v any) int {
	switch v := v.(type) {
	case string:
		return 16 + len(v)
	case json.Number:
		// A stored result's numbers are kept as written (runners.Result): the string's
		// header, boxed, and its digits, with the allocator's rounding.
		return 32 + (len(v)+7)&^7
	case map[string]any:
		n := 64
		for k, x := range v {
			n += 40 + len(k) + valueBytes(x)
		}
		return n
	case []any:
		n := 24
		for _, x := range v {
			n += 16 + valueBytes(x)
		}
		return n
	}
	return 16
}
