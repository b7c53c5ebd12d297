package catalog

import (
	"errors"
	"math/big"
	"reflect"
	"strings"
	"testing"
)

// priceCase is one request quoted against the spec's price table (spec 01 §Models described)
// and DESIGN 2. units is the exact unit count (a rational: "786432/1000000"), billed the units
// charged for (min_units when below it; "" = units), credits the quote. unpriced: the request
// answers *NotPricedError (band_not_priced) instead.
type priceCase struct {
	id, slug, patch string
	units, billed   string
	credits         int64
	unpriced        bool
}

var priceCases = []priceCase{
	// PRICE-04: units = width × height / 1e6 × counted steps / N.
	{"PRICE-04", "image-4b", `{"width":1024,"height":768,"steps":28}`, "1024*768*28/28", "", 1, false},
	{"PRICE-04", "image-9b-kv", `{"width":2048,"height":1024,"steps":10}`, "2048*1024*10/4", "", 1, false},
	{"PRICE-04", "image-lite", `{"width":1024,"height":1024,"steps":37}`, "1024*1024*37/20", "", 1, false},
	// PRICE-05: steps + ultralytics.steps (default 20) when ultralytics is sent, else steps.
	{"PRICE-05", "image-edit", `{"width":2048,"height":2048,"steps":50}`, "2048*2048*50/28", "", 3, false},
	{"PRICE-05", "image-edit", `{"width":2048,"height":2048,"steps":50,"ultralytics":{}}`, "2048*2048*70/28", "", 4, false},
	{"PRICE-05", "image-edit", `{"width":2048,"height":2048,"steps":50,"ultralytics":{"steps":5}}`, "2048*2048*55/28", "", 3, false},
	{"PRICE-05", "image-dev", `{"width":2048,"height":2048,"steps":100,"ultralytics":{}}`, "2048*2048*120/48", "", 2, false},
	{"PRICE-05", "image-dev", `{"width":2048,"height":2048,"steps":100}`, "2048*2048*100/48", "", 2, false},
	{"PRICE-05", "image-turbo", `{"width":2048,"height":2048,"steps":50,"ultralytics":{"steps":1}}`, "2048*2048*51/28", "", 2, false},
	{"PRICE-05", "image-turbo", `{"width":2048,"height":2048,"steps":50}`, "2048*2048*50/28", "", 2, false},
	// PRICE-06: M5 units = duration × steps / 10 (seconds, no megapixel scale).
	{"PRICE-06", "music-turbo", `{"duration":120,"steps":20}`, "240000000/1000000", "", 1, false},
	{"PRICE-06", "music-turbo", `{"duration":45.5,"steps":14}`, "63700000/1000000", "", 1, false},
	// PRICE-07: omitted fields take their defaults before counting.
	{"PRICE-07", "image-4b", `{}`, "1024*1024*28/28", "", 2, false},
	{"PRICE-07", "image-9b-kv", `{}`, "1024*1024*4/4", "", 1, false},
	{"PRICE-07", "image-lite", `{}`, "1024*1024*20/20", "", 1, false},
	{"PRICE-07", "image-turbo", `{"ultralytics":{}}`, "1024*1024*28/28", "", 1, false},
	{"PRICE-07", "music-turbo", `{}`, "60000000/1000000", "", 1, false},
	// PRICE-08: below min_units billed as min_units.
	{"PRICE-08", "image-4b", `{"width":128,"height":128,"steps":1}`, "128*128*1/28", "1024*768*28/28", 1, false},
	{"PRICE-08", "image-9b-kv", `{"width":128,"height":128,"steps":1}`, "128*128*1/4", "1024*1024*4/4", 1, false},
	{"PRICE-08", "image-turbo", `{"width":128,"height":128,"steps":1}`, "128*128*1/28", "512*512*28/28", 1, false},
	{"PRICE-08", "music-turbo", `{"duration":30,"steps":1}`, "3000000/1000000", "60000000/1000000", 1, false},
	// PRICE-09 and PRICE-13: outside every band's when → not priced.
	{"PRICE-09", "image-lite", `{"width":1408,"height":640}`, "", "", 0, true},
	{"PRICE-13", "image-lite", `{"width":640,"height":1408}`, "", "", 0, true},
	{"PRICE-13", "image-lite", `{"width":1280,"height":768}`, "", "", 0, true},
	{"PRICE-13", "image-lite", `{"width":768,"height":1280}`, "", "", 0, true},
	{"PRICE-13", "image-lite", `{"width":1152,"height":896}`, "", "", 0, true},
	{"PRICE-13", "image-lite", `{"width":896,"height":1152}`, "", "", 0, true},
	{"PRICE-13", "image-lite", `{"width":1024,"height":1024,"steps":10}`, "1024*1024*10/20", "1024*1024*20/20", 1, false},
	{"PRICE-13", "image-lite", `{"width":1024,"height":1024,"steps":50}`, "1024*1024*50/20", "", 2, false},
	// PRICE-10: ceil(units × credits_per_unit).
	{"PRICE-10", "image-4b", `{"width":1024,"height":768,"steps":28}`, "1024*768*28/28", "", 1, false},     // 0.99994 → 1
	{"PRICE-10", "image-4b", `{"width":1024,"height":1024,"steps":28}`, "1024*1024*28/28", "", 2, false},   // 1.3333 → 2
	{"PRICE-10", "image-9b-kv", `{"width":2048,"height":2048,"steps":50}`, "2048*2048*50/4", "", 8, false}, // 7.0465 → 8
	// PRICE-11: M1 at its published minimum and maximum, the same for all four acceleration values.
	{"PRICE-11", "image-9b-kv", `{"width":1024,"height":1024,"steps":4,"acceleration":"none"}`, "1024*1024*4/4", "", 1, false},
	{"PRICE-11", "image-9b-kv", `{"width":2048,"height":2048,"steps":50,"acceleration":"none"}`, "2048*2048*50/4", "", 8, false},
	{"PRICE-11", "image-9b-kv", `{"width":2048,"height":2048,"steps":50,"acceleration":"low"}`, "2048*2048*50/4", "", 8, false},
	{"PRICE-11", "image-9b-kv", `{"width":2048,"height":2048,"steps":50,"acceleration":"medium"}`, "2048*2048*50/4", "", 8, false},
	{"PRICE-11", "image-9b-kv", `{"width":2048,"height":2048,"steps":50,"acceleration":"high"}`, "2048*2048*50/4", "", 8, false},
	{"PRICE-11", "image-9b-kv", `{"width":2048,"height":2048,"steps":50,"acceleratorOptions":{"teaCache":true}}`, "2048*2048*50/4", "", 8, false},
	// PRICE-12: M2 likewise.
	{"PRICE-12", "image-4b", `{"width":1024,"height":768,"steps":28,"acceleration":"none"}`, "1024*768*28/28", "", 1, false},
	{"PRICE-12", "image-4b", `{"width":2048,"height":2048,"steps":50,"acceleration":"none"}`, "2048*2048*50/28", "", 10, false},
	{"PRICE-12", "image-4b", `{"width":2048,"height":2048,"steps":50,"acceleration":"low"}`, "2048*2048*50/28", "", 10, false},
	{"PRICE-12", "image-4b", `{"width":2048,"height":2048,"steps":50,"acceleration":"medium"}`, "2048*2048*50/28", "", 10, false},
	{"PRICE-12", "image-4b", `{"width":2048,"height":2048,"steps":50,"acceleration":"high"}`, "2048*2048*50/28", "", 10, false},
	// PRICE-14 and PRICE-17: one credit per call, whatever the input.
	{"PRICE-14", "upscale", `{}`, "1", "", 1, false},
	{"PRICE-14", "upscale", `{"upscaleFactor":4,"settings":{"steps":1000}}`, "1", "", 1, false},
	{"PRICE-17", "eye-mask", `{}`, "1", "", 1, false},
	{"PRICE-17", "eye-mask", `{"settings":{"maxDetections":20}}`, "1", "", 1, false},
	// PRICE-15: M5 per second of output.
	{"PRICE-15", "music-turbo", `{"duration":60,"steps":10}`, "60000000/1000000", "", 1, false},
	{"PRICE-15", "music-turbo", `{"duration":120,"steps":20}`, "240000000/1000000", "", 1, false},
	// PRICE-18..20: M7, M8, M9 at their published minimum and maximum.
	{"PRICE-18", "image-edit", `{"width":1024,"height":1024,"steps":28}`, "1024*1024*28/28", "", 1, false},
	{"PRICE-18", "image-edit", `{"width":2048,"height":2048,"steps":100,"ultralytics":{"steps":100}}`, "2048*2048*200/28", "", 10, false},
	{"PRICE-19", "image-dev", `{"width":1024,"height":1024,"steps":48}`, "1024*1024*48/48", "", 1, false},
	{"PRICE-19", "image-dev", `{"width":2048,"height":2048,"steps":100,"ultralytics":{"steps":100}}`, "2048*2048*200/48", "", 3, false},
	{"PRICE-20", "image-turbo", `{"width":512,"height":512,"steps":28}`, "512*512*28/28", "", 1, false},
	{"PRICE-20", "image-turbo", `{"width":2048,"height":2048,"steps":50,"ultralytics":{"steps":100}}`, "2048*2048*150/28", "", 5, false},
	// PRICE-21: DESIGN 2's worked quotes.
	{"PRICE-21", "image-4b", `{"width":1024,"height":1024,"steps":28}`, "1024*1024*28/28", "", 2, false},
	{"PRICE-21", "image-4b", `{"width":2048,"height":2048,"steps":50}`, "2048*2048*50/28", "", 10, false},
	{"PRICE-21", "image-edit", `{"width":2048,"height":2048,"steps":100,"ultralytics":{"steps":100}}`, "2048*2048*200/28", "", 10, false},
	{"PRICE-21", "music-turbo", `{}`, "60000000/1000000", "", 1, false},
}

