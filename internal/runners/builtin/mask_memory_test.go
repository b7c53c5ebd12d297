package builtin

import (
	"image"
	"image/color"
	"math/rand/v2"
	"testing"
)

// wholeImageEyeMask is the mask as drawn on a plane of the whole image: what drawEyeMask
// must give.
func wholeImageEyeMask(dets []eyeDetection, w, h, blur int) *image.Gray {
	plane := make([]float64, w*h)
	for _, d := range dets {
		for _, r := range d.Eyes {
			if r.Empty() {
				continue
			}
			cx, cy := float64(r.Min.X+r.Max.X)/2, float64(r.Min.Y+r.Max.Y)/2
			rx, ry := float64(r.Dx())/2, float64(r.Dy())/2
			for y := r.Min.Y; y < r.Max.Y; y++ {
				for x := r.Min.X; x < r.Max.X; x++ {
					dx, dy := (float64(x)+0.5-cx)/rx, (float64(y)+0.5-cy)/ry
					if dx*dx+dy*dy <= 1 {
						plane[y*w+x] = 1
					}
				}
			}
		}
	}
	boxBlurPlane(plane, w, h, (blur+1)/2)
	out := image.NewGray(image.Rect(0, 0, w, h))
	for i, v := range plane {
		out.Pix[i] = to8(v)
	}
	return out
}

// The mask drawn around the eyes alone is the mask drawn on the whole image: eyes near the
// edges, eyes whose blurred surroundings overlap, no blur and the largest blur.
func TestEyeMaskAroundTheEyesIsTheWholeImagesMask(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const w, h = 300, 200
	for trial := range 200 {
		var dets []eyeDetection
		for range 1 + rng.IntN(4) {
			var d eyeDetection
			for k := range d.Eyes {
				x, y := rng.IntN(w-1), rng.IntN(h-1)
				d.Eyes[k] = image.Rect(x, y, min(x+1+rng.IntN(60), w), min(y+1+rng.IntN(40), h))
			}
			dets = append(dets, d)
		}
		blur := []int{0, 1, 7, 40, 100}[trial%5]
		got, want := drawEyeMask(dets, w, h, blur), wholeImageEyeMask(dets, w, h, blur)
		for i := range want.Pix {
			if d := int(got.Pix[i]) - int(want.Pix[i]); d < -1 || d > 1 {
				t.Fatalf("trial %d, blur %d: pixel (%d,%d) is %d, the whole image's mask %d", trial, blur, i%w, i/w, got.Pix[i], want.Pix[i])
			}
		}
	}
}

// The eye mask's work takes memory for the eyes, not the image: on a 6000 × 6000 image, the
// luminance and the mask (a byte a pixel each) and little more. (The whole image's planes took
// 16 bytes a pixel more, and the luminance a copy of the image as NRGBA.)
func TestEyeMaskWorkTakesAboutTwoBytesAPixel(t *testing.T) {
	const w, h = 6000, 6000
	img := solid(w, h, color.NRGBA{120, 100, 90, 255})
	dets := []eyeDetection{{Eyes: [2]image.Rectangle{image.Rect(2000, 2000, 2100, 2060), image.Rect(2300, 2000, 2400, 2060)}}}
	n := allocatedBy(t, func() error {
		gray := grayscale(img)
		if gray[0] == 0 {
			t.Fatal("grey is black")
		}
		drawEyeMask(dets, w, h, 100)
		return nil
	})
	if n > 2*w*h+8<<20 {
		t.Fatalf("the mask's work allocated %d bytes (%.1f a pixel)", n, float64(n)/(w*h))
	}
}
