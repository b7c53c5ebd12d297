package builtin

import (
	"context"
	"fmt"
	"image"
	"math"

	"github.com/modelexec/modelexec/internal/runners"
)

// generateInput is the part of an M1, M2, M3, M8 or M9 input the generator reads.
type generateInput struct {
	imageOptions
	PositivePrompt string   `json:"positivePrompt"`
	NegativePrompt string   `json:"negativePrompt"`
	Width          int      `json:"width"`
	Height         int      `json:"height"`
	Seed           int64    `json:"seed"`
	Steps          int      `json:"steps"`
	Strength       *float64 `json:"strength"`
	MaskMargin     int      `json:"maskMargin"`
	Inputs         struct {
		SeedImage string `json:"seedImage"`
		MaskImage string `json:"maskImage"`
	} `json:"inputs"`
	Outpaint *outpaintOptions `json:"outpaint"`
}

type outpaintOptions struct {
	Top    int `json:"top"`
	Bottom int `json:"bottom"`
	Left   int `json:"left"`
	Right  int `json:"right"`
	Blur   int `json:"blur"`
}

// Default inpainting strength of M8 and M9.
const defaultStrength = 0.8

// generator is the reference runner of the image generation models.
type generator struct {
	slug         string
	defaultSteps int
	// composite: the model takes seedImage, maskImage, maskMargin, strength and outpaint (M8, M9).
	composite bool
	// layers: the model takes advancedFeatures.layerDiffuse (M8).
	layers bool
	images decoder
	now    clock
}

func (g *generator) Run(ctx context.Context, job runners.Job, env runners.Env) (runners.Result, error) {
	start := g.now()
	rep := reporter(env)
	var in generateInput
	if err := decodeInput(job, &in); err != nil {
		return runners.Result{}, err
	}
	w, h := in.Width, in.Height
	if w == 0 && h == 0 {
		w, h = 1024, 1024
	}
	if w < 1 || h < 1 || w > 8192 || h > 8192 {
		return runners.Result{}, refusal("invalid_input", fmt.Sprintf("width x height %dx%d is outside 1..8192", w, h), "width")
	}
	steps := in.Steps
	if steps <= 0 {
		steps = g.defaultSteps
	}
	transparent := g.layers && in.AdvancedFeatures.LayerDiffuse
	rep.Log("info", fmt.Sprintf("%s: %dx%d, %d steps, seed %d, format %s", g.slug, w, h, steps, in.Seed, in.format()))

	// Url inputs are read before any step, so an unreadable file is refused with no work done.
	var seedImg, maskImg image.Image
	if g.composite && in.Inputs.SeedImage != "" {
		var err error
		if seedImg, err = g.images.fetch(ctx, env, in.Inputs.SeedImage, "inputs", "seedImage"); err != nil {
			return runners.Result{}, err
		}
		if in.Inputs.MaskImage != "" {
			if maskImg, err = g.images.fetch(ctx, env, in.Inputs.MaskImage, "inputs", "maskImage"); err != nil {
				return runners.Result{}, err
			}
		}
	}
	inner := image.Rect(0, 0, w, h)
	if g.composite && in.Outpaint != nil {
		o := in.Outpaint
		// Not image.Rect: it would swap crossed edges instead of showing there is no room.
		inner = image.Rectangle{Min: image.Pt(o.Left, o.Top), Max: image.Pt(w-o.Right, h-o.Bottom)}
		if o.Left < 0 || o.Top < 0 || o.Right < 0 || o.Bottom < 0 || inner.Dx() < 8 || inner.Dy() < 8 {
			return runners.Result{}, refusal("invalid_input", fmt.Sprintf("outpaint extents leave no room for the source in a %dx%d image", w, h), "outpaint")
		}
	}
	// The edit mask, in output coordinates: 1 where new content goes.
	var edit []float64
	view := image.Rect(0, 0, w, h)
	if maskImg != nil {
		edit = maskPlane(maskImg, w, h, inner)
		if in.MaskMargin > 0 {
			// The model looks at the masked area plus maskMargin pixels of context: the new
			// content is composed for that region, not for the whole canvas.
			if box, ok := planeBounds(edit, w, h, 0.5); ok {
				view = box.Inset(-in.MaskMargin).Intersect(image.Rect(0, 0, w, h))
			}
		}
	}

	sc := newScene(seededRand(in.Seed, g.slug, in.PositivePrompt, in.NegativePrompt), in.PositivePrompt, transparent)
	gen := image.NewNRGBA(image.Rect(0, 0, w, h))
	done := 0
	metrics := func() map[string]float64 {
		return map[string]float64{
			"inference_seconds": g.now.since(start),
			"steps":             float64(done),
			"megapixels":        float64(w*h) / 1e6,
		}
	}
	var err error
	if done, err = stepRows(ctx, rep, steps, h, func(y0, y1 int) { sc.renderRows(gen, view, y0, y1) }); err != nil {
		return runners.Result{Metrics: metrics(), Done: float64(done) / float64(steps)}, err
	}

	out := gen
	if seedImg != nil {
		strength := defaultStrength
		if in.Strength != nil {
			strength = clamp01(*in.Strength)
		}
		blur := 0
		if in.Outpaint != nil {
			blur = in.Outpaint.Blur
		}
		out = composeSeed(gen, seedImg, inner, blur, edit, strength)
		rep.Log("info", fmt.Sprintf("composited seed image into %v (strength %.2f, mask %t, outpaint blur %d)", inner, strength, edit != nil, blur))
	} else if g.composite && in.Outpaint != nil {
		rep.Log("info", "outpaint without seedImage: the whole canvas is generated")
	}
	if _, err := g.images.applyWatermark(ctx, env, out, in.AdvancedFeatures.Watermark); err != nil {
		return runners.Result{Metrics: metrics(), Done: 1}, err
	}
	entry, file, err := storeImage(ctx, env, job.ID+"-0", out, in.format(), in.quality())
	if err != nil {
		return runners.Result{Metrics: metrics(), Done: 1}, err
	}
	entry["seed"] = in.Seed
	m := metrics()
	m["output_bytes"] = float64(file.Bytes)
	rep.Log("info", fmt.Sprintf("stored %s (%d bytes) in %.3fs", entry["content_type"], file.Bytes, m["inference_seconds"]))
	return imageResult(entry, in.Seed, in.PositivePrompt, file, m), nil
}

