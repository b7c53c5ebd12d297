package catalog

import (
	"encoding/json"
	"errors"
	"math/big"
	"strings"
	"testing"
)

// edgeCase is one generated request: a field set at (or one step past) an edge.
type edgeCase struct {
	slug, name string
	body       []byte
	ok         bool   // the structural check accepts it
	loc, typ   string // the violation expected when !ok
}

// edgeCases walks every model's contract and makes the edge cases of every bound, length,
// item count and enum of every field, nested ones included.
func edgeCases(t testing.TB, c *Catalog) []edgeCase {
	var out []edgeCase
	for _, m := range c.Models() {
		leaves(m.contract.root, nil, func(chain []*field) {
			f := chain[len(chain)-1]
			mk := func(name string, v any, ok bool, typ string) {
				b := decodeMap(t, baseBodies[m.Slug])
				loc := setAt(b, chain, v)
				out = append(out, edgeCase{m.Slug, strings.Join(loc, ".") + " " + name, encode(t, b), ok, strings.Join(loc, "."), typ})
			}
			if f.min != nil {
				mk("at min", ratJSON(f.min), true, "")
				mk("below min", ratJSON(new(big.Rat).Sub(f.min, step(f))), false, TypeGreaterEqual)
			}
			if f.max != nil {
				mk("at max", ratJSON(f.max), true, "")
				mk("above max", ratJSON(new(big.Rat).Add(f.max, step(f))), false, TypeLessEqual)
			}
			str := func(n int) string {
				if f.typ == tURL {
					return "https://x.example/" + strings.Repeat("a", n-len("https://x.example/"))
				}
				return strings.Repeat("é", n) // characters, not bytes
			}
			if f.minLen > 0 {
				mk("at minLength", str(f.minLen), true, "")
				mk("below minLength", strings.Repeat("é", f.minLen-1), false, TypeStringShort)
			}
			if f.maxLen > 0 {
				mk("at maxLength", str(f.maxLen), true, "")
				mk("above maxLength", str(f.maxLen+1), false, TypeStringLong)
			}
			items := func(n int) []any {
				a := make([]any, n)
				for i := range a {
					a[i] = sample(f.items)
				}
				return a
			}
			if f.typ == tArray && f.minItems > 0 {
				mk("at minItems", items(f.minItems), true, "")
				mk("below minItems", items(f.minItems-1), false, TypeTooShort)
			}
			if f.typ == tArray && f.maxItems > 0 {
				mk("at maxItems", items(f.maxItems), true, "")
				mk("above maxItems", items(f.maxItems+1), false, TypeTooLong)
			}
			for _, e := range f.enum {
				mk("enum "+jsonString(e), e, true, "")
			}
			if len(f.enum) > 0 {
				switch e := f.enum[0].(type) {
				case string:
					mk("enum near-miss suffix", e+"x", false, TypeEnum)
					if strings.ToLower(e) != e {
						mk("enum near-miss case", strings.ToLower(e), false, TypeEnum)
					} else {
						mk("enum near-miss case", strings.ToUpper(e), false, TypeEnum)
					}
				case int64:
					mk("enum near-miss", json.Number("5"), false, TypeEnum)
				}
			}
			// a value of the wrong type
			switch f.typ {
			case tString, tURL:
				mk("wrong type", json.Number("1"), false, TypeString)
			case tInteger:
				mk("fraction", json.Number("1.5"), false, TypeIntFromFloat)
				mk("wrong type", "1", false, TypeInteger)
			case tNumber:
				mk("wrong type", "1", false, TypeNumber)
			case tBoolean:
				mk("wrong type", "true", false, TypeBool)
			case tObject:
				mk("wrong type", []any{}, false, TypeObject)
			case tArray:
				mk("wrong type", map[string]any{}, false, TypeArray)
			case tTrueOrObject:
				mk("false", false, false, TypeTrueOrObject)
			}
		})
	}
	return out
}

func jsonString(v any) string { b, _ := json.Marshal(v); return string(b) }

