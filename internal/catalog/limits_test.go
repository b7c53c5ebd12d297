package catalog

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// withLifecycles loads the built-in catalogue with each listed model's lifecycle edited.
func withLifecycles(t *testing.T, edits map[string]map[string]any) *Catalog {
	t.Helper()
	var f map[string]any
	if err := json.Unmarshal(DefaultData(), &f); err != nil {
		t.Fatal(err)
	}
	for _, m := range f["models"].([]any) {
		m := m.(map[string]any)
		for k, v := range edits[m["slug"].(string)] {
			m["lifecycle"].(map[string]any)[k] = v
		}
	}
	b, _ := json.Marshal(f)
	c, err := Load(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestVER06_KeepsLimits: a catalogue that shortens a published stall ceiling or wait is
// refused with every shortened limit named; the same figures, or longer ones, pass.
func TestVER06_KeepsLimits(t *testing.T) {
	published := withLifecycles(t, map[string]map[string]any{"image-lite": {"queue": "offers", "max_wait_seconds": 600}})
	lite, _ := published.Model("image-lite")
	stall := lite.Lifecycle.StallCeilingSeconds
	if err := KeepsLimits(published, published); err != nil {
		t.Fatalf("the published catalogue itself: %v", err)
	}
	longer := withLifecycles(t, map[string]map[string]any{"image-lite": {"queue": "offers", "max_wait_seconds": 900, "stall_ceiling_seconds": stall + 30}})
	if err := KeepsLimits(published, longer); err != nil {
		t.Fatalf("lengthened limits: %v", err)
	}
	shorter := withLifecycles(t, map[string]map[string]any{
		"image-lite": {"queue": "offers", "max_wait_seconds": 300, "stall_ceiling_seconds": stall - 1},
		"image-4b":   {"stall_ceiling_seconds": 1},
	})
	err := KeepsLimits(published, shorter)
	for _, want := range []string{
		"model image-lite: lifecycle.max_wait_seconds is 300, shorter than the published 600",
		"model image-lite: lifecycle.stall_ceiling_seconds",
		"model image-4b: lifecycle.stall_ceiling_seconds is 1",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("shortened limits: %v (want %q)", err, want)
		}
	}
}
