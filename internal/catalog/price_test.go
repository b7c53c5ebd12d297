package catalog

import (
	"errors"
	"math/big"
	"testing"
	"time"
)

// quoteOf validates patch over slug's base body and quotes it.
func quoteOf(t *testing.T, c *Catalog, slug, patch string) (Quote, error) {
	t.Helper()
	m := mustModel(t, c, slug)
	in, _, err := m.Validate(merged(t, slug, patch), beforeEnforcement, fixedSeed)
	if err != nil {
		t.Fatalf("%s %s: %v", slug, patch, err)
	}
	return m.Quote(in)
}

// TestPRICE11_20_PublishedRanges proves PRICE-04..08, -10..15, -17..21 and CAT-18: the smallest
// and largest request of every model reproduce the spec's size range (rounded up to 4
// decimals), the counting expression is published exactly, and credits are ceil(units × rate).
func TestPRICE11_20_PublishedRanges(t *testing.T) {
	c := mustDefault(t)
	cases := []struct {
		slug, patch, units string
		credits            int64
	}{
		{"image-9b-kv", `{"steps":4}`, "1.0486", 1},
		{"image-9b-kv", `{"width":2048,"height":2048,"steps":50}`, "52.4288", 8},
		{"image-9b-kv", `{"width":2048,"height":2048,"steps":50,"acceleration":"none"}`, "52.4288", 8},
		{"image-4b", `{"width":1024,"height":768,"steps":28}`, "0.7865", 1},
		{"image-4b", `{}`, "1.0486", 2},
		{"image-4b", `{"width":2048,"height":2048,"steps":50}`, "7.4899", 10},
		{"image-4b", `{"width":2048,"height":2048,"steps":50,"acceleration":"low"}`, "7.4899", 10},
		{"image-lite", `{}`, "1.0486", 1},
		{"image-lite", `{"steps":50}`, "2.6215", 2},
		{"image-edit", `{}`, "0.2996", 1}, // 1024²×8/28 — billed at the band minimum
		{"image-edit", `{"width":2048,"height":2048,"steps":100,"ultralytics":{"steps":100}}`, "29.9594", 10},
		{"image-dev", `{"width":2048,"height":2048,"steps":100,"ultralytics":{"steps":100}}`, "17.4763", 3},
		{"image-dev", `{}`, "0.6117", 1},
		{"image-turbo", `{"width":512,"height":512,"steps":28}`, "0.2622", 1},
		{"image-turbo", `{"width":2048,"height":2048,"steps":50,"ultralytics":{"steps":100}}`, "22.4695", 5},
		{"image-turbo", `{"ultralytics":{}}`, "1.0486", 1}, // 1024²×(8+20)/28: ultralytics.steps defaults to 20
		{"music-turbo", `{}`, "60.0000", 1},
		{"music-turbo", `{"duration":120,"steps":20}`, "240.0000", 1},
		{"music-turbo", `{"duration":30,"steps":1}`, "3.0000", 1},
		{"upscale", `{}`, "1.0000", 1},
		{"eye-mask", `{}`, "1.0000", 1},
	}
	for _, tc := range cases {
		q, err := quoteOf(t, c, tc.slug, tc.patch)
		if err != nil {
			t.Errorf("%s %s: %v", tc.slug, tc.patch, err)
			continue
		}
		if q.UnitsDisplay() != tc.units || q.Credits != tc.credits {
			t.Errorf("%s %s: %s units %d credits, want %s units %d credits", tc.slug, tc.patch, q.UnitsDisplay(), q.Credits, tc.units, tc.credits)
		}
	}
	// the published band figures
	want := map[string][3]string{
		"image-9b-kv": {"width*height*steps@4", "1.0486", "52.4288"},
		"image-4b":    {"width*height*steps@28", "0.7865", "7.4899"},
		"image-lite":  {"width*height*steps@20", "1.0486", "2.6215"},
		"music-turbo": {"duration*steps@10", "60", "600"},
		"image-edit":  {"width*height*steps+ultralytics.steps@28", "1.0486", "29.9594"},
		"image-dev":   {"width*height*steps+ultralytics.steps@48", "1.0486", "17.4763"},
		"image-turbo": {"width*height*steps+ultralytics.steps@28", "0.2622", "22.4695"},
	}
	for slug, w := range want {
		p := mustModel(t, c, slug).PriceView()
		b := p.Rule.Bands[0]
		if p.Rule.Counting != w[0] || string(*b.MinUnits) != w[1] || string(*b.MaxUnits) != w[2] || p.Kind != "quoted" || !p.Metered {
			t.Errorf("%s: published %s %s %s", slug, p.Rule.Counting, *b.MinUnits, *b.MaxUnits)
		}
	}
}

// TestPRICE08_BelowMinBilledAsMin proves PRICE-08.
func TestPRICE08_BelowMinBilledAsMin(t *testing.T) {
	q, err := quoteOf(t, mustDefault(t), "image-4b", `{"width":128,"height":128,"steps":1}`)
	if err != nil || q.BilledUnits.FloatString(6) != "0.786432" || q.Credits != 1 {
		t.Errorf("%v %v %d", q.BilledUnits, err, q.Credits)
	}
}