// TestIN_SHARED06_EveryEdge proves IN-SHARED-06 (and, through the contract description,
// the ranges, lengths, item counts and enums of IN-SHARED-07..42, IN-M1..IN-M9): every bound
// is accepted at the edge and refused one step outside with the field's loc; every enum value
// is accepted and a near-miss refused; a wrong type is refused.
func TestIN_SHARED06_EveryEdge(t *testing.T) {
	c := mustDefault(t)
	cases := edgeCases(t, c)
	if len(cases) < 500 {
		t.Fatalf("only %d edge cases generated", len(cases))
	}
	for _, tc := range cases {
		m := mustModel(t, c, tc.slug)
		_, _, err := m.Validate(tc.body, beforeEnforcement, fixedSeed)
		if tc.ok {
			if vs := violations(err); vs != nil {
				t.Errorf("%s %s: refused: %v\nbody %s", tc.slug, tc.name, vs, tc.body)
			}
			continue
		}
		if !hasViolation(err, tc.loc, tc.typ) {
			t.Errorf("%s %s: want %s %s, got %v\nbody %s", tc.slug, tc.name, tc.loc, tc.typ, err, tc.body)
		}
	}
}

// specRow is one line of the spec's input tables: bounds and default of a field.
type specRow struct {
	slug, path, lo, hi string
	def                any // nil: none filled
}

// TestIN_M_SpecTables checks the contract against the spec's tables written out again by hand
// (IN-M1-*, IN-M2-04..08, IN-M3-06..08, IN-M4-02..09, IN-M5-03..14, IN-M6-02..06,
// IN-M7-03..06, IN-M8-03..04, IN-M9-03..04, IN-SHARED-04, -09, -22..33, -36, DESIGN 14,15,18).
func TestIN_M_SpecTables(t *testing.T) {
	rows := []specRow{
		{"image-9b-kv", "steps", "1", "50", "4"}, {"image-9b-kv", "width", "128", "2048", "1024"},
		{"image-9b-kv", "acceleration", "", "", "high"},
		{"image-4b", "steps", "1", "50", "28"}, {"image-4b", "CFGScale", "1", "20", "3.5"},
		{"image-4b", "width", "128", "2048", "1024"}, {"image-4b", "height", "128", "2048", "1024"},
		{"image-4b", "acceleration", "", "", "high"}, {"image-4b", "seed", "0", "9223372036854775807", nil},
		{"image-4b", "outputQuality", "20", "99", "95"}, {"image-4b", "outputFormat", "", "", "JPG"},
		{"image-4b", "outputType", "", "", "URL"},
		{"image-lite", "steps", "10", "50", "20"}, {"image-lite", "CFGScale", "2", "10", "7"},
		{"upscale", "upscaleFactor", "1", "4", "2"}, {"upscale", "settings.strength", "0", "1", "0.8"},
		{"upscale", "settings.controlNetWeight", "-4", "4", "1"}, {"upscale", "settings.steps", "1", "", nil},
		{"upscale", "settings.CFGScale", "0", "", nil}, {"upscale", "outputQuality", "20", "99", "95"},
		{"music-turbo", "duration", "30", "120", "60"}, {"music-turbo", "seed", "0", "2147483647", nil},
		{"music-turbo", "steps", "1", "20", "10"}, {"music-turbo", "settings.bpm", "30", "300", nil},
		{"music-turbo", "settings.repaintingStart", "-300", "300", nil}, {"music-turbo", "settings.repaintingEnd", "0", "300", nil},
		{"music-turbo", "settings.vocalLanguage", "", "", "en"}, {"music-turbo", "outputFormat", "", "", "MP3"},
		{"music-turbo", "audioSettings.bitrate", "8", "", nil},
		{"eye-mask", "settings.confidence", "0", "1", "0.5"}, {"eye-mask", "settings.maxDetections", "1", "20", "6"},
		{"eye-mask", "settings.maskPadding", "0", "200", "10"}, {"eye-mask", "settings.maskBlur", "0", "100", "5"},
		{"image-edit", "steps", "1", "100", "8"}, {"image-edit", "CFGScale", "1", "20", nil},
		{"image-edit", "width", "128", "2048", "1024"},
		{"image-dev", "steps", "1", "100", "28"}, {"image-dev", "CFGScale", "0", "20", nil},
		{"image-dev", "maskMargin", "32", "128", nil}, {"image-dev", "pulid.idWeight", "0", "3", nil},
		{"image-dev", "pulid.trueCFGScale", "0", "10", nil}, {"image-dev", "pulid.CFGstartStepPercentage", "0", "99", nil},
		{"image-turbo", "steps", "1", "50", "8"}, {"image-turbo", "CFGScale", "0", "20", nil},
		{"image-turbo", "strength", "0", "1", nil}, {"image-turbo", "outpaint.blur", "0", "32", nil},
		{"image-turbo", "outpaint.top", "0", "", nil},
		{"image-turbo", "ultralytics.CFGScale", "0", "50", nil}, {"image-turbo", "ultralytics.confidence", "0", "1", nil},
		{"image-turbo", "ultralytics.inpaintSize", "128", "2048", nil}, {"image-turbo", "ultralytics.maskBlur", "0", "100", nil},
		{"image-turbo", "ultralytics.maskPadding", "0", "20", nil}, {"image-turbo", "ultralytics.steps", "1", "100", nil},
		{"image-turbo", "ultralytics.strength", "0", "1", nil},
		{"image-turbo", "acceleratorOptions.cacheMaxConsecutiveSteps", "1", "5", nil},
		{"image-turbo", "acceleratorOptions.teaCacheDistance", "0", "1", nil},
		{"image-turbo", "acceleratorOptions.cacheStartStepPercentage", "0", "99", nil},
		{"image-turbo", "acceleratorOptions.cacheEndStepPercentage", "1", "100", nil},
		{"image-turbo", "acceleratorOptions.dbCacheSkipInterval", "1", "", nil},
		{"image-turbo", "advancedFeatures.watermark.opacity", "0.1", "1", nil},
	}
	c := mustDefault(t)
	for _, r := range rows {
		m := mustModel(t, c, r.slug)
		f := m.contract.root
		for _, p := range strings.Split(r.path, ".") {
			if f = f.child(p); f == nil {
				t.Fatalf("%s: no field %s", r.slug, r.path)
			}
		}
		if f.minS != r.lo || f.maxS != r.hi {
			t.Errorf("%s %s: bounds [%s, %s], spec [%s, %s]", r.slug, r.path, f.minS, f.maxS, r.lo, r.hi)
		}
		in, _, err := m.Validate([]byte(baseBodies[r.slug]), beforeEnforcement, fixedSeed)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := lookup(decodeMap(t, string(in.JSON)), strings.Split(r.path, ".")...)
		if r.def == nil {
			if ok && f.name != "seed" {
				t.Errorf("%s %s: default %v filled, spec has none", r.slug, r.path, got)
			}
			continue
		}
		if jsonString(got) != jsonString(r.def) && jsonString(got) != r.def {
			t.Errorf("%s %s: default %s, spec %v", r.slug, r.path, jsonString(got), r.def)
		}
	}
}

