package builtin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"image"
	"image/color"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	// Decoders for url inputs: JPEG, PNG, GIF and WEBP (the webp package registers itself).
	_ "image/gif"
	_ "image/jpeg"
	_ "image/png"

	_ "github.com/gen2brain/webp"
	xdraw "golang.org/x/image/draw"

	"github.com/modelexec/modelexec/internal/imagebudget"
	"github.com/modelexec/modelexec/internal/runners"
)

// maxInputPixels bounds the size of a decoded url input (its header is read first), so a
// small file that claims a huge canvas cannot exhaust memory.
const maxInputPixels = 40 << 20

// imageOptions are the shared output options every image runner reads.
type imageOptions struct {
	OutputFormat     string           `json:"outputFormat"`
	OutputQuality    int              `json:"outputQuality"`
	AdvancedFeatures advancedFeatures `json:"advancedFeatures"`
}

type advancedFeatures struct {
	Watermark    *watermarkOptions `json:"watermark"`
	LayerDiffuse bool              `json:"layerDiffuse"`
}

// format returns the normalised output format (JPG by default).
func (o imageOptions) format() string {
	f := strings.ToUpper(o.OutputFormat)
	switch f {
	case "PNG", "WEBP":
		return f
	case "JPEG":
		return "JPG"
	default:
		return "JPG"
	}
}

// quality returns outputQuality clamped to the contract's 20..99, 95 when absent.
func (o imageOptions) quality() int {
	if o.OutputQuality == 0 {
		return 95
	}
	return min(max(o.OutputQuality, 20), 99)
}

// nopReporter stands in for a nil Env.Report.
type nopReporter struct{}

func (nopReporter) Log(string, string) {}
func (nopReporter) Progress(float64)   {}
func reporter(env runners.Env) runners.Reporter {
	if env.Report == nil {
		return nopReporter{}
	}
	return env.Report
}

// refusal builds the model's refusal of one input field.
func refusal(code, msg string, loc ...string) *runners.Refusal {
	return &runners.Refusal{Code: code, Detail: []runners.Violation{{
		Loc:  append([]string{"body"}, loc...),
		Msg:  msg,
		Type: "value_error",
	}}}
}

// decodeInput parses the job input into v; a malformed input is the caller's bug, not the
// user's, but it is still a refusal of the request as written.
func decodeInput(job runners.Job, v any) error {
	if err := json.Unmarshal(job.Input, v); err != nil {
		return &runners.Refusal{Code: "invalid_input", Detail: []runners.Violation{{
			Loc: []string{"body"}, Msg: "input does not match the model's contract: " + err.Error(), Type: "type_error",
		}}}
	}
	return nil
}

// decoder reads the runners' url inputs as images, decoding them within the process's image
// budget: what a decode takes is read from the file's header, and a decode waits for room.
type decoder struct{ budget *imagebudget.Budget }

// fetch fetches and decodes the url input at loc. Refusals and failures of the fetcher pass
// through; a context error is returned as is; anything else that stops the file from becoming
// an image is image_unreadable.
func (d decoder) fetch(ctx context.Context, env runners.Env, url string, loc ...string) (image.Image, error) {
	return d.fetchFitting(ctx, env, url, nil, loc...)
}

// fetchFitting is fetch with fits asked about the image's size, read from its header, before
// its pixels are decoded: a runner refuses what it cannot render without decoding it first.
func (d decoder) fetchFitting(ctx context.Context, env runners.Env, url string, fits func(w, h int) error, loc ...string) (image.Image, error) {
	if url == "" {
		return nil, refusal("image_required", "an image url is required", loc...)
	}
	if env.Inputs == nil {
		return nil, &runners.Failure{Code: "runner_failed", Message: "No fetcher is configured for input files."}
	}
	data, _, err := env.Inputs.Fetch(ctx, url)
	if err != nil {
		var ref *runners.Refusal
		var fail *runners.Failure
		switch {
		case errors.As(err, &ref), errors.As(err, &fail):
			return nil, err
		case ctx.Err() != nil:
			return nil, ctx.Err()
		default:
			// The fetcher's words for the person (the URL and why), never its error chain,
			// which can name the service's own hosts and files.
			msg := "the image could not be fetched"
			var d interface{ Describe() string }
			if errors.As(err, &d) {
				msg = "the image at " + d.Describe()
			}
			return nil, refusal("image_unreadable", msg, loc...)
		}
	}
	cfg, _, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return nil, refusal("image_unreadable", "the file is not a readable JPEG, PNG, GIF or WEBP image", loc...)
	}
	if cfg.Width <= 0 || cfg.Height <= 0 || int64(cfg.Width)*int64(cfg.Height) > maxInputPixels {
		return nil, refusal("image_unreadable", fmt.Sprintf("the image is %dx%d; at most %d pixels are read", cfg.Width, cfg.Height, maxInputPixels), loc...)
	}
	if fits != nil {
		if err := fits(cfg.Width, cfg.Height); err != nil {
			return nil, err
		}
	}
	release, err := d.budget.Acquire(ctx, imagebudget.Cost(data, cfg.Width, cfg.Height))
	var costly *imagebudget.TooCostlyError
	switch {
	case errors.As(err, &costly):
		return nil, refusal("image_unreadable", costly.Error(), loc...)
	case err != nil:
		return nil, err // the run's context ended while it waited for room
	}
	defer release()
	img, _, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, refusal("image_unreadable", "the image could not be decoded: "+err.Error(), loc...)
	}
	return img, nil
}