// TestPRICE09_13_NotPriced proves PRICE-09 and PRICE-13 and DESIGN 16: M3 beyond 1024 (any
// pair other than 1024x1024) is not priced; units above max_units are not priced.
func TestPRICE09_13_NotPriced(t *testing.T) {
	c := mustDefault(t)
	for _, p := range M3SizePairs {
		q, err := quoteOf(t, c, "image-lite", jsonString(map[string]int64{"width": p[0], "height": p[1]}))
		var np *NotPricedError
		if p[0] == 1024 && p[1] == 1024 {
			if err != nil || q.Credits != 1 {
				t.Errorf("1024x1024: %v", err)
			}
		} else if !errors.As(err, &np) || np.Message == "" {
			t.Errorf("%dx%d: want not priced, got %v", p[0], p[1], err)
		}
	}
	// a band whose max is below what a valid request counts
	f := defaultFile(t)
	f.Models[1].Price.Bands[0].MaxUnits = "1"
	c2, err := New(f)
	if err != nil {
		t.Fatal(err)
	}
	_, err = quoteOf(t, c2, "image-4b", `{"width":1024,"height":1024,"steps":28}`)
	var np *NotPricedError
	if !errors.As(err, &np) {
		t.Errorf("above max: %v", err)
	}
	// exactly at max is priced (max inclusive)
	f.Models[1].Price.Bands[0].MaxUnits = "1.048576"
	c3, _ := New(f)
	if _, err := quoteOf(t, c3, "image-4b", `{"width":1024,"height":1024,"steps":28}`); err != nil {
		t.Errorf("at max: %v", err)
	}
}

// TestPRICE03_QuoteFromFilledJSON proves PRICE-03/07: a quote of the stored filled input
// (Input rebuilt from JSON alone) is the same integer.
func TestPRICE03_QuoteFromFilledJSON(t *testing.T) {
	c := mustDefault(t)
	m := mustModel(t, c, "image-turbo")
	in, _, err := m.Validate(merged(t, "image-turbo", `{"ultralytics":{"steps":40},"width":2048,"height":1024}`), beforeEnforcement, fixedSeed)
	if err != nil {
		t.Fatal(err)
	}
	q1, _ := m.Quote(in)
	q2, err := m.Quote(Input{JSON: in.JSON})
	if err != nil || q1.Credits != q2.Credits || q1.Units.Cmp(q2.Units) != 0 {
		t.Errorf("%v %v %v", q1, q2, err)
	}
}

func TestCountingExpressions(t *testing.T) {
	for _, bad := range []string{"width*height@0", "width*@4", "a@x", "+@2"} {
		if _, err := parseCounting(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
	for _, bad := range []string{"width", "width <= x"} {
		if _, err := parseWhen(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
	w, _ := parseWhen("width > 1 && height < 3 && steps == 2 && seed != 1 && x >= 0")
	if !w.holds(map[string]any{"width": jsonNum("2"), "height": jsonNum("2"), "steps": jsonNum("2"), "seed": jsonNum("5"), "x": jsonNum("0")}) {
		t.Error("when does not hold")
	}
}

// TestPRICE10_QuoteCarriesExactPrice: a quote carries the unrounded price whose ceiling it is,
// also when quoted again from the stored input (a cancelled job is charged its share of it);
// a language model's quote carries none (its runner settles on the rounded quote).
func TestPRICE10_QuoteCarriesExactPrice(t *testing.T) {
	c := mustDefault(t)
	q, err := quoteOf(t, c, "image-4b", `{"positivePrompt":"a red fox","width":2048,"height":2048,"steps":50}`)
	// 2048 × 2048 × 50 / 28 / 1e6 units × 1.2715 credits per unit.
	want := new(big.Rat).Mul(big.NewRat(2048*2048*50, 28*1_000_000), big.NewRat(12715, 10000))
	if err != nil || q.Credits != 10 || q.Exact == nil || q.Exact.Cmp(want) != 0 {
		t.Fatalf("quote = %d, exact %v (%v); want 10, exact %s", q.Credits, q.Exact, err, want.FloatString(6))
	}
	m := mustModel(t, c, "image-4b")
	in, _, err := m.Validate(merged(t, "image-4b", `{"width":2048,"height":2048,"steps":50}`), beforeEnforcement, fixedSeed)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := m.Quote(Input{JSON: in.JSON}); err != nil || again.Exact.Cmp(want) != 0 {
		t.Errorf("quoted from the stored input: exact %v (%v)", again.Exact, err)
	}
	lang := langModel(t, "qwen")
	li, _, err := lang.Validate([]byte(`{"messages":[{"role":"user","content":"Hi"}],"max_tokens":10}`), time.Now(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if lq, err := lang.Quote(li); err != nil || lq.Exact != nil {
		t.Errorf("a language quote carries exact %v (%v)", lq.Exact, err)
	}
}
