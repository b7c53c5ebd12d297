package builtin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"io/fs"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/modelexec/modelexec/internal/fetch"
	"github.com/modelexec/modelexec/internal/runners"
)

var generatorSlugs = []string{SlugImage9BKV, SlugImage4B, SlugImageLite, SlugImageDev, SlugImageTurbo}

// Proves: CAT-02 (the eight image slugs have a runner).
func TestCAT02_ImagesServesEveryImageSlug(t *testing.T) {
	reg := Images(Options{})
	want := []string{"image-9b-kv", "image-4b", "image-lite", "upscale", "eye-mask", "image-edit", "image-dev", "image-turbo"}
	if len(reg) != len(want) {
		t.Fatalf("registry has %d runners, want %d", len(reg), len(want))
	}
	for _, s := range want {
		if _, err := reg.For(s); err != nil {
			t.Errorf("%s: %v", s, err)
		}
	}
	if _, err := reg.For("music-turbo"); !errors.Is(err, runners.ErrUnknownModel) {
		t.Errorf("music-turbo is not an image runner: %v", err)
	}
	all := All(Options{})
	if len(all) != 9 {
		t.Errorf("All: %d runners, want 9", len(all))
	}
	if _, err := all.For("music-turbo"); err != nil {
		t.Errorf("All: %v", err)
	}
}

// Proves: IN-SHARED-08 (JPG, PNG, WEBP outputs), IN-M1-02, IN-M8-02, IN-M9-02 (exact width x height).
func TestINSHARED08_GeneratorsWriteTheAskedSizeAndFormat(t *testing.T) {
	formats := []struct{ format, sniffed, contentType string }{
		{"JPG", "jpeg", "image/jpeg"}, {"PNG", "png", "image/png"}, {"WEBP", "webp", "image/webp"},
	}
	for i, slug := range generatorSlugs {
		for j, f := range formats {
			t.Run(slug+"/"+f.format, func(t *testing.T) {
				h := newHarness(t)
				w, hh := 128+16*i, 96+8*j
				res := h.run(slug, map[string]any{
					"positivePrompt": "a sunset over the sea", "width": w, "height": hh,
					"seed": 7, "steps": 3, "outputFormat": f.format, "outputQuality": 95,
				})
				img := h.decoded(res, f.sniffed)
				if b := img.Bounds(); b.Dx() != w || b.Dy() != hh {
					t.Fatalf("size %dx%d, want %dx%d", b.Dx(), b.Dy(), w, hh)
				}
				images := res.Document["images"].([]any)
				entry := images[0].(map[string]any)
				if entry["width"] != w || entry["height"] != hh || entry["content_type"] != f.contentType || entry["storage_key"] != res.Files[0].Key || entry["seed"] != int64(7) {
					t.Fatalf("document entry %v", entry)
				}
				if res.Document["seed"] != int64(7) || !slices.Equal(res.Document["has_nsfw_concepts"].([]bool), []bool{false}) {
					t.Fatalf("document %v", res.Document)
				}
				if res.Done != 1 || res.Metrics["steps"] != 3 || res.Metrics["megapixels"] != float64(w*hh)/1e6 || res.Metrics["output_bytes"] <= 0 {
					t.Fatalf("done %v metrics %v", res.Done, res.Metrics)
				}
				if want := []float64{1.0 / 3, 2.0 / 3, 1}; !slices.Equal(h.rep.progress, want) {
					t.Fatalf("progress %v, want %v", h.rep.progress, want)
				}
				if len(h.rep.logs) == 0 {
					t.Fatal("no log lines")
				}
			})
		}
	}
}

// Proves: IN-SHARED-09 (outputQuality drives the JPEG encoder).
func TestINSHARED09_OutputQualityDrivesTheEncoder(t *testing.T) {
	size := func(format string, q int) int {
		h := newHarness(t)
		res := h.run(SlugImage4B, map[string]any{"positivePrompt": "forest", "width": 256, "height": 256, "seed": 1, "steps": 1, "outputFormat": format, "outputQuality": q})
		return len(h.file(res).data)
	}
	for _, f := range []string{"JPG", "WEBP"} {
		if lo, hi := size(f, 20), size(f, 99); lo >= hi {
			t.Errorf("%s: quality 20 gave %d bytes, 99 gave %d", f, lo, hi)
		}
	}
}

