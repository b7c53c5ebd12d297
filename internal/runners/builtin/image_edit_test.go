package builtin

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"
)

// Proves: IN-M7-01, IN-M7-03 (the reference image transformed at the asked width x height).
func TestINM703_EditTransformsTheReferenceAtTheAskedSize(t *testing.T) {
	h := newHarness(t)
	h.in["https://x/ref.png"] = pngBytes(t, twoTone(300, 200))
	in := map[string]any{"positivePrompt": "make it cinematic", "width": 128, "height": 160, "seed": 3, "steps": 4, "outputFormat": "PNG",
		"inputs": map[string]any{"referenceImages": []string{"https://x/ref.png"}}}
	res := h.run(SlugImageEdit, in)
	img := h.decoded(res, "png")
	if b := img.Bounds(); b.Dx() != 128 || b.Dy() != 160 {
		t.Fatalf("size %v", b)
	}
	// The reference's black left and white right survive the grade (cover crop keeps the centre).
	l, r := nrgbaAt(img, 10, 80), nrgbaAt(img, 117, 80)
	if int(l.R)+int(l.G)+int(l.B) > 150 || int(r.R)+int(r.G)+int(r.B) < 450 {
		t.Fatalf("left %v right %v: not the reference image", l, r)
	}
	first := h.file(res).data
	if again := h.file(h.run(SlugImageEdit, in)).data; !bytes.Equal(first, again) {
		t.Fatal("same seed gave a different edit")
	}
	in["seed"] = 4
	if other := h.file(h.run(SlugImageEdit, in)).data; bytes.Equal(first, other) {
		t.Fatal("another seed gave the same grade")
	}
	// No size asked: the reference's own size.
	delete(in, "width")
	delete(in, "height")
	in["outputFormat"] = "JPG"
	if b := h.decoded(h.run(SlugImageEdit, in), "jpeg").Bounds(); b.Dx() != 300 || b.Dy() != 200 {
		t.Fatalf("default size %v, want the reference's 300x200", b)
	}
}

// Proves: ERR-73 (image_unreadable on referenceImages[0]).
func TestERR73_EditRefusesUnreadableReference(t *testing.T) {
	h := newHarness(t)
	h.in["https://x/ref.txt"] = []byte("plain text")
	_, err := h.try(context.Background(), SlugImageEdit, map[string]any{"positivePrompt": "x", "width": 128, "height": 128,
		"inputs": map[string]any{"referenceImages": []string{"https://x/ref.txt"}}})
	ref := refusalOf(t, err)
	if ref.Code != "image_unreadable" || !slices.Equal(ref.Detail[0].Loc, []string{"body", "inputs", "referenceImages", "0"}) {
		t.Fatalf("refusal %+v", ref)
	}
}

func TestEditCancelMidRun(t *testing.T) {
	h := newHarness(t)
	h.in["https://x/ref.png"] = pngBytes(t, twoTone(64, 64))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h.rep.onProgress = func(f float64) {
		if f >= 0.75 {
			cancel()
		}
	}
	res, err := h.try(ctx, SlugImageEdit, map[string]any{"positivePrompt": "x", "width": 64, "height": 64, "steps": 8,
		"inputs": map[string]any{"referenceImages": []string{"https://x/ref.png"}}})
	if !errors.Is(err, context.Canceled) || res.Done != 0.75 {
		t.Fatalf("err %v done %v, want context.Canceled after 6 of 8 steps", err, res.Done)
	}
}