// TestIN_SHARED41_42_SchedulerSets proves IN-SHARED-41/42: Set A on M2, M7, M8, M9 and M4's
// settings.scheduler, Set B on M3.
func TestIN_SHARED41_42_SchedulerSets(t *testing.T) {
	c := mustDefault(t)
	for slug, want := range map[string][]string{"image-4b": SchedulerSetA, "image-edit": SchedulerSetA, "image-dev": SchedulerSetA, "image-turbo": SchedulerSetA, "image-lite": SchedulerSetB} {
		f := mustModel(t, c, slug).contract.root.child("scheduler")
		if jsonString(f.enum) != jsonString(want) {
			t.Errorf("%s scheduler set differs", slug)
		}
	}
	if f := mustModel(t, c, "upscale").contract.root.child("settings").child("scheduler"); jsonString(f.enum) != jsonString(SchedulerSetA) {
		t.Error("upscale settings.scheduler is not Set A")
	}
	if len(SchedulerSetA) != 75 || len(SchedulerSetB) != 12 || len(VocalLanguages) != 51 {
		t.Errorf("set sizes %d %d %d", len(SchedulerSetA), len(SchedulerSetB), len(VocalLanguages))
	}
	m := mustModel(t, c, "image-lite")
	if _, _, err := m.Validate(merged(t, "image-lite", `{"scheduler":"DPM++ 2M"}`), beforeEnforcement, fixedSeed); !hasViolation(err, "body.scheduler", TypeEnum) {
		t.Errorf("Set A value accepted on M3: %v", err)
	}
	if _, _, err := m.Validate(merged(t, "image-lite", `{"scheduler":"Euler Trailing"}`), beforeEnforcement, fixedSeed); err != nil {
		t.Error(err)
	}
}

// TestIN_SHARED25_FbCacheOnlyOnM3M7M9 proves IN-SHARED-25, IN-M2-09, IN-M8-19.
func TestIN_SHARED25_FbCacheOnlyOnM3M7M9(t *testing.T) {
	c := mustDefault(t)
	for _, m := range c.Models() {
		if !strings.HasPrefix(m.Slug, "image") {
			continue
		}
		want := m.Slug == "image-lite" || m.Slug == "image-edit" || m.Slug == "image-turbo"
		_, _, err := m.Validate(merged(t, m.Slug, `{"acceleratorOptions":{"fbCache":true,"fbCacheThreshold":0.3}}`), beforeEnforcement, fixedSeed)
		if got := violations(err) == nil; got != want {
			t.Errorf("%s: fbCache accepted=%v, want %v (%v)", m.Slug, got, want, err)
		}
	}
}

