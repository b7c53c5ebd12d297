package batch

import (
	"context"
	"runtime"
	"sync"
	"testing"
)

// Items given while a batch is written wait and go together in the next; two items of one key
// never share a batch; every item is written once.
func TestItemsGatherWhileABatchIsWritten(t *testing.T) {
	var mu sync.Mutex
	var batches [][]string
	first, release := make(chan struct{}), make(chan struct{})
	b := New(Config{MaxBatch: 8, InFlight: 1}, func(s string) string { return s[:1] }, func(items []string) {
		mu.Lock()
		batches = append(batches, items)
		n := len(batches)
		mu.Unlock()
		if n == 1 {
			close(first)
			<-release // hold the first batch while the others gather
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- b.Run(ctx) }()
	waitRunning(b)
	var wg sync.WaitGroup
	wg.Go(func() { b.Do("a0") })
	<-first
	p := Pause[string]{b}
	for _, it := range []string{"b1", "c1", "b2", "d1"} {
		wg.Go(func() { b.Do(it) })
	}
	p.Await(4)
	close(release)
	wg.Wait()
	cancel()
	<-done
	mu.Lock()
	defer mu.Unlock()
	seen := map[string]int{}
	for _, batch := range batches {
		keys := map[string]bool{}
		for _, it := range batch {
			seen[it]++
			if keys[it[:1]] {
				t.Fatalf("two items of key %q in one batch: %v", it[:1], batches)
			}
			keys[it[:1]] = true
		}
	}
	if len(seen) != 5 || len(batches) != 3 {
		t.Fatalf("batches %v", batches)
	}
	for it, n := range seen {
		if n != 1 {
			t.Fatalf("%s written %d times", it, n)
		}
	}
}

// Before Run starts, every item is written alone, at once, on its caller's goroutine.
func TestAloneWhenNotRunning(t *testing.T) {
	var got [][]int
	b := New(Config{}, func(int) string { return "" }, func(items []int) { got = append(got, items) })
	b.Do(1)
	b.Do(2)
	if len(got) != 2 || len(got[0]) != 1 || len(got[1]) != 1 {
		t.Fatalf("batches %v", got)
	}
}

func waitRunning[T any](b *Batcher[T]) {
	for {
		b.mu.Lock()
		r := b.running
		b.mu.Unlock()
		if r {
			return
		}
		runtime.Gosched() // Run is starting; no outcome depends on time
	}
}
