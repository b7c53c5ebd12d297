// Package imagebudget bounds the memory that decoding images takes in one process.
//
// A decoder holds more than the pixels it returns: Go's JPEG decoder keeps four bytes for each
// coefficient of a progressive file, so a progressive CMYK JPEG takes about 24 bytes a pixel
// while it is read, and a 16-bit PNG comes out at 8. Counting pixels therefore says little
// about memory. Cost reads what an image will take from its header, before any pixel is held;
// a Budget lets the decodes of uploads and runs go side by side while their costs fit
// together, makes the others wait for room, and refuses an image whose cost alone passes what
// one image may take.
package imagebudget

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"

	"golang.org/x/sync/semaphore"
)

// Estimate is what decoding one image takes at its peak, and the form that decides it.
type Estimate struct {
	Width, Height int
	Bytes         int64  // the decoder's peak allocation
	Form          string // e.g. "progressive CMYK JPEG", "16-bit PNG", for the person refused
}

// PerPixel is the estimate's bytes a pixel, rounded up.
func (e Estimate) PerPixel() int64 {
	px := max(int64(e.Width)*int64(e.Height), 1)
	return (e.Bytes + px - 1) / px
}

// Cost estimates from head, the first bytes of an image file (as far as its frame header, or
// for WEBP its image chunk), what decoding its width × height pixels takes. What head does not
// show is counted at the most its format can take: a file it does not know at 28 bytes a
// pixel, the most of any form.
func Cost(head []byte, width, height int) Estimate {
	e := Estimate{Width: width, Height: height, Form: "image"}
	px := int64(width) * int64(height)
	switch {
	case len(head) >= 8 && string(head[:8]) == "\x89PNG\r\n\x1a\n":
		e.Bytes, e.Form = pngCost(head, px)
	case len(head) >= 2 && head[0] == 0xff && head[1] == 0xd8:
		e.Bytes, e.Form = jpegCost(head, width, height)
	case len(head) >= 12 && string(head[:4]) == "RIFF" && string(head[8:12]) == "WEBP":
		// libwebp (the runners' decoder) holds about 7 bytes a pixel for a lossy image and
		// 26 for a lossless one; golang.org/x/image/webp (the uploads') less.
		e.Bytes, e.Form = 28*px+1<<20, "lossless WEBP"
		if webpLossy(head) {
			e.Bytes, e.Form = 8*px+1<<20, "WEBP"
		}
		return e
	case len(head) >= 4 && string(head[:4]) == "GIF8":
		e.Bytes, e.Form = 2*px, "GIF" // the first frame, paletted, and the screen it lands on
	default:
		e.Bytes = 28 * px
	}
	e.Bytes += overhead
	return e
}

// overhead is what a decoder takes whatever the image's size: tables, an inflater's window,
// buffers of a few rows.
const overhead = 128 << 10

// webpLossy reports whether the first image chunk of a WEBP file in head is lossy (VP8), as
// opposed to lossless (VP8L) or not in head.
func webpLossy(head []byte) bool {
	for i := 12; i+8 <= len(head); {
		switch string(head[i : i+4]) {
		case "VP8 ":
			return true
		case "VP8L":
			return false
		}
		n := int64(binary.LittleEndian.Uint32(head[i+4 : i+8]))
		next := int64(i) + 8 + n + n&1
		if next > int64(len(head)) {
			return false
		}
		i = int(next)
	}
	return false
}

// pngCost: the decoded image at its colour type and depth (Go widens RGB to RGBA); an
// interlaced file also holds each pass while it merges it, counted as a second image.
func pngCost(head []byte, px int64) (int64, string) {
	if len(head) < 29 || string(head[12:16]) != "IHDR" {
		return 8 * px, "PNG"
	}
	depth, colour, interlaced := head[24], head[25], head[28] == 1
	per, form := int64(4), "PNG"
	switch colour {
	case 0, 3: // grey, paletted
		per = 1
		if colour == 0 && depth == 16 {
			per, form = 2, "16-bit PNG"
		}
	default: // RGB, grey with alpha, RGBA
		if depth == 16 {
			per, form = 8, "16-bit PNG"
		}
	}
	if interlaced {
		return 2 * per * px, "interlaced " + form
	}
	return per * px, form
}

// jpegCost follows image/jpeg: each component's plane at its sampling, padded to whole MCUs;
// a progressive file's coefficients, 4 bytes each (256 bytes an 8 × 8 block); and the RGBA
// or CMYK image that a four-component or RGB file is converted into.
func jpegCost(head []byte, width, height int) (int64, string) {
	f, ok := readFrame(head)
	if !ok || f.nComp == 0 {
		return 25 * int64(width) * int64(height), "JPEG" // the most a JPEG the decoder reads takes
	}
	hmax, vmax := 1, 1
	for _, c := range f.comp[:f.nComp] {
		hmax, vmax = max(hmax, c.h), max(vmax, c.v)
	}
	mxx := (int64(width) + 8*int64(hmax) - 1) / (8 * int64(hmax))
	myy := (int64(height) + 8*int64(vmax) - 1) / (8 * int64(vmax))
	var planes int64
	for _, c := range f.comp[:f.nComp] {
		planes += mxx * 8 * int64(c.h) * myy * 8 * int64(c.v)
	}
	if f.nComp == 3 {
		// image.YCbCr holds both chroma planes at the second component's sampling.
		planes = mxx*8*int64(hmax)*myy*8*int64(vmax) + 2*mxx*8*int64(f.comp[1].h)*myy*8*int64(f.comp[1].v)
	}
	bytes, form := planes, "JPEG"
	if f.progressive {
		bytes += 4 * planes
		form = "progressive JPEG"
	}
	switch {
	case f.nComp == 4:
		bytes += 4 * int64(width) * int64(height)
		form = form[:len(form)-4] + "CMYK JPEG"
	case f.nComp == 3 && f.rgb:
		bytes += 4 * int64(width) * int64(height)
		form = form[:len(form)-4] + "RGB JPEG"
	}
	return bytes, form
}

