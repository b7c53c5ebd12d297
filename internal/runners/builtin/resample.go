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
	xk, yk := newKernel(dw, box.w), newKernel(dh, box.h)
	xt := xk.all(dw)
	ring := newRowRing(yk.most, dw)
	in := make([]float32, 4*box.w)
	yw := make([]float32, yk.most)
	rows := make([][]float32, 0, yk.most)
	for y := 0; y < dh; y++ {
		if y%32 == 0 {
			if err := ctx.Err(); err != nil {
				return y, err
			}
			if progress != nil && y > 0 {
				progress(y)
			}
		}
		first, ws := yk.at(y, yw)
		rows = rows[:0]
		for i := range ws {
			rows = append(rows, ring.row(first+i, func(out []float32) {
				box.read(first+i, in)
				scaleAcross(out, in, xt)
			}))
		}
		o := dst.PixOffset(db.Min.X, db.Min.Y+y)
		row := dst.Pix[o : o+4*dw]
		for x := 0; x < dw; x++ {
			var acc [4]float32
			for i, w := range ws {
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

// kernel maps dn destination pixels onto sn source pixels, pixel centres aligned, with the
// Catmull-Rom kernel stretched by the scale when shrinking. Near an edge the taps inside the
// image share the whole weight. most is the most taps one destination pixel reads.
type kernel struct {
	sn             int
	scale, stretch float64
	most           int
}

func newKernel(dn, sn int) kernel {
	scale := float64(sn) / float64(dn)
	stretch := math.Max(1, scale)
	return kernel{sn: sn, scale: scale, stretch: stretch, most: int(4*stretch) + 2}
}

// at writes the weights of destination pixel i into w (len most) and answers the first
// source pixel they apply to and the weights used.
func (k kernel) at(i int, w []float32) (int, []float32) {
	c := (float64(i)+0.5)*k.scale - 0.5
	lo := max(int(math.Ceil(c-2*k.stretch)), 0)
	hi := max(min(int(math.Floor(c+2*k.stretch)), k.sn-1), lo)
	w = w[:hi-lo+1]
	var sum float64
	for j := range w {
		v := catmullRom(math.Abs(float64(lo+j)-c) / k.stretch)
		w[j] = float32(v)
		sum += v
	}
	for j := range w {
		if sum != 0 {
			w[j] = float32(float64(w[j]) / sum)
		} else {
			w[j] = 0
		}
	}
	return lo, w
}

// taps are the weights of every destination pixel along one axis, in one array: pixel i
// reads source pixels first[i], first[i]+1, … with weights w[i*most : i*most+n[i]].
type taps struct {
	most  int
	first []int32
	n     []uint8
	w     []float32
}

func (k kernel) all(dn int) taps {
	t := taps{most: k.most, first: make([]int32, dn), n: make([]uint8, dn), w: make([]float32, dn*k.most)}
	for i := 0; i < dn; i++ {
		first, ws := k.at(i, t.w[i*k.most:(i+1)*k.most])
		t.first[i], t.n[i] = int32(first), uint8(len(ws))
	}
	return t
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

// scaleAcross scales one row of premultiplied pixels (4 floats each) to the taps' width.
func scaleAcross(out, in []float32, xt taps) {
	for x, first := range xt.first {
		var r, g, b, a float32
		for i, w := range xt.w[x*xt.most : x*xt.most+int(xt.n[x])] {
			o := 4 * (int(first) + i)
			p := in[o : o+4 : o+4]
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

func newRowRing(n, width int) *rowRing {
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