func TestGeneratorIsDeterministicForASeed(t *testing.T) {
	out := func(slug string, seed int, prompt string) []byte {
		h := newHarness(t)
		res := h.run(slug, map[string]any{"positivePrompt": prompt, "width": 96, "height": 64, "seed": seed, "steps": 2, "outputFormat": "PNG"})
		return h.file(res).data
	}
	a, b := out(SlugImageTurbo, 42, "ocean waves"), out(SlugImageTurbo, 42, "ocean waves")
	if !bytes.Equal(a, b) {
		t.Fatal("same seed and prompt gave different images")
	}
	if bytes.Equal(a, out(SlugImageTurbo, 43, "ocean waves")) {
		t.Error("another seed gave the same image")
	}
	if bytes.Equal(a, out(SlugImageTurbo, 42, "a night in the forest")) {
		t.Error("another prompt gave the same image")
	}
	if bytes.Equal(a, out(SlugImageDev, 42, "ocean waves")) {
		t.Error("another model gave the same image")
	}
}

// Proves: DESIGN decision 29 (a cancelled run reports the work it did).
func TestGeneratorCancelMidRunReportsWorkDone(t *testing.T) {
	h := newHarness(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h.rep.onProgress = func(f float64) {
		if f >= 0.5 {
			cancel()
		}
	}
	res, err := h.try(ctx, SlugImage4B, map[string]any{"positivePrompt": "sunset", "width": 64, "height": 64, "seed": 3, "steps": 4})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if res.Done != 0.5 || res.Metrics["steps"] != 2 {
		t.Fatalf("done %v metrics %v, want 0.5 after 2 of 4 steps", res.Done, res.Metrics)
	}
	if len(h.out.files) != 0 {
		t.Fatal("a cancelled run stored a file")
	}
}

func refusalOf(t *testing.T, err error) *runners.Refusal {
	t.Helper()
	var ref *runners.Refusal
	if !errors.As(err, &ref) {
		t.Fatalf("err = %v (%T), want *runners.Refusal", err, err)
	}
	return ref
}

// Proves: ERR-73 (image_unreadable on a url input that is not an image).
func TestERR73_UnreadableSeedImageIsRefused(t *testing.T) {
	h := newHarness(t)
	h.in["https://x/not-an-image"] = []byte("hello, I am text")
	for _, c := range []struct {
		field string
		input map[string]any
	}{
		{"seedImage", map[string]any{"inputs": map[string]any{"seedImage": "https://x/not-an-image"}}},
		{"seedImage", map[string]any{"inputs": map[string]any{"seedImage": "https://x/missing"}}},
	} {
		c.input["positivePrompt"] = "x y"
		c.input["width"], c.input["height"], c.input["seed"] = 64, 64, 1
		res, err := h.try(context.Background(), SlugImageDev, c.input)
		ref := refusalOf(t, err)
		if ref.Code != "image_unreadable" || !slices.Equal(ref.Detail[0].Loc, []string{"body", "inputs", c.field}) {
			t.Fatalf("refusal %+v", ref)
		}
		if res.Done != 0 {
			t.Fatalf("refused run did work: %v", res.Done)
		}
	}
}

// Proves: IN-SHARED-31, IN-SHARED-32 (seedImage + maskImage: white edited, black preserved; strength).
func TestINSHARED31_MaskKeepsBlackAndEditsWhite(t *testing.T) {
	h := newHarness(t)
	blue := color.NRGBA{0, 0, 255, 255}
	h.in["https://x/seed.png"] = pngBytes(t, solid(64, 64, blue))
	mask := solid(64, 64, color.NRGBA{0, 0, 0, 255})
	for y := 0; y < 64; y++ {
		for x := 32; x < 64; x++ {
			mask.Set(x, y, color.White)
		}
	}
	h.in["https://x/mask.png"] = pngBytes(t, mask)
	base := map[string]any{"positivePrompt": "sunset", "width": 128, "height": 128, "seed": 5, "steps": 2, "outputFormat": "PNG",
		"inputs": map[string]any{"seedImage": "https://x/seed.png", "maskImage": "https://x/mask.png"}}
	for _, slug := range []string{SlugImageDev, SlugImageTurbo} {
		base["strength"] = 1.0
		img := h.decoded(h.run(slug, base), "png")
		if c := nrgbaAt(img, 20, 64); c != blue {
			t.Fatalf("%s: preserved (black) area is %v, want the seed's %v", slug, c, blue)
		}
		full := nrgbaAt(img, 100, 64)
		if full == blue {
			t.Fatalf("%s: edited (white) area kept the seed", slug)
		}
		base["strength"] = 0.5
		half := nrgbaAt(h.decoded(h.run(slug, base), "png"), 100, 64)
		// Half strength lies between the seed and the fully generated pixel.
		if d := int(half.B) - (int(full.B)+255)/2; d < -2 || d > 2 {
			t.Fatalf("%s: strength 0.5 blue %d, want about (%d+255)/2", slug, half.B, full.B)
		}
	}
}

// Proves: IN-SHARED-32 (maskMargin composes the new content for the masked region plus context).
func TestINSHARED32_MaskMarginChangesOnlyTheMaskedArea(t *testing.T) {
	h := newHarness(t)
	h.in["https://x/seed.png"] = pngBytes(t, solid(128, 128, color.NRGBA{200, 200, 200, 255}))
	mask := solid(128, 128, color.NRGBA{0, 0, 0, 255})
	for y := 40; y < 80; y++ {
		for x := 40; x < 80; x++ {
			mask.Set(x, y, color.White)
		}
	}
	h.in["https://x/mask.png"] = pngBytes(t, mask)
	in := map[string]any{"positivePrompt": "ocean", "width": 128, "height": 128, "seed": 9, "steps": 1, "outputFormat": "PNG", "strength": 1.0,
		"inputs": map[string]any{"seedImage": "https://x/seed.png", "maskImage": "https://x/mask.png"}}
	plain := h.decoded(h.run(SlugImageTurbo, in), "png")
	in["maskMargin"] = 32
	margin := h.decoded(h.run(SlugImageTurbo, in), "png")
	if nrgbaAt(plain, 10, 10) != nrgbaAt(margin, 10, 10) {
		t.Fatal("maskMargin changed a preserved pixel")
	}
	if nrgbaAt(plain, 60, 60) == nrgbaAt(margin, 60, 60) && nrgbaAt(plain, 45, 75) == nrgbaAt(margin, 45, 75) {
		t.Fatal("maskMargin did not change the masked content")
	}
}

// Proves: IN-SHARED-33 (outpaint extents and blur).
func TestINSHARED33_OutpaintPlacesTheSeedAndFillsTheBorder(t *testing.T) {
	h := newHarness(t)
	red := color.NRGBA{255, 0, 0, 255}
	h.in["https://x/seed.png"] = pngBytes(t, solid(32, 32, red))
	in := map[string]any{"positivePrompt": "forest", "width": 96, "height": 80, "seed": 2, "steps": 2, "outputFormat": "PNG",
		"inputs":   map[string]any{"seedImage": "https://x/seed.png"},
		"outpaint": map[string]any{"left": 16, "right": 32, "top": 8, "bottom": 24}}
	img := h.decoded(h.run(SlugImageDev, in), "png")
	// Inner rectangle: x 16..64, y 8..56.
	for _, p := range []image.Point{{16, 8}, {40, 30}, {63, 55}} {
		if c := nrgbaAt(img, p.X, p.Y); c != red {
			t.Fatalf("inside the source at %v: %v, want red", p, c)
		}
	}
	for _, p := range []image.Point{{5, 30}, {80, 30}, {40, 2}, {40, 70}} {
		if c := nrgbaAt(img, p.X, p.Y); c == red {
			t.Fatalf("outpainted border at %v is still red", p)
		}
	}
	in["outpaint"] = map[string]any{"left": 16, "right": 32, "top": 8, "bottom": 24, "blur": 8}
	soft := h.decoded(h.run(SlugImageDev, in), "png")
	if c := nrgbaAt(soft, 16, 30); c == red || c == nrgbaAt(img, 15, 30) {
		t.Fatalf("blur 8: the seam at x=16 is not feathered: %v", c)
	}
	if c := nrgbaAt(soft, 40, 30); c != red {
		t.Fatalf("blur 8: the middle of the source changed: %v", c)
	}
	in["outpaint"] = map[string]any{"left": 60, "right": 60}
	_, err := h.try(context.Background(), SlugImageDev, in)
	if ref := refusalOf(t, err); ref.Code != "invalid_input" {
		t.Fatalf("outpaint wider than the canvas: %+v", ref)
	}
}

// Proves: IN-M8-11 (layerDiffuse gives a transparent PNG).
func TestINM811_LayerDiffuseIsTransparent(t *testing.T) {
	h := newHarness(t)
	in := map[string]any{"positivePrompt": "a gold coin", "width": 128, "height": 128, "seed": 4, "steps": 2, "outputFormat": "PNG",
		"advancedFeatures": map[string]any{"layerDiffuse": true}}
	img := h.decoded(h.run(SlugImageDev, in), "png")
	if a := nrgbaAt(img, 2, 2).A; a != 0 {
		t.Fatalf("corner alpha %d, want 0", a)
	}
	if a := nrgbaAt(img, 64, 64).A; a != 255 {
		t.Fatalf("subject alpha %d, want 255", a)
	}
	// WEBP keeps the alpha too; JPG, which has none, is flattened on white.
	in["outputFormat"] = "WEBP"
	img = h.decoded(h.run(SlugImageDev, in), "webp")
	if a := nrgbaAt(img, 2, 2).A; a > 8 {
		t.Fatalf("webp corner alpha %d, want transparent", a)
	}
	in["outputFormat"] = "JPG"
	img = h.decoded(h.run(SlugImageDev, in), "jpeg")
	if c := nrgbaAt(img, 2, 2); c.R < 245 || c.G < 245 || c.B < 245 {
		t.Fatalf("jpg corner %v, want white", c)
	}
	in["outputFormat"] = "PNG"
	// M9 has no layerDiffuse: it stays opaque.
	img = h.decoded(h.run(SlugImageTurbo, in), "png")
	if a := nrgbaAt(img, 2, 2).A; a != 255 {
		t.Fatalf("image-turbo corner alpha %d, want 255", a)
	}
}

// refusingInputs answers every fetch with the fetcher's own refusal (an SSRF block, say).
type refusingInputs struct{}

func (refusingInputs) Fetch(context.Context, string) ([]byte, string, error) {
	return nil, "", &runners.Refusal{Code: "invalid_url", Detail: []runners.Violation{{Loc: []string{"body", "inputs", "image"}, Msg: "private address", Type: "value_error"}}}
}

// A refusal decided by runners.Inputs reaches the caller unchanged.
func TestFetcherRefusalPassesThrough(t *testing.T) {
	h := newHarness(t)
	raw := []byte(`{"inputs":{"image":"https://10.0.0.1/x.png"}}`)
	rn, _ := h.reg.For(SlugUpscale)
	_, err := rn.Run(context.Background(), runners.Job{ID: "j", Slug: SlugUpscale, Input: raw}, runners.Env{Inputs: refusingInputs{}, Outputs: h.out})
	if ref := refusalOf(t, err); ref.Code != "invalid_url" {
		t.Fatalf("refusal %+v", ref)
	}
}

// storeFailingInputs fails every fetch the way the fetcher fails one of the service's own
// links whose file cannot be read: an error chain naming a path of the server.
type storeFailingInputs struct{}

func (storeFailingInputs) Fetch(_ context.Context, url string) ([]byte, string, error) {
	cause := &fs.PathError{Op: "open", Path: "/srv/modelexec/blobs/uploads/acc_1/u1.png", Err: syscall.EACCES}
	return nil, "", &fetch.Error{Kind: fetch.KindNetwork, URL: url, Err: fmt.Errorf("blobs: open uploads/acc_1/u1.png: %w", cause)}
}

// A fetch that fails answers image_unreadable naming the URL and why, never the chain behind
// it (issue 30 item 5: no answer carries a server path).
func TestFetchFailureSaysWhyInWords(t *testing.T) {
	h := newHarness(t)
	raw := []byte(`{"inputs":{"image":"https://files.example/u1.png"}}`)
	rn, _ := h.reg.For(SlugUpscale)
	_, err := rn.Run(context.Background(), runners.Job{ID: "j", Slug: SlugUpscale, Input: raw}, runners.Env{Inputs: storeFailingInputs{}, Outputs: h.out})
	ref := refusalOf(t, err)
	msg := ref.Detail[0].Msg
	if ref.Code != "image_unreadable" || !strings.Contains(msg, "https://files.example/u1.png could not be fetched: it could not be reached") {
		t.Fatalf("refusal %+v", ref)
	}
	for _, leak := range []string{"/srv/", "blobs:", "permission denied", "network"} {
		if strings.Contains(msg, leak) {
			t.Fatalf("message %q carries %q", msg, leak)
		}
	}
}
