package blobs_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"

	"github.com/modelexec/modelexec/internal/blobs"
)

// createSuite checks Create on a backend: a second Create of a key is refused, of many
// racing Creates exactly one lands, and a failed one leaves nothing (so it may be retried).
func createSuite(t *testing.T, s blobs.Store) {
	t.Helper()
	ctx := context.Background()
	key := "uploads/acc_1/once.png"
	if _, err := s.Create(ctx, key, "image/png", bytes.NewReader([]byte("first"))); err != nil {
		t.Fatalf("create: %v", err)
	}
	if _, err := s.Create(ctx, key, "image/png", bytes.NewReader([]byte("second"))); !errors.Is(err, blobs.ErrExists) {
		t.Fatalf("second create: %v, want ErrExists", err)
	}
	data, _, err := blobs.ReadAll(ctx, s, key, 0)
	if err != nil || string(data) != "first" {
		t.Fatalf("after second create: %q %v", data, err)
	}

	race := "uploads/acc_1/race.png"
	var wg sync.WaitGroup
	var mu sync.Mutex
	won, lost := 0, 0
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.Create(ctx, race, "image/png", bytes.NewReader([]byte(fmt.Sprintf("writer-%d", i))))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				won++
			case errors.Is(err, blobs.ErrExists):
				lost++
			default:
				t.Errorf("racing create: %v", err)
			}
		}()
	}
	wg.Wait()
	if won != 1 || lost != 7 {
		t.Fatalf("racing creates: %d won, %d refused; want 1 and 7", won, lost)
	}

	broken := "uploads/acc_1/broken.png"
	if _, err := s.Create(ctx, broken, "image/png", io.MultiReader(bytes.NewReader([]byte("part")), failing{})); err == nil {
		t.Fatal("create from a failing reader succeeded")
	}
	if _, err := s.Stat(ctx, broken); !errors.Is(err, blobs.ErrNotFound) {
		t.Fatalf("a failed create left a file: %v", err)
	}
	if _, err := s.Create(ctx, broken, "image/png", bytes.NewReader([]byte("whole"))); err != nil {
		t.Fatalf("create after a failed one: %v", err)
	}
	for _, k := range []string{key, race, broken} {
		if err := s.Delete(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
}

type failing struct{}

func (failing) Read([]byte) (int, error) { return 0, errors.New("connection reset") }