// TestIN_SHARED03_SeedDefault proves IN-SHARED-03/04, IN-M5-04 and IN-M4-04: an omitted seed
// is drawn from the injected source in the unsigned 32-bit range (M5 masked to its range),
// a sent one is kept.
func TestIN_SHARED03_SeedDefault(t *testing.T) {
	c := mustDefault(t)
	max32 := func() uint32 { return 4294967295 }
	for slug, want := range map[string]int64{"image-4b": 4294967295, "music-turbo": 2147483647, "upscale": 4294967295} {
		in, _, err := mustModel(t, c, slug).Validate([]byte(baseBodies[slug]), beforeEnforcement, max32)
		if err != nil || !in.HasSeed || in.Seed != want {
			t.Errorf("%s: seed %d %v %v, want %d", slug, in.Seed, in.HasSeed, err, want)
		}
	}
	in, _, err := mustModel(t, c, "image-4b").Validate(merged(t, "image-4b", `{"seed":9223372036854775807}`), beforeEnforcement, max32)
	if err != nil || in.Seed != 9223372036854775807 {
		t.Errorf("sent seed: %d %v", in.Seed, err)
	}
	if !strings.Contains(string(in.JSON), `"seed":9223372036854775807`) {
		t.Errorf("seed not exact in %s", in.JSON)
	}
	if in, _, _ := mustModel(t, c, "eye-mask").Validate([]byte(baseBodies["eye-mask"]), beforeEnforcement, max32); in.HasSeed {
		t.Error("eye-mask has no seed")
	}
	// nil source still yields a seed
	if in, _, err := mustModel(t, c, "image-4b").Validate([]byte(baseBodies["image-4b"]), beforeEnforcement, nil); err != nil || !in.HasSeed || in.Seed < 0 || in.Seed > 4294967295 {
		t.Errorf("nil rnd: %d %v", in.Seed, err)
	}
}

// TestIN_SHARED10_SafetyAlwaysOn proves IN-SHARED-10.
func TestIN_SHARED10_SafetyAlwaysOn(t *testing.T) {
	m := mustModel(t, mustDefault(t), "image-4b")
	in, _, err := m.Validate(merged(t, "image-4b", `{"safety":{"checkContent":false}}`), beforeEnforcement, fixedSeed)
	if err != nil || !strings.Contains(string(in.JSON), `"safety":{"checkContent":true}`) {
		t.Errorf("%s %v", in.JSON, err)
	}
}

// TestIN_SHARED05_NegativePromptIgnored proves IN-SHARED-05: CFGScale ≤ 1 drops negativePrompt.
func TestIN_SHARED05_NegativePromptIgnored(t *testing.T) {
	m := mustModel(t, mustDefault(t), "image-turbo")
	in, _, _ := m.Validate(merged(t, "image-turbo", `{"CFGScale":1,"negativePrompt":"blurry"}`), beforeEnforcement, fixedSeed)
	if strings.Contains(string(in.JSON), "negativePrompt") {
		t.Errorf("kept: %s", in.JSON)
	}
	in, _, _ = m.Validate(merged(t, "image-turbo", `{"CFGScale":1.5,"negativePrompt":"blurry"}`), beforeEnforcement, fixedSeed)
	if !strings.Contains(string(in.JSON), "negativePrompt") {
		t.Errorf("dropped: %s", in.JSON)
	}
}

// TestIN_SHARED02_URLs proves IN-SHARED-02: only http(s) URLs with a host.
func TestIN_SHARED02_URLs(t *testing.T) {
	m := mustModel(t, mustDefault(t), "upscale")
	for u, ok := range map[string]bool{
		"https://x.example/a.png": true, "http://x.example": true, "HTTPS://x.example/a?b=c": true,
		"ftp://x.example/a": false, "file:///etc/passwd": false, "/local/a.png": false, "https://": false,
		"data:image/png;base64,AAAA": false, "https://user@x.example/": false, "https://x.example/a b": false,
	} {
		_, _, err := m.Validate(encode(t, map[string]any{"inputs": map[string]any{"image": u}}), beforeEnforcement, fixedSeed)
		if got := err == nil; got != ok {
			t.Errorf("%q accepted=%v: %v", u, got, err)
		}
	}
}

