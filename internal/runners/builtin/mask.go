package builtin

import (
	"context"
	_ "embed"
	"fmt"
	"image"
	"math"
	"sort"
	"sync"

	pigo "github.com/esimov/pigo/core"
	xdraw "golang.org/x/image/draw"

	"github.com/modelexec/modelexec/internal/runners"
)

// The pigo cascades (MIT, see maskcascade/README.md): face finder and pupil localiser.
var (
	//go:embed maskcascade/facefinder
	faceFinderCascade []byte
	//go:embed maskcascade/puploc
	puplocCascade []byte
)

// cascades unpacks the embedded cascades once per process; they are read-only afterwards.
var cascades = sync.OnceValues(func() (*eyeCascades, error) {
	face, err := pigo.NewPigo().Unpack(faceFinderCascade)
	if err != nil {
		return nil, fmt.Errorf("unpack facefinder cascade: %w", err)
	}
	pup, err := pigo.NewPuplocCascade().UnpackCascade(puplocCascade)
	if err != nil {
		return nil, fmt.Errorf("unpack puploc cascade: %w", err)
	}
	return &eyeCascades{face: face, pupil: pup}, nil
})

type eyeCascades struct {
	face  *pigo.Pigo
	pupil *pigo.PuplocCascade
}

// maskInput is the M6 input.
type maskInput struct {
	imageOptions
	Inputs struct {
		Image string `json:"image"`
	} `json:"inputs"`
	Settings struct {
		Confidence    *float64 `json:"confidence"`
		MaxDetections *int     `json:"maxDetections"`
		MaskPadding   *int     `json:"maskPadding"`
		MaskBlur      *int     `json:"maskBlur"`
	} `json:"settings"`
}

// M6 defaults (spec 01, Input of M6).
const (
	defaultMaskConfidence = 0.5
	defaultMaxDetections  = 6
	defaultMaskPadding    = 10
	defaultMaskBlur       = 5
	// pupilPerturbs is how many jittered runs of the pupil localiser are median-filtered
	// (63 is the most pigo's detector pool holds).
	pupilPerturbs = 63
)

// faceConfidence maps pigo's unbounded detection score q to 0..1: q/(q+5), so pigo's usual
// acceptance score of 5 is confidence 0.5, the contract's default threshold.
func faceConfidence(q float32) float64 {
	if q <= 0 {
		return 0
	}
	return float64(q) / (float64(q) + 5)
}

// eyeDetection is one detected face with its two eyes.
type eyeDetection struct {
	Face       image.Rectangle
	Confidence float64
	Pupils     [2]image.Point     // viewer's left, viewer's right
	Eyes       [2]image.Rectangle // eye regions, padding included
	Localised  [2]bool            // false when the pupil localiser failed and geometry stood in
}

// eyeMasker is the reference runner of M6.
type eyeMasker struct {
	now    clock
	images decoder
}

