package builtin

import (
	"context"
	"fmt"
	"image"
	"image/color"
	"math"
	"sync"

	xdraw "golang.org/x/image/draw"
	"golang.org/x/image/font"
	"golang.org/x/image/font/gofont/goregular"
	"golang.org/x/image/font/opentype"
	"golang.org/x/image/math/fixed"

	"github.com/modelexec/modelexec/internal/runners"
)

// watermarkOptions is advancedFeatures.watermark.
type watermarkOptions struct {
	Text            string   `json:"text"`
	Image           string   `json:"image"`
	DisplayPosition string   `json:"displayPosition"`
	Opacity         *float64 `json:"opacity"`
	FontColor       string   `json:"fontColor"`
	BgColor         string   `json:"bgColor"`
}

// Watermark defaults where the contract names none.
const (
	defaultWatermarkPosition = "bottom-right"
	defaultWatermarkOpacity  = 1.0
	defaultWatermarkFont     = "#FFFFFF"
)

// goRegular is the parsed Go Regular font (BSD licence, shipped in golang.org/x/image).
var goRegular = sync.OnceValues(func() (*opentype.Font, error) { return opentype.Parse(goregular.TTF) })

// applyWatermark stamps the watermark onto dst at its displayPosition and returns the
// rectangles it covered.
func (d decoder) applyWatermark(ctx context.Context, env runners.Env, dst *image.NRGBA, wm *watermarkOptions) ([]image.Rectangle, error) {
	if wm == nil || (wm.Text == "" && wm.Image == "") {
		return nil, nil
	}
	b := dst.Bounds()
	minSide := min(b.Dx(), b.Dy())
	margin := max(4, minSide/40)
	avail := image.Pt(b.Dx()-2*margin, b.Dy()-2*margin)
	if avail.X < 4 || avail.Y < 4 {
		return nil, nil
	}

	var stamp *image.NRGBA
	var err error
	if wm.Text != "" {
		stamp, err = textStamp(wm, minSide, avail)
		if err != nil {
			return nil, runners.Internal("Drawing the watermark text", err)
		}
	} else {
		src, err := d.fetch(ctx, env, wm.Image, "advancedFeatures", "watermark", "image")
		if err != nil {
			return nil, err
		}
		stamp = imageStamp(src, minSide/4, avail)
	}

	opacity := defaultWatermarkOpacity
	if wm.Opacity != nil {
		opacity = clamp01(*wm.Opacity)
	}
	pos := wm.DisplayPosition
	if pos == "" {
		pos = defaultWatermarkPosition
	}
	rects, err := stampRects(b, stamp.Bounds().Size(), margin, pos)
	if err != nil {
		return nil, refusal("invalid_input", err.Error(), "advancedFeatures", "watermark", "displayPosition")
	}
	for _, r := range rects {
		blendOver(dst, r.Min, stamp, opacity)
	}
	return rects, nil
}

// textStamp renders the text in Go Regular with fontColor over an optional bgColor box.
func textStamp(wm *watermarkOptions, minSide int, avail image.Point) (*image.NRGBA, error) {
	f, err := goRegular()
	if err != nil {
		return nil, err
	}
	fg, ok := parseHex(wm.FontColor)
	if !ok {
		fg, _ = parseHex(defaultWatermarkFont)
	}
	bg, hasBg := parseHex(wm.BgColor)

	size := math.Max(10, float64(minSide)/14)
	measure := func(size float64) (font.Face, fixed.Int26_6, font.Metrics, error) {
		face, err := opentype.NewFace(f, &opentype.FaceOptions{Size: size, DPI: 72, Hinting: font.HintingFull})
		if err != nil {
			return nil, 0, font.Metrics{}, err
		}
		return face, font.MeasureString(face, wm.Text), face.Metrics(), nil
	}
	face, adv, m, err := measure(size)
	if err != nil {
		return nil, err
	}
	pad := int(math.Ceil(size * 0.35))
	width := adv.Ceil() + 2*pad
	if width > avail.X { // shrink the type until the stamp fits across the image
		size = math.Max(4, size*float64(avail.X)/float64(width))
		face.Close()
		if face, adv, m, err = measure(size); err != nil {
			return nil, err
		}
		pad = int(math.Ceil(size * 0.35))
	}
	defer face.Close()
	w := adv.Ceil() + 2*pad
	h := (m.Ascent + m.Descent).Ceil() + 2*pad
	w, h = min(w, avail.X), min(h, avail.Y)

	stamp := image.NewNRGBA(image.Rect(0, 0, w, h))
	if hasBg {
		xdraw.Draw(stamp, stamp.Bounds(), image.NewUniform(bg), image.Point{}, xdraw.Src)
	}
	dot := fixed.P(pad, pad+m.Ascent.Ceil())
	if !hasBg { // a soft shadow keeps a bare text readable on any background
		sh := &font.Drawer{Dst: stamp, Src: image.NewUniform(color.NRGBA{0, 0, 0, 110}), Face: face,
			Dot: dot.Add(fixed.P(max(1, int(size/24)), max(1, int(size/24))))}
		sh.DrawString(wm.Text)
	}
	d := &font.Drawer{Dst: stamp, Src: image.NewUniform(fg), Face: face, Dot: dot}
	d.DrawString(wm.Text)
	return stamp, nil
}

