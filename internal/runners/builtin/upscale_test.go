package builtin

import (
	"context"
	"errors"
	"image"
	"image/color"
	"slices"
	"testing"

	xdraw "golang.org/x/image/draw"
)

// twoTone is a w x h image, black on the left half and white on the right.
func twoTone(w, h int) *image.NRGBA {
	img := solid(w, h, color.NRGBA{0, 0, 0, 255})
	for y := 0; y < h; y++ {
		for x := w / 2; x < w; x++ {
			img.Set(x, y, color.White)
		}
	}
	return img
}

// Proves: IN-M4-02 (output is round(w*f) x round(h*f); default 2), IN-M4-10 (output format).
func TestINM402_UpscaleSizeIsExact(t *testing.T) {
	h := newHarness(t)
	h.in["https://x/in.png"] = pngBytes(t, twoTone(37, 23))
	cases := []struct {
		factor        any
		format, sniff string
		w, h          int
	}{
		{nil, "", "jpeg", 74, 46},
		{1, "PNG", "png", 37, 23},
		{2.5, "WEBP", "webp", 93, 58}, // 92.5 and 57.5 round half away from zero
		{1.37, "PNG", "png", 51, 32},  // 50.69 and 31.51
		{4, "JPG", "jpeg", 148, 92},
	}
	for _, c := range cases {
		in := map[string]any{"inputs": map[string]any{"image": "https://x/in.png"}, "settings": map[string]any{"seed": 5}}
		if c.factor != nil {
			in["upscaleFactor"] = c.factor
		}
		if c.format != "" {
			in["outputFormat"] = c.format
		}
		res := h.run(SlugUpscale, in)
		img := h.decoded(res, c.sniff)
		if b := img.Bounds(); b.Dx() != c.w || b.Dy() != c.h {
			t.Fatalf("factor %v: %dx%d, want %dx%d", c.factor, b.Dx(), b.Dy(), c.w, c.h)
		}
		// Real resampling: the black half stays black and the white half white.
		if l, r := nrgbaAt(img, 2, c.h/2), nrgbaAt(img, c.w-3, c.h/2); l.R > 20 || r.R < 235 {
			t.Fatalf("factor %v: left %v right %v", c.factor, l, r)
		}
		entry := res.Document["images"].([]any)[0].(map[string]any)
		if entry["width"] != c.w || entry["height"] != c.h || res.Document["seed"] != int64(5) || res.Metrics["steps"] != upscaleBands {
			t.Fatalf("document %v metrics %v", res.Document, res.Metrics)
		}
	}
}

// The upscaler's output is a Catmull-Rom scale of its input: it agrees with x/image's scaler
// to within rounding.
func TestUpscaleIsACatmullRomScale(t *testing.T) {
	h := newHarness(t)
	src := noisy(31, 17)
	h.in["https://x/in.png"] = pngBytes(t, src)
	got := h.decoded(h.run(SlugUpscale, map[string]any{"upscaleFactor": 3, "outputFormat": "PNG", "inputs": map[string]any{"image": "https://x/in.png"}}), "png")
	want := image.NewNRGBA(image.Rect(0, 0, 93, 51))
	xdraw.CatmullRom.Scale(want, want.Bounds(), src, src.Bounds(), xdraw.Src, nil)
	if d := maxChannelDiff(got, want); d > 2 {
		t.Fatalf("a channel differs by %d from x/image's Catmull-Rom", d)
	}
}

// Proves: ERR-73 (image_unreadable with loc body.inputs.image), IN-M4-02 (factor range).
func TestERR73_UpscaleRefusesUnreadableImage(t *testing.T) {
	h := newHarness(t)
	h.in["https://x/bad.png"] = []byte("\x89PNG\r\n\x1a\nnot really")
	_, err := h.try(context.Background(), SlugUpscale, map[string]any{"inputs": map[string]any{"image": "https://x/bad.png"}})
	ref := refusalOf(t, err)
	if ref.Code != "image_unreadable" || !slices.Equal(ref.Detail[0].Loc, []string{"body", "inputs", "image"}) {
		t.Fatalf("refusal %+v", ref)
	}
	_, err = h.try(context.Background(), SlugUpscale, map[string]any{"inputs": map[string]any{}})
	if ref := refusalOf(t, err); ref.Code != "image_required" {
		t.Fatalf("refusal %+v", ref)
	}
	h.in["https://x/in.png"] = pngBytes(t, twoTone(8, 8))
	_, err = h.try(context.Background(), SlugUpscale, map[string]any{"upscaleFactor": 5, "inputs": map[string]any{"image": "https://x/in.png"}})
	if ref := refusalOf(t, err); ref.Code != "invalid_input" {
		t.Fatalf("refusal %+v", ref)
	}
}

func TestUpscaleCancelMidRun(t *testing.T) {
	h := newHarness(t)
	h.in["https://x/in.png"] = pngBytes(t, twoTone(40, 40))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h.rep.onProgress = func(f float64) {
		if f >= 0.25 {
			cancel()
		}
	}
	res, err := h.try(ctx, SlugUpscale, map[string]any{"inputs": map[string]any{"image": "https://x/in.png"}})
	if !errors.Is(err, context.Canceled) || res.Done < 0.25 || res.Done >= 1 {
		t.Fatalf("err %v done %v, want context.Canceled with a quarter or more done", err, res.Done)
	}
}
