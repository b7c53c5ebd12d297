package builtin

import (
	"context"
	"errors"
	"image"
	"slices"
	"testing"
)

// Eye centres of testdata/astronaut.jpg (512x512), measured by hand once on a 4x crop:
// the viewer's left eye at (204,101), the right at (246,103). The nose tip is near (225,135)
// and the mouth near (224,146).
var (
	astronautEyes  = []image.Point{{204, 101}, {246, 103}}
	astronautNotMe = []image.Point{{225, 135}, {224, 150}, {150, 300}, {10, 10}, {500, 500}, {225, 60}}
)

func runMask(t *testing.T, h *harness, settings map[string]any, format string) (image.Image, map[string]any) {
	t.Helper()
	h.in["https://x/face.jpg"] = readTestdata(t, "astronaut.jpg")
	in := map[string]any{"inputs": map[string]any{"image": "https://x/face.jpg"}, "settings": settings}
	sniff := "jpeg"
	if format != "" {
		in["outputFormat"] = format
		sniff = map[string]string{"PNG": "png", "WEBP": "webp", "JPG": "jpeg"}[format]
	}
	res := h.run(SlugEyeMask, in)
	return h.decoded(res, sniff), res.Document
}

func gray(img image.Image, p image.Point) uint8 { return nrgbaAt(img, p.X, p.Y).R }

// Proves: IN-M6-01..IN-M6-06 on a real face photograph: the mask covers both eyes and
// nothing else, at the image's size, with detections above the confidence.
func TestINM6_MaskCoversTheEyesOfARealFace(t *testing.T) {
	for _, format := range []string{"", "PNG", "WEBP"} {
		h := newHarness(t)
		img, doc := runMask(t, h, map[string]any{}, format)
		if b := img.Bounds(); b.Dx() != 512 || b.Dy() != 512 {
			t.Fatalf("%s: mask is %v, want the image's 512x512", format, b)
		}
		for _, p := range astronautEyes {
			if v := gray(img, p); v < 200 {
				t.Fatalf("%s: eye %v is %d in the mask, want white", format, p, v)
			}
		}
		for _, p := range astronautNotMe {
			if v := gray(img, p); v > 40 {
				t.Fatalf("%s: %v is %d in the mask, want black", format, p, v)
			}
		}
		if doc["detections"] != 1 {
			t.Fatalf("%s: %v detections, want 1", format, doc["detections"])
		}
		entry := doc["masks"].([]any)[0].(map[string]any)
		det := entry["detections"].([]any)[0].(map[string]any)
		box := det["box"].([]int)
		r := image.Rect(box[0], box[1], box[0]+box[2], box[1]+box[3])
		for _, p := range astronautEyes {
			if !p.In(r) {
				t.Fatalf("%s: detection box %v misses eye %v", format, r, p)
			}
		}
		if c := det["confidence"].(float64); c <= 0.5 || c > 1 {
			t.Fatalf("confidence %v", c)
		}
		eyes := det["eyes"].([]any)
		for k, e := range eyes {
			c := e.(map[string]any)["center"].([]int)
			if d := image.Pt(c[0], c[1]).Sub(astronautEyes[k]); abs(d.X) > 4 || abs(d.Y) > 4 {
				t.Fatalf("eye %d localised at %v, measured %v", k, c, astronautEyes[k])
			}
		}
	}
}

// Proves: IN-M6-02 (only detections above confidence), IN-M6-03 (maxDetections).
func TestINM602_ConfidenceThresholdDropsDetections(t *testing.T) {
	h := newHarness(t)
	img, doc := runMask(t, h, map[string]any{"confidence": 0.999}, "PNG")
	if doc["detections"] != 0 {
		t.Fatalf("%v detections above 0.999", doc["detections"])
	}
	if r, n := diffBounds(img, image.NewGray(img.Bounds())); n != 0 {
		t.Fatalf("mask without detections is not black: %v", r)
	}
	// With no threshold pigo's weak candidates count too (3 on this photo).
	_, doc = runMask(t, h, map[string]any{"maxDetections": 20, "confidence": 0}, "PNG")
	all := doc["masks"].([]any)[0].(map[string]any)["detections"].([]any)
	if len(all) < 2 {
		t.Fatalf("confidence 0 kept %d detections, want the weak ones too", len(all))
	}
	_, doc = runMask(t, h, map[string]any{"maxDetections": 1, "confidence": 0}, "PNG")
	kept := doc["masks"].([]any)[0].(map[string]any)["detections"].([]any)
	if len(kept) != 1 || doc["detections"] != 1 {
		t.Fatalf("maxDetections 1 kept %d", len(kept))
	}
	best := all[0].(map[string]any)["confidence"].(float64)
	for _, d := range all {
		best = max(best, d.(map[string]any)["confidence"].(float64))
	}
	if kept[0].(map[string]any)["confidence"] != best {
		t.Fatalf("maxDetections 1 kept %v, not the best (%v)", kept[0], best)
	}
}

func whiteCount(img image.Image) (white, between int) {
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			switch v := nrgbaAt(img, x, y).R; {
			case v == 255:
				white++
			case v > 0:
				between++
			}
		}
	}
	return white, between
}

// Proves: IN-M6-04 (maskPadding grows the mask), IN-M6-05 (maskBlur feathers it).
func TestINM604_PaddingAndBlurShapeTheMask(t *testing.T) {
	h := newHarness(t)
	sharp, _ := runMask(t, h, map[string]any{"maskPadding": 0, "maskBlur": 0}, "PNG")
	w0, b0 := whiteCount(sharp)
	if w0 == 0 || b0 != 0 {
		t.Fatalf("maskBlur 0: %d white and %d grey pixels, want a hard mask", w0, b0)
	}
	padded, _ := runMask(t, h, map[string]any{"maskPadding": 30, "maskBlur": 0}, "PNG")
	if w1, _ := whiteCount(padded); w1 <= 2*w0 {
		t.Fatalf("maskPadding 30: %d white pixels, padding 0 had %d", w1, w0)
	}
	soft, _ := runMask(t, h, map[string]any{"maskPadding": 0, "maskBlur": 20}, "PNG")
	if _, b2 := whiteCount(soft); b2 < 500 {
		t.Fatalf("maskBlur 20: only %d feathered pixels", b2)
	}
}

// Proves: ERR-73 (image_unreadable at body.inputs.image).
func TestERR73_MaskRefusesUnreadableImage(t *testing.T) {
	h := newHarness(t)
	h.in["https://x/bad.jpg"] = []byte{0xff, 0xd8, 0xff, 0x00, 1, 2, 3}
	res, err := h.try(context.Background(), SlugEyeMask, map[string]any{"inputs": map[string]any{"image": "https://x/bad.jpg"}})
	ref := refusalOf(t, err)
	if ref.Code != "image_unreadable" || !slices.Equal(ref.Detail[0].Loc, []string{"body", "inputs", "image"}) || res.Done != 0 {
		t.Fatalf("refusal %+v done %v", ref, res.Done)
	}
}

func TestMaskCancelMidRun(t *testing.T) {
	h := newHarness(t)
	h.in["https://x/face.jpg"] = readTestdata(t, "astronaut.jpg")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h.rep.onProgress = func(float64) { cancel() }
	res, err := h.try(ctx, SlugEyeMask, map[string]any{"inputs": map[string]any{"image": "https://x/face.jpg"}})
	if !errors.Is(err, context.Canceled) || res.Done <= 0 || res.Done >= 1 {
		t.Fatalf("err %v done %v, want context.Canceled part way", err, res.Done)
	}
}
