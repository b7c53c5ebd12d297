package catalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func jsonNum(s string) json.Number { return json.Number(s) }

func defaultFile(t testing.TB) File {
	t.Helper()
	var f File
	if err := json.Unmarshal(DefaultData(), &f); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestCAT01_04_CatalogueIsData proves CAT-01..04 and CAT-10: addresses, slugs, products,
// scopes and lifecycle come from the embedded file.
func TestCAT01_04_CatalogueIsData(t *testing.T) {
	c := mustDefault(t)
	want := []struct{ label, slug, product, scope string }{
		{"M1", "image-9b-kv", "external", "image:write"}, {"M2", "image-4b", "photo", "image:write"},
		{"M3", "image-lite", "photo", "image:write"}, {"M4", "upscale", "photo", "image:write"},
		{"M5", "music-turbo", "music", "audio:write"}, {"M6", "eye-mask", "photo", "image:write"},
		{"M7", "image-edit", "photo", "image:write"}, {"M8", "image-dev", "photo", "image:write"},
		{"M9", "image-turbo", "photo", "image:write"},
	}
	ms := c.Models()
	if len(ms) != len(want) {
		t.Fatalf("%d models", len(ms))
	}
	for i, w := range want {
		m := ms[i]
		if m.Label != w.label || m.Slug != w.slug || m.Product != w.product || m.Scope.Required != w.scope || m.Address != "svc-serverless/"+w.slug {
			t.Errorf("%d: %+v", i, m.ModelFile)
		}
		if m.Lifecycle.Queue != QueueRefuses || m.Lifecycle.StallCeilingSeconds <= 0 || m.State != Connected || m.Admit() != nil {
			t.Errorf("%s: lifecycle %+v state %s", m.Slug, m.Lifecycle, m.State)
		}
		if got, ok := c.ByAddress(m.Address); !ok || got != m {
			t.Errorf("ByAddress(%s)", m.Address)
		}
	}
	m1, _ := c.Model("image-9b-kv")
	if !m1.Accepts([]string{"external:write"}) || !m1.Accepts([]string{"photo:write"}) || m1.Accepts([]string{"audio:write"}) {
		t.Error("M1 scopes")
	}
	m5, _ := c.Model("music-turbo")
	if !m5.Accepts([]string{"music:write"}) || m5.Accepts([]string{"image:write"}) {
		t.Error("M5 scopes")
	}
	for _, a := range []string{"svc-serverless/", "svc-serverless/nope", "other/image-4b", "image-4b", ""} {
		if _, ok := c.ByAddress(a); ok {
			t.Errorf("ByAddress(%q) found", a)
		}
	}
	if !c.EnforcementDate().Equal(time.Date(2027, 6, 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("enforcement %v", c.EnforcementDate())
	}
}

// TestCAT07_09_States proves CAT-05, CAT-07..09: described, paused and a paused vendor refuse
// with their codes and show on the catalogue read.
func TestCAT07_09_States(t *testing.T) {
	f := defaultFile(t)
	f.Models[1].State = Described
	f.Models[2].State = Paused
	f.Vendors["partner"] = Paused
	c, err := New(f)
	if err != nil {
		t.Fatal(err)
	}
	code := func(slug string) string {
		var se *StateError
		if errors.As(mustModel(t, c, slug).Admit(), &se) {
			return se.Code
		}
		return ""
	}
	if code("image-4b") != CodeModelNotConnected || code("image-lite") != CodeModelDisabled || code("image-9b-kv") != CodeVendorDisabled || code("upscale") != "" {
		t.Error("admit codes")
	}
	v := c.CatalogueView()
	if v.Addresses["svc-serverless/image-4b"] != Described || v.Addresses["svc-serverless/image-lite"] != Paused || v.Addresses["svc-serverless/image-9b-kv"] != Paused || v.Addresses["svc-serverless/upscale"] != Connected {
		t.Errorf("addresses %v", v.Addresses)
	}
}

// TestCAT04_OffersCatalogue shows how a test builds a catalogue with a queue: offers model.
func TestCAT04_OffersCatalogue(t *testing.T) {
	f := defaultFile(t)
	f.Models[1].Lifecycle = Lifecycle{Queue: QueueOffers, StallCeilingSeconds: 60, MaxWaitSeconds: 120}
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(f); err != nil {
		t.Fatal(err)
	}
	c, err := Load(&buf, WithEnforcement(time.Unix(0, 0)))
	if err != nil {
		t.Fatal(err)
	}
	m := mustModel(t, c, "image-4b")
	if m.Lifecycle.Queue != QueueOffers || m.Row().Lifecycle.GiveUpAfterSeconds != 180 {
		t.Errorf("%+v", m.Row().Lifecycle)
	}
	// WithEnforcement in the past: rules refuse now
	if _, _, err := m.Validate([]byte(`{"positivePrompt":"a","width":1024}`), beforeEnforcement, fixedSeed); !hasViolation(err, "body.height", TypeCrossField) {
		t.Errorf("enforcement option ignored: %v", err)
	}
}

func TestLoadRefusesBadFiles(t *testing.T) {
	mutations := map[string]func(*File){
		"state":        func(f *File) { f.Models[0].State = "on" },
		"queue":        func(f *File) { f.Models[0].Lifecycle.Queue = "maybe" },
		"stall":        func(f *File) { f.Models[0].Lifecycle.StallCeilingSeconds = 0 },
		"category":     func(f *File) { f.Models[0].Category = "video" },
		"scope":        func(f *File) { f.Models[0].Scope.Required = "video:write" },
		"contract":     func(f *File) { f.Models[0].Contract = "nope" },
		"unit":         func(f *File) { f.Models[0].Price.Unit = "pixel" },
		"counting":     func(f *File) { f.Models[0].Price.Counting = "width*@4" },
		"bands":        func(f *File) { f.Models[0].Price.Bands = nil },
		"rate":         func(f *File) { f.Models[0].Price.Bands[0].CreditsPerUnit = "x" },
		"min":          func(f *File) { f.Models[0].Price.Bands[0].MinUnits = "x" },
		"min>max":      func(f *File) { f.Models[0].Price.Bands[0].MinUnits = "100" },
		"when":         func(f *File) { f.Models[0].Price.Bands[0].When = "width" },
		"duplicate":    func(f *File) { f.Models[1].Slug = f.Models[0].Slug },
		"no slug":      func(f *File) { f.Models[0].Slug = "" },
		"enforcement":  func(f *File) { f.CrossFieldEnforcement = "soon" },
		"enforcement0": func(f *File) { f.CrossFieldEnforcement = "" },
	}
	for name, mut := range mutations {
		f := defaultFile(t)
		mut(&f)
		if _, err := New(f); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := Load(strings.NewReader(`{"models":[],"surprise":1}`)); err == nil {
		t.Error("unknown key accepted")
	}
}

// TestCAT11_Categories proves CAT-11 (the data side): filtering and invalid_category.
func TestCAT11_Categories(t *testing.T) {
	c := mustDefault(t)
	rows, err := c.ModelRows("text-to-music")
	if err != nil || len(rows) != 1 || rows[0].ID != "svc-serverless/music-turbo" {
		t.Errorf("%v %v", rows, err)
	}
	_, err = c.ModelRows("video")
	var uc *UnknownCategoryError
	if !errors.As(err, &uc) || uc.Category != "video" || len(uc.Categories) != 5 {
		t.Errorf("%v", err)
	}
	all, _ := c.ModelRows("")
	if len(all) != 9 {
		t.Errorf("%d rows", len(all))
	}
}