// imageStamp scales a watermark image down to at most side pixels on its long edge (and into
// avail), keeping its alpha.
func imageStamp(src image.Image, side int, avail image.Point) *image.NRGBA {
	b := src.Bounds()
	side = max(side, 8)
	scale := math.Min(1, math.Min(float64(side)/float64(b.Dx()), float64(side)/float64(b.Dy())))
	scale = math.Min(scale, math.Min(float64(avail.X)/float64(b.Dx()), float64(avail.Y)/float64(b.Dy())))
	w := max(1, int(math.Round(float64(b.Dx())*scale)))
	h := max(1, int(math.Round(float64(b.Dy())*scale)))
	if w == b.Dx() && h == b.Dy() {
		return toNRGBA(src)
	}
	return resizeTo(src, w, h)
}

// stampRects places a stamp of size s in bounds b for one of the ten display positions.
func stampRects(b image.Rectangle, s image.Point, margin int, pos string) ([]image.Rectangle, error) {
	left, right := b.Min.X+margin, b.Max.X-margin-s.X
	top, bottom := b.Min.Y+margin, b.Max.Y-margin-s.Y
	cx, cy := b.Min.X+(b.Dx()-s.X)/2, b.Min.Y+(b.Dy()-s.Y)/2
	at := func(x, y int) []image.Rectangle { return []image.Rectangle{image.Rect(x, y, x+s.X, y+s.Y)} }
	switch pos {
	case "top-left":
		return at(left, top), nil
	case "top-center":
		return at(cx, top), nil
	case "top-right":
		return at(right, top), nil
	case "center-left":
		return at(left, cy), nil
	case "center-center":
		return at(cx, cy), nil
	case "center-right":
		return at(right, cy), nil
	case "bottom-left":
		return at(left, bottom), nil
	case "bottom-center":
		return at(cx, bottom), nil
	case "bottom-right":
		return at(right, bottom), nil
	case "tiled":
		// A brick pattern: a gap of half the stamp between copies, odd rows shifted by half
		// a stride, starting at the margin and clipped by the image edge.
		gx, gy := max(margin, s.X/2), max(margin, s.Y)
		strideX, strideY := s.X+gx, s.Y+gy
		var rs []image.Rectangle
		for row, y := 0, b.Min.Y+margin; y < b.Max.Y; row, y = row+1, y+strideY {
			x := b.Min.X + margin
			if row%2 == 1 {
				x -= strideX / 2
			}
			for ; x < b.Max.X; x += strideX {
				r := image.Rect(x, y, x+s.X, y+s.Y)
				if r.Overlaps(b) {
					rs = append(rs, r)
				}
			}
		}
		return rs, nil
	}
	return nil, fmt.Errorf("unknown displayPosition %q", pos)
}

// blendOver composites stamp (non-premultiplied) over dst at p with an extra opacity,
// clipped to dst; dst keeps a correct alpha where it is itself translucent.
func blendOver(dst *image.NRGBA, p image.Point, stamp *image.NRGBA, opacity float64) {
	r := image.Rectangle{Min: p, Max: p.Add(stamp.Bounds().Size())}.Intersect(dst.Bounds())
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			si := stamp.PixOffset(x-p.X, y-p.Y)
			sa := float64(stamp.Pix[si+3]) / 255 * opacity
			if sa <= 0 {
				continue
			}
			di := dst.PixOffset(x, y)
			da := float64(dst.Pix[di+3]) / 255
			oa := sa + da*(1-sa)
			for c := 0; c < 3; c++ {
				sc := float64(stamp.Pix[si+c]) / 255
				dc := float64(dst.Pix[di+c]) / 255
				dst.Pix[di+c] = to8((sc*sa + dc*da*(1-sa)) / oa)
			}
			dst.Pix[di+3] = to8(oa)
		}
	}
}
