package catalog

// The output documents of the built-in runners, as the result read and the synchronous run
// answer them: every storage key a runner writes is answered as a `url` signed for 15 minutes.
// A model runs the built-in runner of its slug unless its entry names another (Runner); a
// model whose runner is not built in gets the generic Output schema.

// OutputSchemaName is the component name of a model's output schema (image-4b → Image4bOutput).
func OutputSchemaName(slug string) string {
	in := SchemaName(slug)
	return in[:len(in)-len("Input")] + "Output"
}

// outputKind is the shape of the document the model's runner answers: "image", "upscale",
// "mask", "audio", "noop", or "" when its runner is not a built-in one of these.
func (m *Model) outputKind() string {
	r := m.Runner
	if r == "" {
		r = m.Slug
	}
	switch r {
	case "image-9b-kv", "image-4b", "image-lite", "image-dev", "image-turbo", "image-edit":
		return "image"
	case "upscale":
		return "upscale"
	case "eye-mask":
		return "mask"
	case "music-turbo":
		return "audio"
	case "noop":
		return "noop"
	}
	return ""
}

func obj(required []string, props map[string]any) map[string]any {
	req := make([]any, len(required))
	for i, r := range required {
		req[i] = r
	}
	return map[string]any{"type": "object", "required": req, "properties": props}
}

func typed(t, desc string) map[string]any {
	out := map[string]any{"type": t}
	if desc != "" {
		out["description"] = desc
	}
	return out
}

const exampleFileURL = "https://api.example.com/files/outputs/req_01/0.jpg?exp=1764000000&sig=..."

// imageFileSchema is one stored image: the signed link, its size and its type.
func imageFileSchema() map[string]any {
	return obj([]string{"url", "width", "height", "content_type", "file_size"}, map[string]any{
		"url":          typed("string", "Signed link to the file, valid 15 minutes from this answer."),
		"width":        typed("integer", "Pixels."),
		"height":       typed("integer", "Pixels."),
		"content_type": map[string]any{"type": "string", "enum": []any{"image/jpeg", "image/png", "image/webp"}},
		"file_size":    typed("integer", "Bytes."),
	})
}

func timingsSchema() map[string]any {
	return obj([]string{"inference"}, map[string]any{"inference": typed("number", "Seconds the runner worked.")})
}

func exampleImage(w, h int) map[string]any {
	return map[string]any{"url": exampleFileURL, "width": w, "height": h, "content_type": "image/jpeg", "file_size": 182734}
}

