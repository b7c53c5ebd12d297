package builtin

import (
	"context"
	"image"
	"math"
)

// resample scales the rectangle sr of src onto the whole of dst with the Catmull-Rom kernel,
// in memory bounded by dst's width, whatever the shapes of the two images:
//   - along an axis where the source is more than twice the destination, source pixels are
//     first averaged in boxes of a whole number of pixels, so that axis is scaled by at most
//     one destination pixel per box (each source pixel is read once);
//   - each destination row is made from the few (box) rows it reads, each scaled across
//     once and kept in a ring of rows as wide as dst.
//
// A general-purpose scaler that holds dst's width times the source's height in floats would
// need gigabytes for a tall seed image of a few kilobytes. resample checks ctx every few rows
// and reports the destination rows done through progress (nil for none).
func resample(ctx context.Context, dst *image.NRGBA, src image.Image, sr image.Rectangle, progress func(rows int)) (int, error) {
	db := dst.Bounds()
	dw, dh := db.Dx(), db.Dy()
	if dw <= 0 || dh <= 0 || sr.Empty() {
		return 0, nil
	}
	box := newBoxRows(src, sr, dw, dh)
	xt := catmullRomTaps(dw, box.w)
	yt := catmullRomTaps(dh, box.h)
	ring := newRowRing(yt, dw)
	in := make([]float32, 4*box.w)
	for y := 0; y < dh; y++ {
		if y%32 == 0 {
			if err := ctx.Err(); err != nil {
				return y, err
			}
			if progress != nil && y > 0 {
				progress(y)
			}
		}
		t := yt[y]
		var acc [4]float32
		row := dst.Pix[y*dst.Stride : y*dst.Stride+4*dw]
		rows := make([][]float32, len(t.w))
		for i := range t.w {
			rows[i] = ring.row(t.first+i, func(out []float32) {
				box.read(t.first+i, in)
				scaleAcross(out, in, xt)
			})
		}
		for x := 0; x < dw; x++ {
			acc = [4]float32{}
			for i, w := range t.w {
				p := rows[i][4*x : 4*x+4 : 4*x+4]
				acc[0] += w * p[0]
				acc[1] += w * p[1]
				acc[2] += w * p[2]
				acc[3] += w * p[3]
			}
			putUnpremultiplied(row[4*x:4*x+4:4*x+4], acc)
		}
	}
	if progress != nil {
		progress(dh)
	}
	return dh, nil
}

// taps are the source pixels one destination pixel reads: first, first+1, … with their
// weights, which add up to 1.
type taps struct {
	first int
	w     []float32
}

// catmullRomTaps maps dn destination pixels onto sn source pixels, pixel centres aligned,
// with the Catmull-Rom kernel stretched by the scale when shrinking. Near an edge the taps
// inside the image share the whole weight.
func catmullRomTaps(dn, sn int) []taps {
	scale := float64(sn) / float64(dn)
	stretch := math.Max(1, scale)
	support := 2 * stretch
	out := make([]taps, dn)
	for i := range out {
		c := (float64(i)+0.5)*scale - 0.5
		lo, hi := max(int(math.Ceil(c-support)), 0), min(int(math.Floor(c+support)), sn-1)
		hi = max(hi, lo)
		w := make([]float64, hi-lo+1)
		var sum float64
		for j := range w {
			w[j] = catmullRom(math.Abs(float64(lo+j)-c) / stretch)
			sum += w[j]
		}
		t := taps{first: lo, w: make([]float32, len(w))}
		for j := range w {
			if sum != 0 {
				t.w[j] = float32(w[j] / sum)
			}
		}
		out[i] = t
	}
	return out
}

// catmullRom is the Catmull-Rom cubic (B = 0, C = 0.5) at distance d.
func catmullRom(d float64) float64 {
	switch {
	case d < 1:
		return (1.5*d-2.5)*d*d + 1
	case d < 2:
		return ((-0.5*d+2.5)*d-4)*d + 2
	}
	return 0
}

// scaleAcross scales one row of premultiplied pixels (4 floats each) to len(xt) pixels.
func scaleAcross(out, in []float32, xt []taps) {
	for x, t := range xt {
		var r, g, b, a float32
		for i, w := range t.w {
			p := in[4*(t.first+i) : 4*(t.first+i)+4 : 4*(t.first+i)+4]
			r += w * p[0]
			g += w * p[1]
			b += w * p[2]
			a += w * p[3]
		}
		out[4*x], out[4*x+1], out[4*x+2], out[4*x+3] = r, g, b, a
	}
}