// TestIN_SHARED01_UnknownAndNested proves IN-SHARED-01 (nested names) and the refusal of
// unknown fields at every level, with idempotency_key accepted at the top and removed.
func TestIN_SHARED01_UnknownAndNested(t *testing.T) {
	c := mustDefault(t)
	m := mustModel(t, c, "image-dev")
	_, _, err := m.Validate(merged(t, "image-dev", `{"foo":1,"lora":[{"model":"a","bar":2}],"outpaint":{"top":1,"baz":3}}`), beforeEnforcement, fixedSeed)
	for _, loc := range []string{"body.foo", "body.lora.0.bar", "body.outpaint.baz"} {
		if !hasViolation(err, loc, TypeExtraForbidden) {
			t.Errorf("no extra_forbidden at %s: %v", loc, err)
		}
	}
	in, _, err := m.Validate(merged(t, "image-dev", `{"idempotency_key":"whatever !!"}`), beforeEnforcement, fixedSeed)
	if err != nil || strings.Contains(string(in.JSON), "idempotency_key") {
		t.Errorf("idempotency_key: %s %v", in.JSON, err)
	}
	for _, b := range []string{`{}`, ``, " \n\t"} { // no body reads as {}
		_, _, err = m.Validate([]byte(b), beforeEnforcement, fixedSeed)
		if !hasViolation(err, "body.positivePrompt", TypeMissing) {
			t.Errorf("%q missing: %v", b, err)
		}
	}
	for _, b := range []string{`[]`, `"x"`, `null`, `{`, `{} {}`} {
		_, _, err := m.Validate([]byte(b), beforeEnforcement, fixedSeed)
		if vs := violations(err); len(vs) != 1 || strings.Join(vs[0].Loc, ".") != "body" {
			t.Errorf("%q: %v", b, err)
		}
	}
}

// TestIN_M2_10_SizeDefaults proves IN-M2-04/10 and DESIGN 10: both omitted → 1024x1024;
// integers written as 1024.0 are normalised.
func TestIN_M2_10_SizeDefaults(t *testing.T) {
	m := mustModel(t, mustDefault(t), "image-4b")
	in, w, err := m.Validate(merged(t, "image-4b", `{"width":1024.0,"height":768}`), beforeEnforcement, fixedSeed)
	if err != nil || len(w) != 0 || !strings.Contains(string(in.JSON), `"width":1024}`) {
		t.Errorf("%s %v %v", in.JSON, w, err)
	}
}

// TestIN_M8_12_HiresFix proves IN-M8-12/13: true or an object with model.
func TestIN_M8_12_HiresFix(t *testing.T) {
	m := mustModel(t, mustDefault(t), "image-dev")
	for patch, ok := range map[string]bool{
		`{"hiresFix":true}`: true, `{"hiresFix":{"model":"serverless:504@1","steps":10,"strength":0.5}}`: true,
		`{"hiresFix":{"steps":10}}`: false, `{"hiresFix":false}`: false, `{"hiresFix":"yes"}`: false,
		`{"hiresFix":{"model":"serverless:504@2"}}`: false,
	} {
		_, _, err := m.Validate(merged(t, "image-dev", patch), beforeEnforcement, fixedSeed)
		if got := err == nil; got != ok {
			t.Errorf("%s accepted=%v: %v", patch, got, err)
		}
	}
}

// crossCase is one cross-field rule broken.
type crossCase struct {
	slug, patch, rule, loc string
}

