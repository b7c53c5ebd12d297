package builtin

import (
	"context"
	"image"
	"image/color"
	"slices"
	"testing"
)

// diffBounds is the bounding box of the pixels where a and b differ, and how many differ.
func diffBounds(a, b image.Image) (image.Rectangle, int) {
	var r image.Rectangle
	n := 0
	bb := a.Bounds()
	for y := bb.Min.Y; y < bb.Max.Y; y++ {
		for x := bb.Min.X; x < bb.Max.X; x++ {
			if nrgbaAt(a, x, y) != nrgbaAt(b, x, y) {
				r = r.Union(image.Rect(x, y, x+1, y+1))
				n++
			}
		}
	}
	return r, n
}

// watermarked runs slug twice, with and without the watermark, and returns both images.
func watermarked(t *testing.T, h *harness, slug string, in map[string]any, wm map[string]any) (plain, marked image.Image) {
	t.Helper()
	in["outputFormat"] = "PNG"
	delete(in, "advancedFeatures")
	plain = h.decoded(h.run(slug, in), "png")
	in["advancedFeatures"] = map[string]any{"watermark": wm}
	marked = h.decoded(h.run(slug, in), "png")
	return plain, marked
}

func genInput() map[string]any {
	return map[string]any{"positivePrompt": "ocean", "width": 240, "height": 160, "seed": 8, "steps": 1}
}