// putUnpremultiplied writes a premultiplied pixel (0..1) as an NRGBA pixel.
func putUnpremultiplied(p []uint8, c [4]float32) {
	a := min(max(c[3], 0), 1)
	if a <= 0 {
		p[0], p[1], p[2], p[3] = 0, 0, 0, 0
		return
	}
	for i := 0; i < 3; i++ {
		p[i] = uint8(min(max(c[i]/a, 0), 1)*255 + 0.5)
	}
	p[3] = uint8(a*255 + 0.5)
}

// rowRing keeps the source rows, scaled across, that the current destination row reads.
// The rows a destination row reads only move forward, so a row pushed out is never asked
// for again.
type rowRing struct {
	rows [][]float32
	held []int // which source row each slot holds; -1 for none
}

func newRowRing(yt []taps, width int) *rowRing {
	n := 1
	for _, t := range yt {
		n = max(n, len(t.w))
	}
	r := &rowRing{rows: make([][]float32, n), held: make([]int, n)}
	for i := range r.rows {
		r.rows[i] = make([]float32, 4*width)
		r.held[i] = -1
	}
	return r
}

// row answers source row y, filling its slot with fill when the slot holds another.
func (r *rowRing) row(y int, fill func(out []float32)) []float32 {
	s := y % len(r.rows)
	if r.held[s] != y {
		fill(r.rows[s])
		r.held[s] = y
	}
	return r.rows[s]
}

// boxRows reads a source rectangle as premultiplied rows (0..1), averaged in boxes of kx by
// ky pixels where the source is more than twice the size the rows are scaled to.
type boxRows struct {
	src    image.Image
	sr     image.Rectangle
	kx, ky int
	w, h   int       // the size in boxes
	line   []float32 // one source row, premultiplied
}

func newBoxRows(src image.Image, sr image.Rectangle, dw, dh int) *boxRows {
	k := func(s, d int) int {
		if s > 2*d {
			return (s + d - 1) / d
		}
		return 1
	}
	b := &boxRows{src: src, sr: sr, kx: k(sr.Dx(), dw), ky: k(sr.Dy(), dh)}
	b.w = (sr.Dx() + b.kx - 1) / b.kx
	b.h = (sr.Dy() + b.ky - 1) / b.ky
	b.line = make([]float32, 4*sr.Dx())
	return b
}

// read fills out (4 floats per box) with box row y.
func (b *boxRows) read(y int, out []float32) {
	clear(out)
	y0 := b.sr.Min.Y + y*b.ky
	y1 := min(y0+b.ky, b.sr.Max.Y)
	for sy := y0; sy < y1; sy++ {
		b.readLine(sy)
		for x := 0; x < b.sr.Dx(); x++ {
			o := 4 * (x / b.kx)
			out[o] += b.line[4*x]
			out[o+1] += b.line[4*x+1]
			out[o+2] += b.line[4*x+2]
			out[o+3] += b.line[4*x+3]
		}
	}
	for bx := 0; bx < b.w; bx++ {
		n := float32((y1 - y0) * (min((bx+1)*b.kx, b.sr.Dx()) - bx*b.kx))
		for c := 0; c < 4; c++ {
			out[4*bx+c] /= n
		}
	}
}

// readLine reads source row sy of sr into b.line, premultiplied, with fast paths for the
// decoders' common outputs.
func (b *boxRows) readLine(sy int) {
	x0, n := b.sr.Min.X, b.sr.Dx()
	switch s := b.src.(type) {
	case *image.NRGBA:
		pix := s.Pix[s.PixOffset(x0, sy):]
		for x := 0; x < n; x++ {
			a := float32(pix[4*x+3]) / 255
			b.line[4*x] = float32(pix[4*x]) / 255 * a
			b.line[4*x+1] = float32(pix[4*x+1]) / 255 * a
			b.line[4*x+2] = float32(pix[4*x+2]) / 255 * a
			b.line[4*x+3] = a
		}
	case *image.RGBA:
		pix := s.Pix[s.PixOffset(x0, sy):]
		for x := 0; x < 4*n; x++ {
			b.line[x] = float32(pix[x]) / 255
		}
	default:
		for x := 0; x < n; x++ {
			r, g, bl, a := b.src.At(x0+x, sy).RGBA()
			b.line[4*x] = float32(r) / 0xffff
			b.line[4*x+1] = float32(g) / 0xffff
			b.line[4*x+2] = float32(bl) / 0xffff
			b.line[4*x+3] = float32(a) / 0xffff
		}
	}
}
