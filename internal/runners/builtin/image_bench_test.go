package builtin

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/modelexec/modelexec/internal/runners"
)

func benchRun(b *testing.B, slug string, input map[string]any, setup func(*harness)) {
	h := newHarness(&testing.T{})
	if setup != nil {
		setup(h)
	}
	raw, _ := json.Marshal(input)
	rn, _ := h.reg.For(slug)
	job := runners.Job{ID: "bench", Slug: slug, Input: raw}
	for b.Loop() {
		if _, err := rn.Run(context.Background(), job, h.env()); err != nil {
			b.Fatal(err)
		}
	}
}

// go test -run x -bench . ./internal/runners/builtin
func BenchmarkGenerate1024JPG28Steps(b *testing.B) {
	benchRun(b, SlugImage4B, map[string]any{"positivePrompt": "sunset", "width": 1024, "height": 1024, "seed": 1, "steps": 28,
		"advancedFeatures": map[string]any{"watermark": map[string]any{"text": "modelexec", "displayPosition": "tiled", "opacity": 0.3}}}, nil)
}

func BenchmarkGenerate1024WEBP(b *testing.B) {
	benchRun(b, SlugImageTurbo, map[string]any{"positivePrompt": "sunset", "width": 1024, "height": 1024, "seed": 1, "steps": 8, "outputFormat": "WEBP"}, nil)
}

func BenchmarkUpscale512x4(b *testing.B) {
	benchRun(b, SlugUpscale, map[string]any{"upscaleFactor": 4, "inputs": map[string]any{"image": "https://x/face.jpg"}}, func(h *harness) {
		h.in["https://x/face.jpg"] = readTestdata(h.t, "astronaut.jpg")
	})
}

func BenchmarkEyeMask512(b *testing.B) {
	benchRun(b, SlugEyeMask, map[string]any{"inputs": map[string]any{"image": "https://x/face.jpg"}}, func(h *harness) {
		h.in["https://x/face.jpg"] = readTestdata(h.t, "astronaut.jpg")
	})
}
