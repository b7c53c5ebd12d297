package jobs

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/runners"
)

// Issue 30 items 1 and 4: the memory of settled jobs answers reads from memory within its
// bounds: at most settledKept jobs and settledBytes held by their inputs, results and logs, the
// oldest dropped first; a job holding more than settledBytes/64 alone is not kept at all, so
// requests with large inputs cannot fill the process with what they sent.
func TestSettledJobsKeptWithinBounds(t *testing.T) {
	settled := func(i, inputBytes int) Job {
		return Job{RequestID: fmt.Sprint("req-", i), Status: Completed, Outcome: Succeeded,
			Input: []byte(`{"p":"` + strings.Repeat("x", inputBytes) + `"}`)}
	}
	f := newFinals()
	f.keep(settled(0, settledBytes/32))
	if _, ok := f.get("req-0"); ok || f.bytes != 0 {
		t.Fatalf("a job over settledBytes/64 was kept (%d bytes held)", f.bytes)
	}
	const big = settledBytes / 128
	for i := range 200 {
		f.keep(settled(i, big))
	}
	if f.bytes > settledBytes || len(f.jobs) != settledBytes/heldBytes(settled(0, big)) {
		t.Fatalf("%d jobs holding %d bytes, want at most %d bytes", len(f.jobs), f.bytes, settledBytes)
	}
	if _, ok := f.get("req-199"); !ok {
		t.Fatal("the newest job is not kept")
	}
	if _, ok := f.get("req-0"); ok {
		t.Fatal("the oldest job is still kept past the bound")
	}
	g := newFinals()
	for i := range settledKept + 500 {
		g.keep(settled(i, 10))
	}
	if len(g.jobs) != settledKept || len(g.order)-g.head != settledKept {
		t.Fatalf("%d jobs kept (%d in order), want %d", len(g.jobs), len(g.order)-g.head, settledKept)
	}
	if _, ok := g.get(fmt.Sprint("req-", settledKept+499)); !ok {
		t.Fatal("the newest small job is not kept")
	}
}

// TestSettledJobsHeapWithinBytes: the bytes the memory of settled jobs counts are the heap
// its jobs hold. Image jobs as the built-in runners settle them (their input, result document
// with its files and metrics, their logs), kept through the path a settlement takes, hold
// no more of the heap than they are counted for: the byte bound is a bound on memory.
func TestSettledJobsHeapWithinBytes(t *testing.T) {
	const n = 500 // within the bound: about 6 KiB a job
	vector := func(i int) []any {
		v := make([]any, 40)
		for k := range v {
			v[k] = 0.123456789012345 * float64(i*40+k+1)
		}
		return v
	}
	now := time.Now()
	job := func(i int) Job {
		key := fmt.Sprintf("outputs/2026/11/27/photo_k%020d-0.jpg", i)
		return Job{ID: fmt.Sprintf("photo_k%020d", i), AccountID: "acct_0123456789abcdef", KeyID: "key_0123456789ab",
			RequestID: fmt.Sprintf("req_%024x", i), Model: "image-4b", Product: "photo", Status: Completed, Outcome: Succeeded,
			Input:  []byte(fmt.Sprintf(`{"positivePrompt":"a lighthouse at dusk, %d","width":1024,"height":1024,"steps":4,"seed":%d}`, i, i)),
			Quoted: 6, Reserved: 6, Charged: 6, CreatedAt: now, StartedAt: &now, FinishedAt: &now,
			Result: &runners.Result{Document: map[string]any{
				"images": []any{map[string]any{"storage_key": key, "width": 1024, "height": 1024, "content_type": "image/jpeg", "file_size": 312345, "seed": int64(i)}},
				"seed":   int64(i), "prompt": fmt.Sprint("a lighthouse at dusk, ", i), "has_nsfw_concepts": []bool{false},
				"timings": map[string]float64{"inference": 0.42},
				"vector":  vector(i), // numbers kept as written (json.Number) once stored
			}, Files: []runners.File{{Key: key, ContentType: "image/jpeg", Bytes: 312345}},
				Metrics: map[string]float64{"inference_seconds": 0.42, "steps": 4, "megapixels": 1.048576, "output_bytes": 312345}, Done: 1},
			Metrics: map[string]float64{"inference_seconds": 0.42, "steps": 4, "megapixels": 1.048576, "output_bytes": 312345},
			Logs: []LogLine{
				{Message: "image-4b: 1024x1024, 4 steps, seed 1, format JPG", Level: "info", Source: "runner", Timestamp: now},
				{Message: "step 4/4", Level: "info", Source: "runner", Timestamp: now},
				{Message: "stored image/jpeg (312345 bytes) in 0.420s", Level: "info", Source: "runner", Timestamp: now},
			}}
	}
	f := newFinals()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range n {
		f.keep(asStored(job(i)))
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if len(f.jobs) != n {
		t.Fatalf("%d jobs kept, want %d", len(f.jobs), n)
	}
	held := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("%d jobs: %d bytes of heap, counted %d (%.0f and %.0f a job)", n, held, f.bytes, float64(held)/n, float64(f.bytes)/n)
	if held > int64(f.bytes) {
		t.Fatalf("the kept jobs hold %d bytes of heap, counted as %d", held, f.bytes)
	}
	if int64(f.bytes) > 2*held {
		t.Fatalf("the kept jobs are counted as %d bytes but hold %d: the bound keeps fewer than it could", f.bytes, held)
	}
	runtime.KeepAlive(f)
}