// Proves: IN-SHARED-11, IN-SHARED-12, IN-SHARED-14 (text watermark in fontColor on bgColor at
// each displayPosition).
func TestINSHARED12_TextWatermarkSitsAtDisplayPosition(t *testing.T) {
	const w, h, margin = 240, 160, 4
	third := func(v, size int) int { return min(2, v*3/size) }
	cases := []struct {
		pos    string
		col    int // 0 left, 1 centre, 2 right
		row    int
		corner func(r image.Rectangle) bool // exact placement against the margin
	}{
		{"top-left", 0, 0, func(r image.Rectangle) bool { return r.Min == image.Pt(margin, margin) }},
		{"top-center", 1, 0, func(r image.Rectangle) bool { return r.Min.Y == margin && abs(r.Min.X+r.Max.X-w) <= 1 }},
		{"top-right", 2, 0, func(r image.Rectangle) bool { return r.Min.Y == margin && r.Max.X == w-margin }},
		{"center-left", 0, 1, func(r image.Rectangle) bool { return r.Min.X == margin && abs(r.Min.Y+r.Max.Y-h) <= 1 }},
		{"center-center", 1, 1, func(r image.Rectangle) bool { return abs(r.Min.X+r.Max.X-w) <= 1 && abs(r.Min.Y+r.Max.Y-h) <= 1 }},
		{"center-right", 2, 1, func(r image.Rectangle) bool { return r.Max.X == w-margin && abs(r.Min.Y+r.Max.Y-h) <= 1 }},
		{"bottom-left", 0, 2, func(r image.Rectangle) bool { return r.Min.X == margin && r.Max.Y == h-margin }},
		{"bottom-center", 1, 2, func(r image.Rectangle) bool { return r.Max.Y == h-margin && abs(r.Min.X+r.Max.X-w) <= 1 }},
		{"bottom-right", 2, 2, func(r image.Rectangle) bool { return r.Max == image.Pt(w-margin, h-margin) }},
	}
	hn := newHarness(t)
	for _, c := range cases {
		t.Run(c.pos, func(t *testing.T) {
			plain, marked := watermarked(t, hn, SlugImageLite, genInput(),
				map[string]any{"text": "Hi there", "displayPosition": c.pos, "fontColor": "#0000FF", "bgColor": "#FF0000", "opacity": 1})
			r, n := diffBounds(plain, marked)
			if n == 0 {
				t.Fatal("the watermark changed no pixel")
			}
			mid := r.Min.Add(r.Max).Div(2)
			if third(mid.X, w) != c.col || third(mid.Y, h) != c.row {
				t.Fatalf("watermark box %v is not at %s", r, c.pos)
			}
			if !c.corner(r) {
				t.Fatalf("watermark box %v is not placed %d px from the edges for %s", r, margin, c.pos)
			}
			if r.Dx() >= w/2 || r.Dy() >= h/2 {
				t.Fatalf("watermark box %v too large", r)
			}
			// The box is the opaque bgColor; the text is drawn in fontColor inside it.
			if got := nrgbaAt(marked, r.Min.X+1, r.Min.Y+1); got != (color.NRGBA{255, 0, 0, 255}) {
				t.Fatalf("background pixel %v, want #FF0000", got)
			}
			blue := 0
			for y := r.Min.Y; y < r.Max.Y; y++ {
				for x := r.Min.X; x < r.Max.X; x++ {
					if c := nrgbaAt(marked, x, y); c.B > 200 && c.R < 60 {
						blue++
					}
				}
			}
			if blue < 20 {
				t.Fatalf("only %d text pixels in fontColor", blue)
			}
		})
	}
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

// Proves: IN-SHARED-12 (tiled), IN-SHARED-13 (opacity).
func TestINSHARED13_TiledWatermarkWithOpacity(t *testing.T) {
	hn := newHarness(t)
	plain, marked := watermarked(t, hn, SlugImage4B, genInput(),
		map[string]any{"text": "tile", "displayPosition": "tiled", "bgColor": "#FFFFFF", "fontColor": "#000000", "opacity": 0.5})
	r, n := diffBounds(plain, marked)
	if n < 240*160/8 {
		t.Fatalf("tiled watermark changed only %d pixels", n)
	}
	quads := [4]int{}
	for y := 0; y < 160; y++ {
		for x := 0; x < 240; x++ {
			if nrgbaAt(plain, x, y) != nrgbaAt(marked, x, y) {
				quads[(y/80)*2+x/120]++
			}
		}
	}
	for q, c := range quads {
		if c == 0 {
			t.Fatalf("quadrant %d has no watermark (box %v)", q, r)
		}
	}
	// The first tile starts at the margin; its bgColor at opacity 0.5 lies halfway between
	// the picture and white.
	p, m := nrgbaAt(plain, 5, 5), nrgbaAt(marked, 5, 5)
	for _, pair := range [][2]uint8{{p.R, m.R}, {p.G, m.G}, {p.B, m.B}} {
		want := (int(pair[0]) + 255) / 2
		if d := int(pair[1]) - want; d < -1 || d > 1 {
			t.Fatalf("opacity 0.5 over %v gave %v", p, m)
		}
	}
}

// Proves: IN-SHARED-11 (image watermark fetched through Inputs).
func TestINSHARED11_ImageWatermark(t *testing.T) {
	hn := newHarness(t)
	green := color.NRGBA{0, 255, 0, 255}
	hn.in["https://x/logo.png"] = pngBytes(t, solid(40, 20, green))
	plain, marked := watermarked(t, hn, SlugImageTurbo, genInput(), map[string]any{"image": "https://x/logo.png", "displayPosition": "bottom-left"})
	r, _ := diffBounds(plain, marked)
	if r != image.Rect(4, 160-4-20, 4+40, 160-4) {
		t.Fatalf("image watermark at %v, want 40x20 at bottom-left", r)
	}
	if c := nrgbaAt(marked, 20, 145); c != green {
		t.Fatalf("watermark pixel %v, want green", c)
	}

	in := genInput()
	in["advancedFeatures"] = map[string]any{"watermark": map[string]any{"image": "https://x/missing.png"}}
	_, err := hn.try(context.Background(), SlugImageTurbo, in)
	ref := refusalOf(t, err)
	if ref.Code != "image_unreadable" || !slices.Equal(ref.Detail[0].Loc, []string{"body", "advancedFeatures", "watermark", "image"}) {
		t.Fatalf("refusal %+v", ref)
	}
}

// Proves: IN-SHARED-11 on every image model that makes a picture (M1-M4, M7-M9).
func TestINSHARED11_EveryImageModelStampsTheWatermark(t *testing.T) {
	hn := newHarness(t)
	hn.in["https://x/ref.png"] = pngBytes(t, solid(120, 80, color.NRGBA{30, 90, 160, 255}))
	inputs := map[string]map[string]any{
		SlugImageEdit: {"positivePrompt": "warm", "width": 240, "height": 160, "seed": 1, "steps": 1, "inputs": map[string]any{"referenceImages": []string{"https://x/ref.png"}}},
		SlugUpscale:   {"upscaleFactor": 2, "inputs": map[string]any{"image": "https://x/ref.png"}},
	}
	for _, s := range generatorSlugs {
		inputs[s] = genInput()
	}
	for slug, in := range inputs {
		plain, marked := watermarked(t, hn, slug, in, map[string]any{"text": "wm", "displayPosition": "top-right", "bgColor": "#00FF00"})
		r, n := diffBounds(plain, marked)
		if n == 0 || r.Max.X != 240-4 || r.Min.Y != 4 {
			t.Errorf("%s: watermark box %v (%d pixels), want at top-right", slug, r, n)
		}
	}
}
