package blobs_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/blobs"
)

// The readiness probe as a deployment runs it: two processes on one bucket, each asked by the
// balancer for each of its three surfaces at once. No probe fails for another's (a PUT that
// met a DELETE of the same key failed on an S3-compatible server, and a DELETE of a key another
// probe had just deleted answered 404), and none leaves its file behind.
func TestReadinessProbesOfManyProcesses(t *testing.T) {
	t.Run("s3", func(t *testing.T) {
		loc := s3Location(t)
		probeFromManyProcesses(t, func() *blobs.Bucket {
			b, err := blobs.OpenBucket(context.Background(), loc)
			if err != nil {
				t.Fatal(err)
			}
			return b
		})
	})
	t.Run("directory", func(t *testing.T) {
		dir := t.TempDir()
		probeFromManyProcesses(t, func() *blobs.Bucket {
			b, err := blobs.OpenDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			return b
		})
	})
}

func probeFromManyProcesses(t *testing.T, open func() *blobs.Bucket) {
	ctx := context.Background()
	const processes, checks, probes = 2, 3, 100
	var mu sync.Mutex
	var failed []error
	var wg sync.WaitGroup
	buckets := make([]*blobs.Bucket, processes)
	for p := range buckets {
		buckets[p] = open()
		defer buckets[p].Close()
		for range checks {
			wg.Go(func() {
				for range probes {
					if err := (blobs.WriteProbe{Store: buckets[p]}).Ping(ctx); err != nil {
						mu.Lock()
						failed = append(failed, err)
						mu.Unlock()
					}
				}
			})
		}
	}
	wg.Wait()
	if len(failed) > 0 {
		t.Fatalf("%d of %d probes failed, the first: %v", len(failed), processes*checks*probes, failed[0])
	}
	if left, err := buckets[0].DeleteOlder(ctx, "probes/", time.Now().Add(time.Hour)); err != nil || left != 0 {
		t.Fatalf("%d probe files left behind (%v)", left, err)
	}
}