// maskPlane reads a mask image as luminance 0..1, fitted to the inner rectangle of a w x h
// canvas; outside inner (the outpainted border) everything is new content.
func maskPlane(mask image.Image, w, h int, inner image.Rectangle) []float64 {
	m := resizeTo(mask, inner.Dx(), inner.Dy())
	p := make([]float64, w*h)
	for i := range p {
		p[i] = 1
	}
	for y := 0; y < inner.Dy(); y++ {
		for x := 0; x < inner.Dx(); x++ {
			o := m.PixOffset(x, y)
			lum := (0.299*float64(m.Pix[o]) + 0.587*float64(m.Pix[o+1]) + 0.114*float64(m.Pix[o+2])) / 255
			p[(y+inner.Min.Y)*w+x+inner.Min.X] = lum * float64(m.Pix[o+3]) / 255
		}
	}
	return p
}

// planeBounds is the bounding box of the plane's values above threshold.
func planeBounds(p []float64, w, h int, threshold float64) (image.Rectangle, bool) {
	r := image.Rectangle{}
	found := false
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			if p[y*w+x] > threshold {
				pr := image.Rect(x, y, x+1, y+1)
				if !found {
					r, found = pr, true
				} else {
					r = r.Union(pr)
				}
			}
		}
	}
	return r, found
}

// composeSeed places the seed image (scaled to inner) on the generated canvas, feathering the
// seam of an outpaint by blur pixels, then blends the generated content in at strength where
// the edit plane says. With no mask, an outpaint keeps the source as it is and a plain
// image-to-image run blends the whole canvas.
func composeSeed(gen *image.NRGBA, seed image.Image, inner image.Rectangle, blur int, edit []float64, strength float64) *image.NRGBA {
	outpaint := inner != gen.Bounds()
	b := gen.Bounds()
	w, h := b.Dx(), b.Dy()
	src := resizeTo(seed, inner.Dx(), inner.Dy())
	// keep: weight of the source image, 1 inside inner, feathered across the seam.
	keep := make([]float64, w*h)
	for y := inner.Min.Y; y < inner.Max.Y; y++ {
		for x := inner.Min.X; x < inner.Max.X; x++ {
			keep[y*w+x] = 1
		}
	}
	if blur > 0 && inner != b {
		boxBlurPlane(keep, w, h, int(math.Ceil(float64(blur)/2)))
		// The source stays untouched well inside the seam.
		for y := inner.Min.Y + blur; y < inner.Max.Y-blur; y++ {
			for x := inner.Min.X + blur; x < inner.Max.X-blur; x++ {
				keep[y*w+x] = 1
			}
		}
	}
	out := image.NewNRGBA(b)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			o := out.PixOffset(x, y)
			// base: the outpainted seed image.
			var base [4]float64
			k := keep[y*w+x]
			sx, sy := min(max(x-inner.Min.X, 0), inner.Dx()-1), min(max(y-inner.Min.Y, 0), inner.Dy()-1)
			so := src.PixOffset(sx, sy)
			for c := 0; c < 4; c++ {
				base[c] = float64(src.Pix[so+c])*k + float64(gen.Pix[o+c])*(1-k)
			}
			e := strength
			if edit != nil {
				e = edit[y*w+x] * strength
				if !image.Pt(x, y).In(inner) {
					e = 1 // the outpainted border is all new content
				}
			} else if outpaint {
				e = 0 // outpainting keeps the source and only adds the border (already in base)
			}
			for c := 0; c < 4; c++ {
				v := base[c]*(1-e) + float64(gen.Pix[o+c])*e
				out.Pix[o+c] = uint8(math.Round(math.Min(255, math.Max(0, v))))
			}
		}
	}
	return out
}
