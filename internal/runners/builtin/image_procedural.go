package builtin

import (
	"image"
	"math"
	"math/rand/v2"
	"strings"
)

// scene is the procedural picture a prompt and a seed stand for: a sky gradient, soft light
// discs, layered ridges and a fine value-noise texture. It is resolution independent: the
// same scene rendered at two sizes is the same picture.
type scene struct {
	sky      [2][3]float64 // top and bottom colours
	discs    []disc
	ridges   []ridge
	noiseAmp float64
	grain    float64
	noiseKey uint64
	// transparent renders only the discs, on a transparent background (layerDiffuse).
	transparent bool
}

type disc struct {
	cx, cy, r, soft float64
	col             [3]float64
	alpha           float64
}

type ridge struct {
	base  float64 // height of the ridge line, 0 top .. 1 bottom
	amps  [3]float64
	freqs [3]float64
	phase [3]float64
	col   [3]float64
}

// promptHues maps words of a prompt to the hue they pull the palette towards.
var promptHues = []struct {
	words []string
	hue   float64
}{
	{[]string{"sunset", "fire", "warm", "orange", "autumn", "desert"}, 25},
	{[]string{"red", "rose", "blood", "cherry"}, 355},
	{[]string{"gold", "yellow", "sun", "honey"}, 48},
	{[]string{"forest", "green", "grass", "jungle", "leaf"}, 120},
	{[]string{"ocean", "sea", "blue", "water", "sky", "ice"}, 205},
	{[]string{"night", "space", "galaxy", "purple", "violet", "dream"}, 265},
	{[]string{"pink", "candy", "flower", "blossom"}, 325},
}

// newScene draws a scene from rng; the prompt's words pick the base hue when they name one.
func newScene(rng *rand.Rand, prompt string, transparent bool) scene {
	hue := rng.Float64() * 360
	lower := strings.ToLower(prompt)
	for _, ph := range promptHues {
		for _, w := range ph.words {
			if strings.Contains(lower, w) {
				hue = ph.hue + (rng.Float64()-0.5)*20
				goto picked
			}
		}
	}
picked:
	dark := strings.Contains(lower, "night") || strings.Contains(lower, "dark")
	sat := 0.45 + rng.Float64()*0.35
	topV, botV := 0.95, 0.55
	if dark {
		topV, botV = 0.18, 0.4
	}
	s := scene{
		sky: [2][3]float64{
			hsv(hue+20, sat*0.7, topV),
			hsv(hue-15, sat, botV),
		},
		noiseAmp:    0.05 + rng.Float64()*0.05,
		grain:       0.015,
		noiseKey:    rng.Uint64(),
		transparent: transparent,
	}
	nd := 3 + rng.IntN(4)
	for i := 0; i < nd; i++ {
		dh := []float64{0, 30, -30, 180, 150, 210}[rng.IntN(6)]
		s.discs = append(s.discs, disc{
			cx:    0.1 + rng.Float64()*0.8,
			cy:    0.1 + rng.Float64()*0.55,
			r:     0.05 + rng.Float64()*0.2,
			soft:  0.2 + rng.Float64()*0.5,
			col:   hsv(hue+dh, 0.3+rng.Float64()*0.5, 0.75+rng.Float64()*0.25),
			alpha: 0.55 + rng.Float64()*0.4,
		})
	}
	if transparent { // the subject: one large disc in the middle
		s.discs = append(s.discs, disc{cx: 0.5, cy: 0.5, r: 0.3, soft: 0.15, col: hsv(hue+180, 0.6, 0.9), alpha: 1})
	}
	nr := 2 + rng.IntN(2)
	for i := 0; i < nr; i++ {
		rd := ridge{base: 0.55 + 0.12*float64(i) + rng.Float64()*0.08}
		for k := 0; k < 3; k++ {
			rd.amps[k] = (0.06 / float64(k+1)) * (0.5 + rng.Float64())
			rd.freqs[k] = float64(k+1) * (1.5 + rng.Float64()*2.5)
			rd.phase[k] = rng.Float64() * 2 * math.Pi
		}
		rd.col = hsv(hue-40+float64(i)*10, 0.35+0.15*float64(i), botV*(0.75-0.18*float64(i)))
		s.ridges = append(s.ridges, rd)
	}
	return s
}

