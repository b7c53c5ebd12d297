package catalog

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
)

// MapURLs visits every url input of a validated input, at its location, and nothing else: a
// prompt that reads like an address is left alone, and numbers keep their digits.
func TestMapURLsVisitsEveryURLInput(t *testing.T) {
	m := mustModel(t, mustDefault(t), "image-dev")
	raw := []byte(`{"positivePrompt":"https://not.a.file/x","seed":9223372036854775807,` +
		`"inputs":{"seedImage":"https://a.example/seed.png","maskImage":"https://a.example/mask.png"},` +
		`"controlNet":[{"model":"x","guideImage":"https://a.example/g0.png"},{"model":"y","guideImage":"https://a.example/g1.png"}]}`)
	var seen []string
	out, err := m.MapURLs(raw, func(loc []string, url string) (string, error) {
		seen = append(seen, strings.Join(loc, ".")+"="+url)
		return "data:image/png;base64,AA==", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(seen)
	want := []string{
		"body.controlNet.0.guideImage=https://a.example/g0.png",
		"body.controlNet.1.guideImage=https://a.example/g1.png",
		"body.inputs.maskImage=https://a.example/mask.png",
		"body.inputs.seedImage=https://a.example/seed.png",
	}
	if !slices.Equal(seen, want) {
		t.Fatalf("visited %v, want %v", seen, want)
	}
	var doc struct {
		Prompt string            `json:"positivePrompt"`
		Seed   json.Number       `json:"seed"`
		Inputs map[string]string `json:"inputs"`
	}
	if err := json.Unmarshal(out, &doc); err != nil || doc.Prompt != "https://not.a.file/x" || doc.Seed != "9223372036854775807" ||
		doc.Inputs["seedImage"] != "data:image/png;base64,AA==" {
		t.Fatalf("mapped %s (%v)", out, err)
	}
	boom := errors.New("boom")
	if _, err := m.MapURLs(raw, func([]string, string) (string, error) { return "", boom }); !errors.Is(err, boom) {
		t.Fatalf("fn's error: %v", err)
	}
}