// outputSchema is the schema, with an example, of what m's runner answers.
func (m *Model) outputSchema() map[string]any {
	var s map[string]any
	var ex map[string]any
	switch m.outputKind() {
	case "image":
		s = obj([]string{"images", "seed", "prompt", "has_nsfw_concepts", "timings"}, map[string]any{
			"images":            map[string]any{"type": "array", "items": imageFileSchema(), "minItems": 1},
			"seed":              typed("integer", "The seed used: the one given, or the one chosen."),
			"prompt":            typed("string", "The positive prompt as run."),
			"has_nsfw_concepts": map[string]any{"type": "array", "items": map[string]any{"type": "boolean"}, "description": "One flag per image."},
			"timings":           timingsSchema(),
		})
		ex = map[string]any{"images": []any{exampleImage(1024, 1024)}, "seed": 42, "prompt": "a red fox in the snow",
			"has_nsfw_concepts": []any{false}, "timings": map[string]any{"inference": 1.84}}
	case "upscale":
		s = obj([]string{"images", "upscale_factor", "input", "timings"}, map[string]any{
			"images":         map[string]any{"type": "array", "items": imageFileSchema(), "minItems": 1},
			"upscale_factor": typed("number", "The factor applied."),
			"input": obj([]string{"width", "height"}, map[string]any{
				"width": typed("integer", "Pixels of the source image."), "height": typed("integer", "Pixels of the source image."),
			}),
			"seed":    typed("integer", "Present when the input gave one."),
			"timings": timingsSchema(),
		})
		ex = map[string]any{"images": []any{exampleImage(2048, 1536)}, "upscale_factor": 2,
			"input": map[string]any{"width": 1024, "height": 768}, "timings": map[string]any{"inference": 0.93}}
	case "mask":
		box := map[string]any{"type": "array", "items": map[string]any{"type": "integer"}, "minItems": 4, "maxItems": 4,
			"description": "[x, y, width, height] in pixels of the source image."}
		eye := obj([]string{"side", "center", "box", "localised"}, map[string]any{
			"side":      map[string]any{"type": "string", "enum": []any{"left", "right"}},
			"center":    map[string]any{"type": "array", "items": map[string]any{"type": "integer"}, "minItems": 2, "maxItems": 2, "description": "[x, y] of the pupil."},
			"box":       box,
			"localised": typed("boolean", "Whether the pupil was found in the eye region (false: the region's centre)."),
		})
		detection := obj([]string{"box", "confidence", "face_box", "eyes"}, map[string]any{
			"box": box, "face_box": box,
			"confidence": typed("number", "Face detection confidence, 0..1."),
			"eyes":       map[string]any{"type": "array", "items": eye},
		})
		mask := imageFileSchema()
		mask["properties"].(map[string]any)["detections"] = map[string]any{"type": "array", "items": detection}
		mask["required"] = append(mask["required"].([]any), "detections")
		s = obj([]string{"masks", "detections", "timings"}, map[string]any{
			"masks":      map[string]any{"type": "array", "items": mask, "minItems": 1, "description": "The mask image: white over the eye regions."},
			"detections": typed("integer", "Faces found."),
			"timings":    timingsSchema(),
		})
		m1 := exampleImage(1024, 1024)
		m1["content_type"] = "image/png"
		m1["detections"] = []any{map[string]any{"box": []any{380, 410, 270, 70}, "confidence": 0.9731, "face_box": []any{330, 300, 370, 450},
			"eyes": []any{
				map[string]any{"side": "left", "center": []any{425, 445}, "box": []any{380, 410, 90, 70}, "localised": true},
				map[string]any{"side": "right", "center": []any{605, 445}, "box": []any{560, 410, 90, 70}, "localised": true},
			}}}
		ex = map[string]any{"masks": []any{m1}, "detections": 1, "timings": map[string]any{"inference": 0.41}}
	case "audio":
		s = obj([]string{"audio", "seed", "prompt", "bpm", "key_scale", "time_signature", "timings"}, map[string]any{
			"audio": obj([]string{"url", "content_type", "file_size", "duration", "sample_rate", "channels", "bitrate", "format"}, map[string]any{
				"url":          typed("string", "Signed link to the file, valid 15 minutes from this answer."),
				"content_type": map[string]any{"type": "string", "enum": []any{"audio/mpeg", "audio/wav", "audio/flac", "audio/ogg"}},
				"file_size":    typed("integer", "Bytes."),
				"duration":     typed("number", "Seconds."),
				"sample_rate":  typed("integer", "Hz."),
				"channels":     map[string]any{"type": "integer", "enum": []any{1, 2}},
				"bitrate":      typed("integer", "kbps: the constant rate for MP3 and OGG, the average for WAV and FLAC."),
				"format":       map[string]any{"type": "string", "enum": []any{"MP3", "WAV", "FLAC", "OGG"}},
			}),
			"seed":           typed("integer", ""),
			"prompt":         typed("string", ""),
			"bpm":            typed("integer", "Tempo of the piece."),
			"key_scale":      typed("string", "Key and scale, e.g. \"A minor\"."),
			"time_signature": typed("integer", "Beats per bar."),
			"timings":        timingsSchema(),
		})
		ex = map[string]any{"audio": map[string]any{"url": "https://api.example.com/files/outputs/req_01/audio.mp3?exp=1764000000&sig=...",
			"content_type": "audio/mpeg", "file_size": 482112, "duration": 30, "sample_rate": 44100, "channels": 2, "bitrate": 128, "format": "MP3"},
			"seed": 7, "prompt": "calm piano over rain", "bpm": 92, "key_scale": "A minor", "time_signature": 4, "timings": map[string]any{"inference": 2.6}}
	case "noop":
		s = obj([]string{"ok", "runner"}, map[string]any{"ok": typed("boolean", ""), "runner": map[string]any{"type": "string", "enum": []any{"noop"}}})
		ex = map[string]any{"ok": true, "runner": "noop"}
	default:
		return ref("Output")
	}
	s["description"] = "What " + m.Address + " answers once COMPLETED: the result read and the synchronous run."
	s["example"] = ex
	return s
}