// renderRows renders rows [y0, y1) of the scene into dst, viewing the scene through view
// (the pixel rectangle the unit square of the scene maps to).
func (s *scene) renderRows(dst *image.NRGBA, view image.Rectangle, y0, y1 int) {
	b := dst.Bounds()
	vw, vh := float64(view.Dx()), float64(view.Dy())
	aspect := vw / vh
	// Ridge heights depend only on the column: compute them once per call.
	heights := make([][]float64, len(s.ridges))
	for i, rd := range s.ridges {
		heights[i] = make([]float64, b.Dx())
		for x := b.Min.X; x < b.Max.X; x++ {
			u := (float64(x-view.Min.X) + 0.5) / vw
			h := rd.base
			for k := 0; k < 3; k++ {
				h -= rd.amps[k] * math.Sin(u*rd.freqs[k]*2*math.Pi+rd.phase[k])
			}
			heights[i][x-b.Min.X] = h
		}
	}
	for y := max(y0, b.Min.Y); y < min(y1, b.Max.Y); y++ {
		v := (float64(y-view.Min.Y) + 0.5) / vh
		for x := b.Min.X; x < b.Max.X; x++ {
			u := (float64(x-view.Min.X) + 0.5) / vw
			var c [3]float64
			a := 1.0
			if s.transparent {
				a = 0
			} else {
				t := clamp01(v)
				for k := 0; k < 3; k++ {
					c[k] = s.sky[0][k]*(1-t) + s.sky[1][k]*t
				}
			}
			for _, d := range s.discs {
				dx, dy := (u-d.cx)*aspect, v-d.cy
				dist := math.Sqrt(dx*dx+dy*dy) / d.r
				w := d.alpha * (1 - smoothstep(1-d.soft, 1, dist))
				if w <= 0 {
					continue
				}
				for k := 0; k < 3; k++ {
					c[k] = c[k]*(1-w) + d.col[k]*w
				}
				a = a + w*(1-a)
			}
			if !s.transparent {
				for i, rd := range s.ridges {
					edge := heights[i][x-b.Min.X]
					w := smoothstep(edge-0.004, edge+0.004, v)
					if w <= 0 {
						continue
					}
					shade := 1 - 0.25*clamp01((v-edge)*3)
					for k := 0; k < 3; k++ {
						c[k] = c[k]*(1-w) + rd.col[k]*shade*w
					}
				}
			}
			n := s.noiseAmp*(fbm(u*aspect*6, v*6, s.noiseKey)-0.5) +
				s.grain*(hash01(uint64(x), uint64(y), s.noiseKey^0x9e3779b97f4a7c15)-0.5)
			o := dst.PixOffset(x, y)
			for k := 0; k < 3; k++ {
				dst.Pix[o+k] = to8(c[k] + n)
			}
			dst.Pix[o+3] = to8(a)
		}
	}
}

func smoothstep(e0, e1, x float64) float64 {
	t := clamp01((x - e0) / (e1 - e0))
	return t * t * (3 - 2*t)
}

// fbm is three octaves of smooth value noise in 0..1.
func fbm(x, y float64, key uint64) float64 {
	var sum, norm float64
	amp := 1.0
	for o := 0; o < 3; o++ {
		sum += amp * valueNoise(x, y, key+uint64(o))
		norm += amp
		x, y, amp = x*2.03, y*2.03, amp*0.5
	}
	return sum / norm
}

func valueNoise(x, y float64, key uint64) float64 {
	xf, yf := math.Floor(x), math.Floor(y)
	xi, yi := int64(xf), int64(yf)
	tx, ty := x-xf, y-yf
	tx, ty = tx*tx*(3-2*tx), ty*ty*(3-2*ty)
	h := func(i, j int64) float64 { return hash01(uint64(i), uint64(j), key) }
	a := h(xi, yi)*(1-tx) + h(xi+1, yi)*tx
	b := h(xi, yi+1)*(1-tx) + h(xi+1, yi+1)*tx
	return a*(1-ty) + b*ty
}

// hash01 is a splitmix64-style hash of two coordinates, in 0..1.
func hash01(x, y, key uint64) float64 {
	z := x*0x9e3779b97f4a7c15 ^ y*0xc2b2ae3d27d4eb4f ^ key
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	z ^= z >> 31
	return float64(z>>11) / (1 << 53)
}

// hsv converts hue (degrees), saturation and value to RGB in 0..1.
func hsv(h, s, v float64) [3]float64 {
	h = math.Mod(h, 360)
	if h < 0 {
		h += 360
	}
	s, v = clamp01(s), clamp01(v)
	c := v * s
	x := c * (1 - math.Abs(math.Mod(h/60, 2)-1))
	m := v - c
	var r, g, b float64
	switch {
	case h < 60:
		r, g, b = c, x, 0
	case h < 120:
		r, g, b = x, c, 0
	case h < 180:
		r, g, b = 0, c, x
	case h < 240:
		r, g, b = 0, x, c
	case h < 300:
		r, g, b = x, 0, c
	default:
		r, g, b = c, 0, x
	}
	return [3]float64{r + m, g + m, b + m}
}
