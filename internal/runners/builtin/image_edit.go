package builtin

import (
	"context"
	"fmt"
	"image"
	"math"

	"github.com/modelexec/modelexec/internal/runners"
)

// editInput is the part of an M7 input the editor reads.
type editInput struct {
	imageOptions
	PositivePrompt string `json:"positivePrompt"`
	NegativePrompt string `json:"negativePrompt"`
	Width          int    `json:"width"`
	Height         int    `json:"height"`
	Seed           int64  `json:"seed"`
	Steps          int    `json:"steps"`
	Inputs         struct {
		ReferenceImages []string `json:"referenceImages"`
	} `json:"inputs"`
}

// editor is the reference runner of M7: the reference image, cropped to the asked aspect
// and resized to width x height, then colour graded by a grade the prompt and seed pick.
type editor struct {
	now    clock
	images decoder
}

// grade is a lift/gamma/gain colour grade per channel plus a saturation change and a
// vignette.
type grade struct {
	lift, gamma, gain [3]float64
	saturation        float64
	vignette          float64
}

func newGrade(in editInput) grade {
	rng := seededRand(in.Seed, SlugImageEdit, in.PositivePrompt, in.NegativePrompt)
	warm := (rng.Float64() - 0.5) * 0.16 // + warm, - cool
	var g grade
	for c := 0; c < 3; c++ {
		g.lift[c] = (rng.Float64() - 0.5) * 0.06
		g.gamma[c] = 0.85 + rng.Float64()*0.3
		g.gain[c] = 0.95 + rng.Float64()*0.12
	}
	g.gain[0] += warm
	g.gain[2] -= warm
	g.saturation = 0.8 + rng.Float64()*0.5
	g.vignette = rng.Float64() * 0.35
	return g
}

func (g grade) applyRows(img *image.NRGBA, y0, y1 int) {
	b := img.Bounds()
	cx, cy := float64(b.Dx())/2, float64(b.Dy())/2
	rmax := math.Hypot(cx, cy)
	for y := max(y0, b.Min.Y); y < min(y1, b.Max.Y); y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			o := img.PixOffset(x, y)
			var c [3]float64
			for k := 0; k < 3; k++ {
				v := float64(img.Pix[o+k]) / 255
				v = g.lift[k] + (1-g.lift[k])*v
				v = math.Pow(clamp01(v*g.gain[k]), g.gamma[k])
				c[k] = v
			}
			lum := 0.2126*c[0] + 0.7152*c[1] + 0.0722*c[2]
			d := math.Hypot(float64(x)+0.5-cx, float64(y)+0.5-cy) / rmax
			vig := 1 - g.vignette*d*d
			for k := 0; k < 3; k++ {
				img.Pix[o+k] = to8((lum + (c[k]-lum)*g.saturation) * vig)
			}
		}
	}
}

func (e *editor) Run(ctx context.Context, job runners.Job, env runners.Env) (runners.Result, error) {
	start := e.now()
	rep := reporter(env)
	var in editInput
	if err := decodeInput(job, &in); err != nil {
		return runners.Result{}, err
	}
	if len(in.Inputs.ReferenceImages) == 0 {
		return runners.Result{}, refusal("image_required", "inputs.referenceImages needs exactly one image", "inputs", "referenceImages")
	}
	ref, err := e.images.fetch(ctx, env, in.Inputs.ReferenceImages[0], "inputs", "referenceImages", "0")
	if err != nil {
		return runners.Result{}, err
	}
	w, h := in.Width, in.Height
	if w == 0 || h == 0 { // no size asked: keep the reference's
		w, h = ref.Bounds().Dx(), ref.Bounds().Dy()
	}
	if w > 8192 || h > 8192 {
		return runners.Result{}, refusal("invalid_input", fmt.Sprintf("width x height %dx%d is above 8192", w, h), "width")
	}
	steps := in.Steps
	if steps <= 0 {
		steps = 8
	}
	rb := ref.Bounds()
	rep.Log("info", fmt.Sprintf("image-edit: reference %dx%d -> %dx%d, %d steps, seed %d", rb.Dx(), rb.Dy(), w, h, steps, in.Seed))

	img := coverTo(ref, w, h)
	g := newGrade(in)
	done := 0
	metrics := func() map[string]float64 {
		return map[string]float64{
			"inference_seconds": e.now.since(start),
			"steps":             float64(done),
			"megapixels":        float64(w*h) / 1e6,
		}
	}
	if done, err = stepRows(ctx, rep, steps, h, func(y0, y1 int) { g.applyRows(img, y0, y1) }); err != nil {
		return runners.Result{Metrics: metrics(), Done: float64(done) / float64(steps)}, err
	}
	if _, err := e.images.applyWatermark(ctx, env, img, in.AdvancedFeatures.Watermark); err != nil {
		return runners.Result{Metrics: metrics(), Done: 1}, err
	}
	entry, file, err := storeImage(ctx, env, job.ID+"-0", img, in.format(), in.quality())
	if err != nil {
		return runners.Result{Metrics: metrics(), Done: 1}, err
	}
	entry["seed"] = in.Seed
	m := metrics()
	m["output_bytes"] = float64(file.Bytes)
	rep.Log("info", fmt.Sprintf("stored %s (%d bytes)", file.ContentType, file.Bytes))
	return imageResult(entry, in.Seed, in.PositivePrompt, file, m), nil
}