func (e *eyeMasker) Run(ctx context.Context, job runners.Job, env runners.Env) (runners.Result, error) {
	start := e.now()
	rep := reporter(env)
	var in maskInput
	if err := decodeInput(job, &in); err != nil {
		return runners.Result{}, err
	}
	conf, maxDet, pad, blur := defaultMaskConfidence, defaultMaxDetections, defaultMaskPadding, defaultMaskBlur
	if s := in.Settings.Confidence; s != nil {
		conf = clamp01(*s)
	}
	if s := in.Settings.MaxDetections; s != nil {
		maxDet = min(max(*s, 1), 20)
	}
	if s := in.Settings.MaskPadding; s != nil {
		pad = min(max(*s, 0), 200)
	}
	if s := in.Settings.MaskBlur; s != nil {
		blur = min(max(*s, 0), 100)
	}
	casc, err := cascades()
	if err != nil {
		return runners.Result{}, runners.Internal("Loading the face detector", err)
	}
	// The mask is the image's size: a format that cannot hold it is refused before decoding.
	img, err := e.images.fetchFitting(ctx, env, in.Inputs.Image, func(w, h int) error { return fitsFormat(in.format(), w, h) }, "inputs", "image")
	if err != nil {
		return runners.Result{}, err
	}
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	rep.Log("info", fmt.Sprintf("eye-mask: %dx%d image, confidence > %.2f, at most %d detections, padding %d, blur %d", w, h, conf, maxDet, pad, blur))
	metrics := func(done float64) map[string]float64 {
		return map[string]float64{"inference_seconds": e.now.since(start), "megapixels": float64(w*h) / 1e6, "steps": done}
	}

	// Work: 1 face search, 2 pupil localisation, 3 mask drawing; each is a cancel point.
	const units = 3
	if err := ctx.Err(); err != nil {
		return runners.Result{Metrics: metrics(0), Done: 0}, err
	}
	dets := detectEyes(casc, grayscale(img), w, h, conf, maxDet, pad)
	rep.Progress(1.0 / units)
	if err := ctx.Err(); err != nil {
		return runners.Result{Metrics: metrics(1), Done: 1.0 / units}, err
	}
	rep.Progress(2.0 / units)
	mask := drawEyeMask(dets, w, h, blur)
	if err := ctx.Err(); err != nil {
		return runners.Result{Metrics: metrics(2), Done: 2.0 / units}, err
	}
	rep.Progress(1)
	for i, d := range dets {
		rep.Log("info", fmt.Sprintf("detection %d: face %v confidence %.3f pupils %v %v", i, d.Face, d.Confidence, d.Pupils[0], d.Pupils[1]))
	}

	entry, file, err := storeImage(ctx, env, job.ID+"-mask", mask, in.format(), in.quality())
	if err != nil {
		return runners.Result{Metrics: metrics(units), Done: 1}, err
	}
	list := make([]any, 0, len(dets))
	for _, d := range dets {
		union := d.Eyes[0].Union(d.Eyes[1])
		eyes := make([]any, 0, 2)
		for k, side := range []string{"left", "right"} {
			eyes = append(eyes, map[string]any{
				"side":      side,
				"center":    []int{d.Pupils[k].X, d.Pupils[k].Y},
				"box":       rectXYWH(d.Eyes[k]),
				"localised": d.Localised[k],
			})
		}
		list = append(list, map[string]any{
			"box":        rectXYWH(union),
			"confidence": math.Round(d.Confidence*1e4) / 1e4,
			"face_box":   rectXYWH(d.Face),
			"eyes":       eyes,
		})
	}
	entry["detections"] = list
	m := metrics(units)
	m["detections"] = float64(len(dets))
	m["output_bytes"] = float64(file.Bytes)
	return runners.Result{
		Document: map[string]any{
			"masks":      []any{entry},
			"detections": len(dets),
			"timings":    map[string]float64{"inference": m["inference_seconds"]},
		},
		Files:   []runners.File{file},
		Metrics: m,
		Done:    1,
	}, nil
}

func rectXYWH(r image.Rectangle) []int { return []int{r.Min.X, r.Min.Y, r.Dx(), r.Dy()} }

// grayscale converts img to 8-bit luminance, row-major, one row of NRGBA at a time: beside
// the image it holds its luminance and a row.
func grayscale(img image.Image) []uint8 {
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	out := make([]uint8, w*h)
	row := image.NewNRGBA(image.Rect(0, 0, w, 1))
	for y := 0; y < h; y++ {
		xdraw.Draw(row, row.Rect, img, image.Pt(b.Min.X, b.Min.Y+y), xdraw.Src)
		for x := 0; x < w; x++ {
			px := row.Pix[4*x : 4*x+3]
			out[y*w+x] = uint8((299*int(px[0]) + 587*int(px[1]) + 114*int(px[2])) / 1000)
		}
	}
	return out
}

