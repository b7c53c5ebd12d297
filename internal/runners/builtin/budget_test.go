package builtin

import (
	"context"
	"image/color"
	"os"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelexec/modelexec/internal/imagebudget"
)

// Proves: ERR-73 (image_unreadable on a url input the service cannot read). A 277 KB
// progressive CMYK JPEG of 4200 × 4200 would take Go's decoder 423 MB: every runner that reads
// a url input refuses it at its field from the header, with the figures, before decoding it.
func TestERR73_ImageTooCostlyToReadIsRefused(t *testing.T) {
	huge, err := os.ReadFile("../../imagebudget/testdata/huge_progcmyk.jpg")
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t)
	h.in["https://x/huge.jpg"] = huge
	for _, c := range []struct {
		slug  string
		input map[string]any
		loc   []string
	}{
		{SlugUpscale, map[string]any{"upscaleFactor": 1, "inputs": map[string]any{"image": "https://x/huge.jpg"}}, []string{"body", "inputs", "image"}},
		{SlugEyeMask, map[string]any{"inputs": map[string]any{"image": "https://x/huge.jpg"}}, []string{"body", "inputs", "image"}},
		{SlugImageEdit, map[string]any{"positivePrompt": "warmer", "inputs": map[string]any{"referenceImages": []string{"https://x/huge.jpg"}}},
			[]string{"body", "inputs", "referenceImages", "0"}},
		{SlugImageDev, map[string]any{"positivePrompt": "a fox", "width": 256, "height": 256, "inputs": map[string]any{"seedImage": "https://x/huge.jpg"}},
			[]string{"body", "inputs", "seedImage"}},
	} {
		n := allocatedBy(t, func() error {
			_, err := h.try(context.Background(), c.slug, c.input)
			ref := refusalOf(t, err)
			if ref.Code != "image_unreadable" || !slices.Equal(ref.Detail[0].Loc, c.loc) ||
				!strings.Contains(ref.Detail[0].Msg, "4200 × 4200 progressive CMYK JPEG") || !strings.Contains(ref.Detail[0].Msg, "megapixels") {
				t.Errorf("%s: %+v", c.slug, ref.Detail)
			}
			return nil
		})
		if n > 32<<20 {
			t.Errorf("%s: refusing it allocated %d bytes", c.slug, n)
		}
	}
}

// The runs' decodes share the process's image budget with the uploads': a run whose image
// does not fit beside the decodes under way waits for room, then runs. (Its image, 2000 × 2000,
// is not one of the small ones, which have a share of their own.)
func TestRunsDecodeWithinTheProcessBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		budget := imagebudget.New(64<<20, 32<<20) // 60 MiB for large decodes
		h := newHarness(t)
		h.reg = Images(Options{Now: func() time.Time { return time.Unix(0, 0) }, Images: budget})
		h.in["https://x/in.png"] = pngBytes(t, solid(2000, 2000, color.NRGBA{9, 99, 199, 255}))
		var held []func() // two uploads' decodes, say, that fill the budget
		for _, mib := range []int64{32, 28} {
			release, err := budget.Acquire(context.Background(), imagebudget.Estimate{Bytes: mib << 20})
			if err != nil {
				t.Fatal(err)
			}
			held = append(held, release)
		}
		done := make(chan error, 1)
		go func() {
			_, err := h.try(context.Background(), SlugUpscale, map[string]any{"upscaleFactor": 1, "outputFormat": "PNG", "inputs": map[string]any{"image": "https://x/in.png"}})
			done <- err
		}()
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("the run decoded beside a decode that fills the budget: %v", err)
		default:
		}
		held[0]()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		held[1]()
	})
}
