package imagebudget

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// An image whose decode alone passes what one image may take is refused at once, with the
// figures a person needs; the others share the budget: one that does not fit beside those
// being decoded waits for room, and gives up with its context.
func TestBudgetRefusesWhatCannotFitAndQueuesTheRest(t *testing.T) {
	b := New(112<<20, 60<<20) // 105 MiB for large decodes, 7 MiB for small ones
	huge := Estimate{Width: 4200, Height: 4200, Bytes: 423 << 20, Form: "progressive CMYK JPEG"}
	_, err := b.Acquire(context.Background(), huge)
	var costly *TooCostlyError
	if !errors.As(err, &costly) {
		t.Fatalf("a 423 MB decode: %v", err)
	}
	for _, want := range []string{"4200 × 4200 progressive CMYK JPEG", "423 MB", "60 MB", "send one of at most 2.4 megapixels"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q does not say %q", err, want)
		}
	}

	synctest.Test(t, func(t *testing.T) {
		half := Estimate{Width: 1000, Height: 1000, Bytes: 50 << 20}
		r1, err := b.Acquire(context.Background(), half)
		if err != nil {
			t.Fatal(err)
		}
		r2, err := b.Acquire(context.Background(), half)
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan error, 1)
		go func() {
			r3, err := b.Acquire(context.Background(), half)
			if err == nil {
				r3()
			}
			got <- err
		}()
		synctest.Wait()
		select {
		case err := <-got:
			t.Fatalf("a third decode ran beside two that fill the budget: %v", err)
		default:
		}
		r1()
		if err := <-got; err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := b.Acquire(ctx, Estimate{Bytes: 60 << 20}); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("waiting past its context: %v", err)
		}
		r2()
	})
}

// A small decode (another account's thumbnail, say) does not queue behind large ones waiting
// for room it does not need: it runs at once, while the large one waits.
func TestSmallDecodesDoNotQueueBehindLargeOnes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := Default()
		var held []func()
		for range 2 { // two 320 MB decodes under way fill the large decodes' share
			release, err := b.Acquire(context.Background(), Estimate{Bytes: 320 << 20})
			if err != nil {
				t.Fatal(err)
			}
			held = append(held, release)
		}
		queued := make(chan error, 1)
		go func() { // a third waits for room, first in the queue
			release, err := b.Acquire(context.Background(), Estimate{Bytes: 320 << 20})
			if err == nil {
				release()
			}
			queued <- err
		}()
		synctest.Wait()
		small, err := b.Acquire(context.Background(), Estimate{Width: 64, Height: 64, Bytes: 64 * 64 * 4})
		if err != nil {
			t.Fatal(err)
		}
		small()
		select {
		case err := <-queued:
			t.Fatalf("the large decode ran beside two that fill the share: %v", err)
		default:
		}
		held[0]()
		if err := <-queued; err != nil {
			t.Fatal(err)
		}
		held[1]()
	})
}