// toNRGBA copies img into a fresh NRGBA whose bounds start at (0,0).
func toNRGBA(img image.Image) *image.NRGBA {
	b := img.Bounds()
	dst := image.NewNRGBA(image.Rect(0, 0, b.Dx(), b.Dy()))
	xdraw.Draw(dst, dst.Bounds(), img, b.Min, xdraw.Src)
	return dst
}

// resizeTo scales img to exactly w x h (stretching) with Catmull-Rom.
func resizeTo(img image.Image, w, h int) *image.NRGBA {
	dst := image.NewNRGBA(image.Rect(0, 0, w, h))
	_, _ = resample(context.Background(), dst, img, img.Bounds(), nil) // no context: it ends
	return dst
}

// coverTo scales img to cover w x h keeping its aspect ratio and crops the centre.
func coverTo(img image.Image, w, h int) *image.NRGBA {
	b := img.Bounds()
	sw, sh := float64(b.Dx()), float64(b.Dy())
	scale := math.Max(float64(w)/sw, float64(h)/sh)
	cw, ch := float64(w)/scale, float64(h)/scale
	x0 := b.Min.X + int(math.Round((sw-cw)/2))
	y0 := b.Min.Y + int(math.Round((sh-ch)/2))
	sr := image.Rect(x0, y0, x0+int(math.Round(cw)), y0+int(math.Round(ch))).Intersect(b)
	dst := image.NewNRGBA(image.Rect(0, 0, w, h))
	_, _ = resample(context.Background(), dst, img, sr, nil)
	return dst
}

// seededRand returns a PCG generator derived from the seed and the strings that drive
// the content (model slug, prompts), so equal requests give equal pixels.
func seededRand(seed int64, parts ...string) *rand.Rand {
	h := fnv.New64a()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return rand.New(rand.NewPCG(uint64(seed), h.Sum64()))
}

// parseHex reads #RGB, #RRGGBB or #RRGGBBAA (the # is optional).
func parseHex(s string) (color.NRGBA, bool) {
	s = strings.TrimPrefix(strings.TrimSpace(s), "#")
	var v [4]uint8
	v[3] = 255
	switch len(s) {
	case 3:
		for i := 0; i < 3; i++ {
			n, ok := hexNibble(s[i])
			if !ok {
				return color.NRGBA{}, false
			}
			v[i] = n * 17
		}
	case 6, 8:
		for i := 0; i < len(s)/2; i++ {
			hi, ok1 := hexNibble(s[2*i])
			lo, ok2 := hexNibble(s[2*i+1])
			if !ok1 || !ok2 {
				return color.NRGBA{}, false
			}
			v[i] = hi<<4 | lo
		}
	default:
		return color.NRGBA{}, false
	}
	return color.NRGBA{R: v[0], G: v[1], B: v[2], A: v[3]}, true
}

func hexNibble(c byte) (uint8, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// clock is the time source of a runner (metrics only).
type clock func() time.Time

func (c clock) since(t time.Time) float64 { return c().Sub(t).Seconds() }

func clamp01(v float64) float64 { return math.Min(1, math.Max(0, v)) }

func to8(v float64) uint8 { return uint8(math.Round(clamp01(v) * 255)) }

// boxBlurAlpha blurs a single-channel plane (values 0..1, row-major w x h) in place with a
// separable box filter of the given radius, three passes (close to a Gaussian).
func boxBlurPlane(p []float64, w, h, radius int) {
	if radius <= 0 {
		return
	}
	tmp := make([]float64, len(p))
	for pass := 0; pass < 3; pass++ {
		blur1D(p, tmp, w, h, radius, 1, w) // rows
		blur1D(tmp, p, h, w, radius, w, 1) // columns
	}
}

// blur1D runs a running-sum box filter along lines of length n; step is the stride between
// neighbours of a line and lineStep the stride between lines.
func blur1D(src, dst []float64, n, lines, r, step, lineStep int) {
	win := float64(2*r + 1)
	for l := 0; l < lines; l++ {
		base := l * lineStep
		at := func(i int) float64 {
			i = min(max(i, 0), n-1)
			return src[base+i*step]
		}
		var sum float64
		for i := -r; i <= r; i++ {
			sum += at(i)
		}
		for i := 0; i < n; i++ {
			dst[base+i*step] = sum / win
			sum += at(i+r+1) - at(i-r)
		}
	}
}

// stepRows runs the step loop of an image runner over h rows in bands: each step renders its
// band, reports progress and checks for cancellation first. It returns the steps done and, when
// cancelled, ctx's error.
func stepRows(ctx context.Context, rep runners.Reporter, steps, h int, render func(y0, y1 int)) (int, error) {
	for i := 0; i < steps; i++ {
		if err := ctx.Err(); err != nil {
			rep.Log("warn", fmt.Sprintf("cancelled after %d of %d steps", i, steps))
			return i, err
		}
		render(i*h/steps, (i+1)*h/steps)
		rep.Progress(float64(i+1) / float64(steps))
	}
	return steps, nil
}

// imageResult is the output document of a runner that made one image.
func imageResult(entry map[string]any, seed int64, prompt string, file runners.File, m map[string]float64) runners.Result {
	return runners.Result{
		Document: map[string]any{
			"images":            []any{entry},
			"seed":              seed,
			"prompt":            prompt,
			"has_nsfw_concepts": []bool{false},
			"timings":           map[string]float64{"inference": m["inference_seconds"]},
		},
		Files:   []runners.File{file},
		Metrics: m,
		Done:    1,
	}
}
