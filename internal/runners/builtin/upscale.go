package builtin

import (
	"context"
	"fmt"
	"image"
	"math"

	"github.com/modelexec/modelexec/internal/runners"
)

// upscaleInput is the part of an M4 input the upscaler reads.
type upscaleInput struct {
	imageOptions
	UpscaleFactor *float64 `json:"upscaleFactor"`
	Settings      struct {
		Seed *int64 `json:"seed"`
	} `json:"settings"`
	Inputs struct {
		Image string `json:"image"`
	} `json:"inputs"`
}

// Upscaler limits: the contract's factor range and the largest output it renders.
const (
	defaultUpscaleFactor = 2.0
	maxUpscalePixels     = 64 << 20 // 8192 x 8192: 256 MiB of pixels to encode
	maxUpscaleSide       = 16383    // the longest side every output format holds (WEBP's)
	upscaleBands         = 4        // work units reported as progress
)

// upscaler is the reference runner of M4: Catmull-Rom resampling by upscaleFactor.
type upscaler struct {
	now    clock
	images decoder
}

// upscaledSize is the exact output size: round(w*f) x round(h*f).
func upscaledSize(w, h int, f float64) (int, int) {
	return int(math.Round(float64(w) * f)), int(math.Round(float64(h) * f))
}

func (u *upscaler) Run(ctx context.Context, job runners.Job, env runners.Env) (runners.Result, error) {
	start := u.now()
	rep := reporter(env)
	var in upscaleInput
	if err := decodeInput(job, &in); err != nil {
		return runners.Result{}, err
	}
	f := defaultUpscaleFactor
	if in.UpscaleFactor != nil {
		f = *in.UpscaleFactor
	}
	if f < 1 || f > 4 || math.IsNaN(f) {
		return runners.Result{}, refusal("invalid_input", fmt.Sprintf("upscaleFactor %g is outside 1 to 4", f), "upscaleFactor")
	}
	src, err := u.images.fetchFitting(ctx, env, in.Inputs.Image, func(sw, sh int) error {
		w, h := upscaledSize(sw, sh, f)
		if int64(w)*int64(h) > maxUpscalePixels || max(w, h) > maxUpscaleSide {
			return refusal("invalid_input", fmt.Sprintf("a %dx%d image upscaled by %g would be %dx%d; the upscaler renders at most %d pixels, %d a side", sw, sh, f, w, h, maxUpscalePixels, maxUpscaleSide), "upscaleFactor")
		}
		return fitsFormat(in.format(), w, h)
	}, "inputs", "image")
	if err != nil {
		return runners.Result{}, err
	}
	sb := src.Bounds()
	w, h := upscaledSize(sb.Dx(), sb.Dy(), f)
	rep.Log("info", fmt.Sprintf("upscale: %dx%d x%g -> %dx%d (Catmull-Rom), format %s", sb.Dx(), sb.Dy(), f, w, h, in.format()))

	dst := image.NewNRGBA(image.Rect(0, 0, w, h))
	done := 0.0
	metrics := func() map[string]float64 {
		return map[string]float64{
			"inference_seconds": u.now.since(start),
			"steps":             math.Floor(done * upscaleBands),
			"megapixels":        float64(w*h) / 1e6,
			"upscale_factor":    f,
		}
	}
	reported := 0
	rows, err := resample(ctx, dst, src, sb, func(rows int) {
		done = float64(rows) / float64(h)
		if q := int(done * upscaleBands); q > reported {
			reported = q
			rep.Progress(float64(q) / upscaleBands)
		}
	})
	if err != nil {
		rep.Log("warn", fmt.Sprintf("cancelled after %d of %d rows", rows, h))
		return runners.Result{Metrics: metrics(), Done: done}, err
	}
	if _, err := u.images.applyWatermark(ctx, env, dst, in.AdvancedFeatures.Watermark); err != nil {
		return runners.Result{Metrics: metrics(), Done: 1}, err
	}
	entry, file, err := storeImage(ctx, env, job.ID+"-0", dst, in.format(), in.quality())
	if err != nil {
		return runners.Result{Metrics: metrics(), Done: 1}, err
	}
	m := metrics()
	m["output_bytes"] = float64(file.Bytes)
	doc := map[string]any{
		"images":         []any{entry},
		"upscale_factor": f,
		"input":          map[string]any{"width": sb.Dx(), "height": sb.Dy()},
		"timings":        map[string]float64{"inference": m["inference_seconds"]},
	}
	if in.Settings.Seed != nil {
		doc["seed"] = *in.Settings.Seed
	}
	rep.Log("info", fmt.Sprintf("stored %s (%d bytes)", file.ContentType, file.Bytes))
	return runners.Result{Document: doc, Files: []runners.File{file}, Metrics: m, Done: 1}, nil
}
