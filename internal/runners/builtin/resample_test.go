package builtin

import (
	"context"
	"image"
	"image/color"
	"runtime"
	"testing"

	xdraw "golang.org/x/image/draw"
)

// noisy is a w x h opaque image of varied pixels.
func noisy(w, h int) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for i := range img.Pix {
		img.Pix[i] = uint8(i * 37 % 251)
	}
	for i := 3; i < len(img.Pix); i += 4 {
		img.Pix[i] = 255
	}
	return img
}

// maxChannelDiff is the largest difference of one channel between two images of one size.
func maxChannelDiff(a, b image.Image) int {
	d := 0
	for y := a.Bounds().Min.Y; y < a.Bounds().Max.Y; y++ {
		for x := a.Bounds().Min.X; x < a.Bounds().Max.X; x++ {
			p, q := nrgbaAt(a, x, y), nrgbaAt(b, x, y)
			for _, v := range []int{int(p.R) - int(q.R), int(p.G) - int(q.G), int(p.B) - int(q.B), int(p.A) - int(q.A)} {
				d = max(d, v, -v)
			}
		}
	}
	return d
}

// allocatedBy is the bytes f allocated.
func allocatedBy(t *testing.T, f func() error) uint64 {
	t.Helper()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	if err := f(); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// Up to twice smaller, resample is the Catmull-Rom scale x/image computes, to within
// rounding, for the decoders' image types.
func TestResampleAgreesWithCatmullRom(t *testing.T) {
	src := noisy(50, 40)
	rgba := image.NewRGBA(src.Bounds())
	xdraw.Draw(rgba, rgba.Bounds(), src, image.Point{}, xdraw.Src)
	gray := image.NewGray(src.Bounds())
	xdraw.Draw(gray, gray.Bounds(), src, image.Point{}, xdraw.Src)
	for _, s := range []image.Image{src, rgba, gray} {
		for _, size := range []image.Point{{50, 40}, {137, 23}, {30, 25}, {1, 1}} {
			got := image.NewNRGBA(image.Rect(0, 0, size.X, size.Y))
			if _, err := resample(context.Background(), got, s, s.Bounds(), nil); err != nil {
				t.Fatal(err)
			}
			want := image.NewNRGBA(got.Bounds())
			xdraw.CatmullRom.Scale(want, want.Bounds(), s, s.Bounds(), xdraw.Src, nil)
			if d := maxChannelDiff(got, want); d > 2 {
				t.Fatalf("%T to %v: a channel differs by %d", s, size, d)
			}
		}
	}
}

// A source far larger than the result along one axis is averaged first: a white and black
// striped column a million pixels tall scales to mid grey, and the scale allocates about
// what the result holds (x/image's scaler asked for width x 1,000,000 x 32 bytes).
func TestResampleOfATallImageTakesLittleMemory(t *testing.T) {
	src := image.NewGray(image.Rect(0, 0, 1, 1_000_000))
	for y := 0; y < src.Bounds().Dy(); y += 2 {
		src.Pix[y] = 255
	}
	dst := image.NewNRGBA(image.Rect(0, 0, 512, 512))
	if n := allocatedBy(t, func() error { _, err := resample(context.Background(), dst, src, src.Bounds(), nil); return err }); n > 4<<20 {
		t.Fatalf("resample allocated %d bytes for a 512x512 result", n)
	}
	if c := dst.NRGBAAt(100, 300); c.A != 255 || c.R < 120 || c.R > 135 {
		t.Fatalf("pixel %v, want mid grey", c)
	}
}

// Proves the seed image path end to end in the runner: a 1 x 100,000 seed image (a few
// hundred bytes of PNG; x/image's scaler asked 0.8 GB for it) composes into a 256 x 256
// generation in bounded memory.
func TestTallSeedImageIsComposedInBoundedMemory(t *testing.T) {
	h := newHarness(t)
	tall := image.NewNRGBA(image.Rect(0, 0, 1, 100_000))
	for i := range tall.Pix {
		tall.Pix[i] = 200
	}
	h.in["https://x/tall.png"] = pngBytes(t, tall)
	h.in["https://x/small.png"] = pngBytes(t, solid(256, 256, color.NRGBA{200, 200, 200, 200}))
	alloc := func(url string) uint64 {
		return allocatedBy(t, func() error {
			h.run(SlugImageDev, map[string]any{"positivePrompt": "a fox", "width": 256, "height": 256, "seed": 1,
				"inputs": map[string]any{"seedImage": url, "maskImage": url}})
			return nil
		})
	}
	small, tallN := alloc("https://x/small.png"), alloc("https://x/tall.png")
	// The tall image's own pixels (400 KB decoded) and its PNG's inflation come on top.
	if tallN > small+32<<20 {
		t.Fatalf("a tall seed image allocated %d bytes, a 256x256 one %d", tallN, small)
	}
}

// A result far longer than wide takes the result's own pixels and a few rows: the weights
// of its rows are worked out one row at a time.
func TestResampleOfALongResultTakesLittleMemory(t *testing.T) {
	src := noisy(1, 1000)
	dst := image.NewNRGBA(image.Rect(0, 0, 1, 2_000_000))
	if n := allocatedBy(t, func() error { _, err := resample(context.Background(), dst, src, src.Bounds(), nil); return err }); n > 1<<20 {
		t.Fatalf("resample allocated %d bytes beside a 1x2,000,000 result", n)
	}
}

// An output a format cannot hold is refused invalid_input, from the input's header, before
// its pixels are decoded: JPEG holds 65,535 pixels a side, WEBP 16,383, and the upscaler
// renders at most 16,383 a side. (Encoding it answered 500 run_failed after the work.)
func TestOutputSidesAFormatCannotHoldAreRefused(t *testing.T) {
	h := newHarness(t)
	h.in["https://x/wide.png"] = pngBytes(t, solid(70_000, 1, color.NRGBA{9, 9, 9, 255}))
	h.in["https://x/long.png"] = pngBytes(t, solid(1, 20_000, color.NRGBA{9, 9, 9, 255}))
	for _, c := range []struct {
		slug  string
		input map[string]any
		field string
	}{
		{SlugEyeMask, map[string]any{"inputs": map[string]any{"image": "https://x/wide.png"}}, "outputFormat"},
		{SlugEyeMask, map[string]any{"outputFormat": "WEBP", "inputs": map[string]any{"image": "https://x/long.png"}}, "outputFormat"},
		{SlugUpscale, map[string]any{"upscaleFactor": 1, "outputFormat": "PNG", "inputs": map[string]any{"image": "https://x/long.png"}}, "upscaleFactor"},
	} {
		res, err := h.try(context.Background(), c.slug, c.input)
		ref := refusalOf(t, err)
		if ref.Code != "invalid_input" || ref.Detail[0].Loc[len(ref.Detail[0].Loc)-1] != c.field || res.Done != 0 {
			t.Fatalf("%s %v: %+v done %v", c.slug, c.input, ref, res.Done)
		}
	}
	// PNG holds the wide mask.
	if _, err := h.try(context.Background(), SlugEyeMask, map[string]any{"outputFormat": "PNG", "inputs": map[string]any{"image": "https://x/wide.png"}}); err != nil {
		t.Fatalf("a wide mask as PNG: %v", err)
	}
}