type frame struct {
	nComp       int
	progressive bool
	rgb         bool // stored as RGB, converted to RGBA
	comp        [4]struct{ id, h, v int }
}

// readFrame walks the markers of a JPEG header to its frame header (SOFn), noting an Adobe
// segment that says RGB.
func readFrame(b []byte) (frame, bool) {
	var f frame
	adobeRGB, jfif := false, false
	for i := 2; i+4 <= len(b); {
		if b[i] != 0xff {
			return f, false
		}
		marker := b[i+1]
		if marker == 0xff { // fill byte
			i++
			continue
		}
		n := int(binary.BigEndian.Uint16(b[i+2 : i+4]))
		if n < 2 || i+2+n > len(b) {
			return f, false
		}
		seg := b[i+4 : i+2+n]
		switch {
		case marker == 0xe0 && len(seg) >= 5 && string(seg[:5]) == "JFIF\x00":
			jfif = true
		case marker == 0xee && len(seg) >= 12 && string(seg[:5]) == "Adobe":
			adobeRGB = seg[11] == 0
		case marker >= 0xc0 && marker <= 0xc2:
			if len(seg) < 6 {
				return f, false
			}
			f.progressive = marker == 0xc2
			f.nComp = int(seg[5])
			if f.nComp != 1 && f.nComp != 3 && f.nComp != 4 || len(seg) < 6+3*f.nComp {
				return frame{}, false
			}
			for k := 0; k < f.nComp; k++ {
				c := seg[6+3*k:]
				f.comp[k].id, f.comp[k].h, f.comp[k].v = int(c[0]), max(int(c[1]>>4), 1), max(int(c[1]&0x0f), 1)
			}
			namedRGB := f.nComp == 3 && f.comp[0].id == 'R' && f.comp[1].id == 'G' && f.comp[2].id == 'B'
			f.rgb = !jfif && (adobeRGB || namedRGB)
			return f, true
		}
		i += 2 + n
	}
	return f, false
}

// The budget as shipped: decodes together take at most DefaultTotal bytes, one image at most
// DefaultPerImage. A 40-megapixel image fits as a baseline or progressive 4:2:0 JPEG (60 and
// 300 MB), an 8- or 16-bit PNG (160 and 320 MB) or a WEBP (320 MB); a progressive CMYK JPEG
// fits up to about 16 megapixels.
const (
	DefaultTotal    = 768 << 20
	DefaultPerImage = 384 << 20
)

// Default returns a budget of the shipped size.
func Default() *Budget { return New(DefaultTotal, DefaultPerImage) }

// Budget is the memory the images decoded at once in this process may take together.
//
// Decodes wait for room in the order they asked, so a small image must not queue behind large
// ones (another account's, say) that wait for room it does not need: a sixteenth of the budget
// is kept for small decodes (each at most an eighth of that share), which wait only for each
// other; the rest takes every larger one.
type Budget struct {
	large, small *semaphore.Weighted
	smallMax     int64 // the largest decode counted as small
	perImage     int64
}

// New returns a budget of total bytes of which one image may take at most perImage (at most
// what the large decodes' share holds).
func New(total, perImage int64) *Budget {
	small := total / 16
	return &Budget{large: semaphore.NewWeighted(total - small), small: semaphore.NewWeighted(max(small, 1)),
		smallMax: small / 8, perImage: min(perImage, total-small)}
}

// PerImage is the most one image may take.
func (b *Budget) PerImage() int64 { return b.perImage }

// TooCostlyError refuses an image whose decoding alone would take more than one image may.
type TooCostlyError struct {
	Estimate
	Max int64
}

func (e *TooCostlyError) Error() string {
	fit := float64(e.Max/max(e.PerPixel(), 1)) / 1e6
	return fmt.Sprintf("reading this %d × %d %s takes about %d MB of memory (%d bytes a pixel), more than the %d MB one image may take: send one of at most %.1f megapixels in this form, or save it as a baseline JPEG or an 8-bit PNG, which take less to read",
		e.Width, e.Height, e.Form, mb(e.Bytes), e.PerPixel(), mb(e.Max), math.Floor(fit*10)/10)
}

func mb(n int64) int64 { return (n + 1<<20 - 1) >> 20 }

// Acquire waits until the budget has room for e and answers the function that gives it back;
// an image that could never fit is refused at once with a *TooCostlyError.
func (b *Budget) Acquire(ctx context.Context, e Estimate) (release func(), err error) {
	if e.Bytes > b.perImage {
		return nil, &TooCostlyError{Estimate: e, Max: b.perImage}
	}
	n, sem := max(e.Bytes, 1), b.large
	if n <= b.smallMax {
		sem = b.small
	}
	if err := sem.Acquire(ctx, n); err != nil {
		return nil, err
	}
	return func() { sem.Release(n) }, nil
}