// detectEyes finds faces, keeps those above minConf (best first, at most maxDet) and
// localises both pupils of each.
func detectEyes(c *eyeCascades, gray []uint8, w, h int, minConf float64, maxDet, pad int) []eyeDetection {
	ip := pigo.ImageParams{Pixels: gray, Rows: h, Cols: w, Dim: w}
	minSide := min(w, h)
	raw := c.face.RunCascade(pigo.CascadeParams{
		MinSize:     max(20, minSide/25),
		MaxSize:     minSide,
		ShiftFactor: 0.1,
		ScaleFactor: 1.1,
		ImageParams: ip,
	}, 0)
	faces := c.face.ClusterDetections(raw, 0.2)
	sort.SliceStable(faces, func(i, j int) bool { return faces[i].Q > faces[j].Q })

	var out []eyeDetection
	for _, f := range faces {
		cf := faceConfidence(f.Q)
		if cf <= minConf {
			continue
		}
		if len(out) == maxDet {
			break
		}
		s := float64(f.Scale)
		d := eyeDetection{
			Face:       image.Rect(f.Col-f.Scale/2, f.Row-f.Scale/2, f.Col+f.Scale/2, f.Row+f.Scale/2).Intersect(image.Rect(0, 0, w, h)),
			Confidence: cf,
		}
		for k, dir := range []float64{-1, 1} {
			guess := image.Pt(f.Col+int(dir*0.175*s), f.Row-int(0.075*s))
			p := c.pupil.RunDetector(pigo.Puploc{Row: guess.Y, Col: guess.X, Scale: float32(s * 0.25), Perturbs: pupilPerturbs}, ip, 0, false)
			at := guess
			// Trust the localiser only inside the upper half of the face, near the guess.
			if p != nil && p.Row > 0 && p.Col > 0 && math.Hypot(float64(p.Col-guess.X), float64(p.Row-guess.Y)) < 0.15*s {
				at = image.Pt(p.Col, p.Row)
				d.Localised[k] = true
			}
			d.Pupils[k] = at
			hw, hh := int(math.Round(0.12*s))+pad, int(math.Round(0.07*s))+pad
			d.Eyes[k] = image.Rect(at.X-hw, at.Y-hh, at.X+hw+1, at.Y+hh+1).Intersect(image.Rect(0, 0, w, h))
		}
		out = append(out, d)
	}
	return out
}

// drawEyeMask paints every eye region as a white ellipse on black at image size and
// feathers it with a blur of radius blur (three box passes, close to a Gaussian). Only the
// eyes' surroundings are worked on: each eye with the blur's reach around it (windows that
// overlap merged), so the work takes memory for the eyes, not the image. Outside those windows
// the mask is black, as the blur of a black plane is.
func drawEyeMask(dets []eyeDetection, w, h, blur int) *image.Gray {
	out := image.NewGray(image.Rect(0, 0, w, h))
	radius := (blur + 1) / 2
	var eyes, windows []image.Rectangle
	for _, d := range dets {
		for _, r := range d.Eyes {
			if r.Empty() {
				continue
			}
			eyes = append(eyes, r)
			// Three passes each carry a value radius further; one more pixel of black keeps
			// the window's clamped edge black through every pass.
			windows = append(windows, r.Inset(-(3*radius + 1)).Intersect(out.Rect))
		}
	}
	for _, win := range mergeOverlapping(windows) {
		ww, wh := win.Dx(), win.Dy()
		plane := make([]float64, ww*wh)
		for _, r := range eyes {
			cx, cy := float64(r.Min.X+r.Max.X)/2, float64(r.Min.Y+r.Max.Y)/2
			rx, ry := float64(r.Dx())/2, float64(r.Dy())/2
			in := r.Intersect(win)
			for y := in.Min.Y; y < in.Max.Y; y++ {
				for x := in.Min.X; x < in.Max.X; x++ {
					dx, dy := (float64(x)+0.5-cx)/rx, (float64(y)+0.5-cy)/ry
					if dx*dx+dy*dy <= 1 {
						plane[(y-win.Min.Y)*ww+x-win.Min.X] = 1
					}
				}
			}
		}
		boxBlurPlane(plane, ww, wh, radius)
		for y := 0; y < wh; y++ {
			line := out.Pix[(win.Min.Y+y)*out.Stride+win.Min.X:]
			for x := 0; x < ww; x++ {
				line[x] = to8(plane[y*ww+x])
			}
		}
	}
	return out
}

// mergeOverlapping replaces rectangles that overlap by their union until none overlaps.
func mergeOverlapping(rs []image.Rectangle) []image.Rectangle {
	for merged := true; merged; {
		merged = false
		for i := 0; i < len(rs) && !merged; i++ {
			for j := i + 1; j < len(rs); j++ {
				if rs[i].Overlaps(rs[j]) {
					rs[i] = rs[i].Union(rs[j])
					rs = append(rs[:j], rs[j+1:]...)
					merged = true
					break
				}
			}
		}
	}
	return rs
}