var crossCases = []crossCase{
	{"image-4b", `{"width":1024}`, "width_height_pair", "body.height"},
	{"image-4b", `{"height":1024}`, "width_height_pair", "body.width"},
	{"image-9b-kv", `{"width":512}`, "width_height_pair", "body.height"},
	{"image-lite", `{"height":1024}`, "width_height_pair", "body.width"},
	{"image-edit", `{"width":1024}`, "width_height_pair", "body.height"},
	{"image-dev", `{"width":1024}`, "width_height_pair", "body.height"},
	{"image-turbo", `{"height":1024}`, "width_height_pair", "body.width"},
	{"image-lite", `{"width":1000,"height":1000}`, "size_pair", "body.width"},
	{"image-4b", `{"acceleration":"low","acceleratorOptions":{"teaCache":true}}`, "acceleration_exclusive", "body.acceleratorOptions"},
	{"image-9b-kv", `{"acceleration":"none","acceleratorOptions":{}}`, "acceleration_exclusive", "body.acceleratorOptions"},
	{"image-4b", `{"acceleratorOptions":{"cacheStartStep":1,"cacheStartStepPercentage":10}}`, "cache_start_exclusive", "body.acceleratorOptions.cacheStartStepPercentage"},
	{"image-lite", `{"acceleratorOptions":{"cacheEndStep":5,"cacheEndStepPercentage":10}}`, "cache_end_exclusive", "body.acceleratorOptions.cacheEndStepPercentage"},
	{"image-edit", `{"acceleratorOptions":{"cacheStartStep":5,"cacheEndStep":5}}`, "cache_step_order", "body.acceleratorOptions.cacheStartStep"},
	{"image-turbo", `{"acceleratorOptions":{"cacheStartStepPercentage":50,"cacheEndStepPercentage":40}}`, "cache_percentage_order", "body.acceleratorOptions.cacheStartStepPercentage"},
	{"image-4b", `{"steps":10,"acceleratorOptions":{"cacheEndStep":11}}`, "cache_end_within_steps", "body.acceleratorOptions.cacheEndStep"},
	{"image-4b", `{"acceleratorOptions":{"teaCache":true,"dbCache":true}}`, "cache_exclusive", "body.acceleratorOptions"},
	{"image-dev", `{"acceleratorOptions":{"teaCache":true,"dbCache":true}}`, "cache_exclusive", "body.acceleratorOptions"},
	{"image-lite", `{"acceleratorOptions":{"fbCache":true,"dbCache":true}}`, "cache_exclusive", "body.acceleratorOptions"},
	{"image-edit", `{"acceleratorOptions":{"fbCache":true,"teaCache":true}}`, "cache_exclusive", "body.acceleratorOptions"},
	{"image-turbo", `{"acceleratorOptions":{"fbCache":true,"teaCache":true}}`, "cache_exclusive", "body.acceleratorOptions"},
	{"image-4b", `{"lora":[]}`, "lora_items", "body.lora"},
	{"image-lite", `{"lora":[{"weight":1}]}`, "lora_items", "body.lora.0.model"},
	{"image-edit", `{"lora":[{"model":"a"},{"weight":2}]}`, "lora_items", "body.lora.1.model"},
	{"image-dev", `{"lora":[]}`, "lora_items", "body.lora"},
	{"image-turbo", `{"lora":[{}]}`, "lora_items", "body.lora.0.model"},
	{"image-9b-kv", `{"lora":[]}`, "lora_items", "body.lora"},
	{"image-4b", `{"advancedFeatures":{"watermark":{}}}`, "watermark_source", "body.advancedFeatures.watermark"},
	{"image-lite", `{"advancedFeatures":{"watermark":{"text":"hi","image":"https://x.example/w.png"}}}`, "watermark_source", "body.advancedFeatures.watermark"},
	{"image-edit", `{"advancedFeatures":{"watermark":{"opacity":0.5}}}`, "watermark_source", "body.advancedFeatures.watermark"},
	{"image-dev", `{"advancedFeatures":{"watermark":{}}}`, "watermark_source", "body.advancedFeatures.watermark"},
	{"image-turbo", `{"advancedFeatures":{"watermark":{}}}`, "watermark_source", "body.advancedFeatures.watermark"},
	{"image-dev", `{"strength":0.5}`, "seed_image_required", "body.inputs.seedImage"},
	{"image-turbo", `{"inputs":{"maskImage":"https://x.example/m.png"}}`, "seed_image_required", "body.inputs.seedImage"},
	{"image-dev", `{"outpaint":{"blur":4}}`, "outpaint_side", "body.outpaint"},
	{"image-turbo", `{"outpaint":{}}`, "outpaint_side", "body.outpaint"},
	{"image-dev", `{"controlNet":[]}`, "controlnet_items", "body.controlNet"},
	{"image-dev", `{"controlNet":[{"guideImage":"https://x.example/g.png"}]}`, "controlnet_items", "body.controlNet.0.model"},
	{"image-turbo", `{"controlNet":[{"model":"svc-serverless:z-image@turbo-controlnet"}]}`, "controlnet_items", "body.controlNet.0.guideImage"},
	{"image-turbo", `{"controlNet":[{"model":"svc-serverless:z-image@turbo-controlnet","guideImage":"https://x.example/g.png","endStep":3,"endStepPercentage":50}]}`, "controlnet_items", "body.controlNet.0.endStepPercentage"},
	{"image-dev", `{"controlNet":[{"model":"svc-serverless:25@1","guideImage":"https://x.example/g.png","startStep":3,"startStepPercentage":5}]}`, "controlnet_items", "body.controlNet.0.startStepPercentage"},
	{"image-dev", `{"ipAdapters":[]}`, "ip_adapter_items", "body.ipAdapters"},
	{"image-dev", `{"ipAdapters":[{"model":"svc-serverless:56@1"}]}`, "ip_adapter_items", "body.ipAdapters.0.guideImages"},
	{"image-dev", `{"ipAdapters":[{"guideImages":["https://x.example/g.png"]}]}`, "ip_adapter_items", "body.ipAdapters.0.model"},
	{"image-dev", `{"pulid":{"idWeight":1}}`, "pulid_fields", "body.pulid.images"},
	{"image-dev", `{"pulid":{"images":["https://x.example/f.png"],"CFGstartStep":1,"CFGstartStepPercentage":5}}`, "pulid_fields", "body.pulid.CFGstartStepPercentage"},
	{"image-dev", `{"advancedFeatures":{"layerDiffuse":true}}`, "layer_diffuse_png", "body.outputFormat"},
	{"image-dev", `{"advancedFeatures":{"layerDiffuse":true},"outputFormat":"WEBP"}`, "layer_diffuse_png", "body.outputFormat"},
	{"music-turbo", `{"outputFormat":"WAV","audioSettings":{"channels":1}}`, "audio_settings_format", "body.audioSettings"},
	{"music-turbo", `{"outputFormat":"FLAC","audioSettings":{}}`, "audio_settings_format", "body.audioSettings"},
	{"music-turbo", `{"audioSettings":{"sampleRate":44000}}`, "audio_sample_rate", "body.audioSettings.sampleRate"},
	{"music-turbo", `{"outputFormat":"OGG","audioSettings":{"sampleRate":44100}}`, "audio_sample_rate", "body.audioSettings.sampleRate"},
	{"music-turbo", `{"audioSettings":{"sampleRate":16000,"bitrate":161}}`, "audio_bitrate", "body.audioSettings.bitrate"},
	{"music-turbo", `{"audioSettings":{"sampleRate":48000,"bitrate":31}}`, "audio_bitrate", "body.audioSettings.bitrate"},
	{"music-turbo", `{"audioSettings":{"sampleRate":11025,"bitrate":65}}`, "audio_bitrate", "body.audioSettings.bitrate"},
	{"music-turbo", `{"audioSettings":{"bitrate":321}}`, "audio_bitrate", "body.audioSettings.bitrate"},
	{"music-turbo", `{"outputFormat":"OGG","audioSettings":{"sampleRate":8000,"channels":1,"bitrate":41}}`, "audio_bitrate", "body.audioSettings.bitrate"},
	{"music-turbo", `{"outputFormat":"OGG","audioSettings":{"sampleRate":16000,"bitrate":23}}`, "audio_bitrate", "body.audioSettings.bitrate"},
	{"music-turbo", `{"outputFormat":"OGG","audioSettings":{"bitrate":257}}`, "audio_bitrate", "body.audioSettings.bitrate"},
	{"music-turbo", `{"outputFormat":"OGG","audioSettings":{"channels":1,"bitrate":225}}`, "audio_bitrate", "body.audioSettings.bitrate"},
	{"music-turbo", `{"strength":0.3}`, "audio_required", "body.inputs.audio"},
	{"music-turbo", `{"settings":{"repaintingStart":-10}}`, "audio_required", "body.inputs.audio"},
	{"music-turbo", `{"settings":{"repaintingEnd":10}}`, "audio_required", "body.inputs.audio"},
}