// ratOfExpr reads "a*b*c/n" (a megapixel count: the product is divided by n and by 1e6) or
// a plain rational ("60000000/1000000", "1": already in units).
func ratOfExpr(t *testing.T, s string) *big.Rat {
	t.Helper()
	if r, ok := new(big.Rat).SetString(s); ok {
		return r
	}
	prod := big.NewRat(1, 1)
	num, den, _ := strings.Cut(s, "/")
	for _, f := range strings.Split(num, "*") {
		r, ok := new(big.Rat).SetString(f)
		if !ok {
			t.Fatalf("bad units %q", s)
		}
		prod.Mul(prod, r)
	}
	d, ok := new(big.Rat).SetString(den)
	if !ok {
		t.Fatalf("bad units %q", s)
	}
	return prod.Quo(prod, d.Mul(d, big.NewRat(1_000_000, 1)))
}

// TestPRICE_SpecLetter proves PRICE-04..21 on the catalogue's quote: exact units, billed
// units and credits of requests at each model's published minimum and maximum, the
// counting rules of DESIGN 2, and the refusals before any charge (PRICE-09, -13, -16).
func TestPRICE_SpecLetter(t *testing.T) {
	c := mustDefault(t)
	for _, tc := range priceCases {
		t.Run(tc.id, func(t *testing.T) {
			m := mustModel(t, c, tc.slug)
			in, _, err := m.Validate(merged(t, tc.slug, tc.patch), beforeEnforcement, fixedSeed)
			if err != nil {
				t.Fatalf("%s %s: %v", tc.slug, tc.patch, err)
			}
			q, err := m.Quote(in)
			if tc.unpriced {
				var np *NotPricedError
				if !errors.As(err, &np) || np.Message == "" {
					t.Errorf("%s %s: want NotPricedError with a message, got %v %+v", tc.slug, tc.patch, err, q)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s %s: %v", tc.slug, tc.patch, err)
			}
			units := ratOfExpr(t, tc.units)
			billed := units
			if tc.billed != "" {
				billed = ratOfExpr(t, tc.billed)
			}
			if q.Units.Cmp(units) != 0 || q.BilledUnits.Cmp(billed) != 0 || q.Credits != tc.credits {
				t.Errorf("%s %s: units %s billed %s credits %d, want %s %s %d", tc.slug, tc.patch,
					q.Units.RatString(), q.BilledUnits.RatString(), q.Credits, units.RatString(), billed.RatString(), tc.credits)
			}
			// PRICE-10: credits = ceil(billed × credits_per_unit), computed here independently.
			rate, _ := new(big.Rat).SetString(string(m.PriceView().Rule.Bands[q.Band].CreditsPerUnit))
			cost := new(big.Rat).Mul(billed, rate)
			want := new(big.Int).Quo(cost.Num(), cost.Denom())
			if !cost.IsInt() {
				want.Add(want, big.NewInt(1))
			}
			if want.Int64() != q.Credits {
				t.Errorf("%s %s: credits %d, ceil(%s × %s) = %s", tc.slug, tc.patch, q.Credits, billed.FloatString(6), rate.FloatString(4), want)
			}
		})
	}
}

// TestPRICE11_20_RatesAndUnits proves the published rate and unit of every model (PRICE-11..20,
// spec 01 §Models described) and that credits are an integer type (PRICE-03).
func TestPRICE11_20_RatesAndUnits(t *testing.T) {
	c := mustDefault(t)
	for slug, w := range map[string][2]string{
		"image-9b-kv": {"0.1344", "megapixel"}, "image-4b": {"1.2715", "megapixel"},
		"image-lite": {"0.4054", "megapixel"}, "upscale": {"1", "call"},
		"music-turbo": {"0.0013", "second"}, "eye-mask": {"1", "call"},
		"image-edit": {"0.302", "megapixel"}, "image-dev": {"0.151", "megapixel"},
		"image-turbo": {"0.1908", "megapixel"},
	} {
		p := mustModel(t, c, slug).PriceView()
		if len(p.Rule.Bands) != 1 || string(p.Rule.Bands[0].CreditsPerUnit) != w[0] || p.Rule.Unit != w[1] {
			t.Errorf("%s: %+v, want rate %s per %s", slug, p.Rule, w[0], w[1])
		}
	}
	if k := reflect.TypeFor[Quote]().Field(0); k.Name != "Credits" || k.Type.Kind() != reflect.Int64 {
		t.Errorf("Quote.Credits is %v", k.Type)
	}
}

// TestPRICE16_AudioHasNoPrice proves PRICE-16 at the quote too: a filled input that carries
// inputs.audio (rebuilt from stored JSON, past the validator) is not priced.
func TestPRICE16_AudioHasNoPrice(t *testing.T) {
	m := mustModel(t, mustDefault(t), "music-turbo")
	_, err := m.Quote(Input{JSON: []byte(`{"positivePrompt":"a song","inputs":{"audio":"https://h.example/a.mp3"},"steps":10,"duration":60}`)})
	var np *NotPricedError
	if !errors.As(err, &np) {
		t.Errorf("want NotPricedError, got %v", err)
	}
}