// TestIN_SHARED43_CrossFieldWarnedThenRefused proves IN-SHARED-43 and VER-05 for every
// cross-field rule of every model (IN-M2-10..13, IN-M3-04/05/10/11, IN-M5-15..21,
// IN-M7-09/10, IN-M8-10/11/17/19/20, IN-M9-07/08, IN-SHARED-15/17..21/34/35/40): warned
// (accepted) before the enforcement date, refused with type cross_field from it on.
func TestIN_SHARED43_CrossFieldWarnedThenRefused(t *testing.T) {
	c := mustDefault(t)
	rulesSeen := map[string]bool{}
	cases := crossCases
	for _, slug := range []string{"image-9b-kv", "image-4b", "image-lite", "image-edit", "image-dev", "image-turbo"} {
		cases = append(cases,
			crossCase{slug, `{"acceleratorOptions":{"cacheStartStep":1,"cacheStartStepPercentage":10}}`, "cache_start_exclusive", "body.acceleratorOptions.cacheStartStepPercentage"},
			crossCase{slug, `{"acceleratorOptions":{"cacheEndStep":5,"cacheEndStepPercentage":10}}`, "cache_end_exclusive", "body.acceleratorOptions.cacheEndStepPercentage"},
			crossCase{slug, `{"acceleratorOptions":{"cacheStartStep":6,"cacheEndStep":5}}`, "cache_step_order", "body.acceleratorOptions.cacheStartStep"},
			crossCase{slug, `{"acceleratorOptions":{"cacheStartStepPercentage":50,"cacheEndStepPercentage":50}}`, "cache_percentage_order", "body.acceleratorOptions.cacheStartStepPercentage"},
			crossCase{slug, `{"steps":10,"acceleratorOptions":{"cacheEndStep":11}}`, "cache_end_within_steps", "body.acceleratorOptions.cacheEndStep"},
			crossCase{slug, `{"acceleratorOptions":{"teaCache":true,"dbCache":true}}`, "cache_exclusive", "body.acceleratorOptions"},
			crossCase{slug, `{"advancedFeatures":{"watermark":{}}}`, "watermark_source", "body.advancedFeatures.watermark"},
		)
	}
	for _, tc := range cases {
		m := mustModel(t, c, tc.slug)
		body := merged(t, tc.slug, tc.patch)
		_, warns, err := m.Validate(body, beforeEnforcement, fixedSeed)
		if err != nil {
			t.Errorf("%s %s: refused before enforcement: %v", tc.slug, tc.patch, err)
			continue
		}
		found := false
		for _, w := range warns {
			if w.Rule == tc.rule && strings.Join(w.Loc, ".") == tc.loc {
				found = true
			}
		}
		if !found {
			t.Errorf("%s %s: want warning %s at %s, got %v", tc.slug, tc.patch, tc.rule, tc.loc, warns)
		}
		_, _, err = m.Validate(body, afterEnforcement, fixedSeed)
		if !hasViolation(err, tc.loc, TypeCrossField) {
			t.Errorf("%s %s: after enforcement want cross_field at %s, got %v", tc.slug, tc.patch, tc.loc, err)
		}
		rulesSeen[tc.slug+"/"+tc.rule] = true
	}
	// every rule of every model is exercised
	for _, m := range c.Models() {
		for _, r := range m.contract.rules {
			if !rulesSeen[m.Slug+"/"+r.id] && !(m.Slug == "music-turbo" && r.id == "audio_duration_exclusive") {
				t.Errorf("%s: rule %s has no case", m.Slug, r.id)
			}
		}
	}
	// valid combinations raise nothing
	for slug, patch := range map[string]string{
		"image-lite":  `{"width":640,"height":1408}`,
		"music-turbo": `{"outputFormat":"OGG","audioSettings":{"sampleRate":8000,"channels":1,"bitrate":40}}`,
		"image-dev":   `{"advancedFeatures":{"layerDiffuse":true},"outputFormat":"PNG","controlNet":[{"model":"svc-serverless:25@1","guideImage":"https://x.example/g.png"}]}`,
		"image-4b":    `{"acceleratorOptions":{"cacheStartStep":1,"cacheEndStep":28,"teaCache":true}}`,
	} {
		_, warns, err := mustModel(t, c, slug).Validate(merged(t, slug, patch), afterEnforcement, fixedSeed)
		if err != nil || len(warns) != 0 {
			t.Errorf("%s %s: %v %v", slug, patch, warns, err)
		}
	}
}

// TestIN_M5_02_AudioNotPricedBeforeRules proves IN-M5-02, PRICE-16 and DESIGN 16: inputs.audio
// answers band_not_priced even where a cross-field rule (duration with audio) would refuse.
func TestIN_M5_02_AudioNotPricedBeforeRules(t *testing.T) {
	m := mustModel(t, mustDefault(t), "music-turbo")
	_, _, err := m.Validate(merged(t, "music-turbo", `{"inputs":{"audio":"https://x.example/a.mp3"},"duration":60}`), afterEnforcement, fixedSeed)
	var np *NotPricedError
	if !errors.As(err, &np) {
		t.Fatalf("want NotPricedError, got %v", err)
	}
	_, _, err = m.Validate(merged(t, "music-turbo", `{"duration":121}`), afterEnforcement, fixedSeed)
	if !hasViolation(err, "body.duration", TypeLessEqual) {
		t.Errorf("duration 121: %v", err)
	}
}
