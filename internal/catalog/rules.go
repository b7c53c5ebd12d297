package catalog

import (
	"fmt"
	"math/big"
	"slices"
	"strconv"
)

// rule is one cross-field rule. check sees the input as sent (sent) and with defaults
// filled (filled); it returns one hit per violation.
type rule struct {
	id    string
	check func(sent, filled map[string]any) []hit
}

type hit struct {
	loc []string
	msg string
}

func body(path ...string) []string { return append([]string{"body"}, path...) }

func lookup(m map[string]any, path ...string) (any, bool) {
	var cur any = m
	for _, p := range path {
		obj, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		cur, ok = obj[p]
		if !ok {
			return nil, false
		}
	}
	return cur, true
}

func has(m map[string]any, path ...string) bool { _, ok := lookup(m, path...); return ok }

func isTrue(m map[string]any, path ...string) bool {
	v, _ := lookup(m, path...)
	b, _ := v.(bool)
	return b
}

func objAt(m map[string]any, path ...string) (map[string]any, bool) {
	v, ok := lookup(m, path...)
	if !ok {
		return nil, false
	}
	o, ok := v.(map[string]any)
	return o, ok
}

func ratAt(m map[string]any, path ...string) (*big.Rat, bool) {
	v, ok := lookup(m, path...)
	if !ok {
		return nil, false
	}
	return ratOf(v)
}

func strAt(m map[string]any, path ...string) string {
	v, _ := lookup(m, path...)
	s, _ := v.(string)
	return s
}

func intAt(m map[string]any, path ...string) (int64, bool) {
	r, ok := ratAt(m, path...)
	if !ok || !r.IsInt() || !r.Num().IsInt64() {
		return 0, false
	}
	return r.Num().Int64(), true
}

var ruleSizePair = rule{"width_height_pair", func(sent, _ map[string]any) []hit {
	w, h := has(sent, "width"), has(sent, "height")
	switch {
	case w && !h:
		return []hit{{body("height"), "width and height are sent together or not at all"}}
	case h && !w:
		return []hit{{body("width"), "width and height are sent together or not at all"}}
	}
	return nil
}}

// ruleM3Pairs is M3's size list. The spec judges the pair "when either is sent", so one side
// sent alone is judged with the other side's default (1024): width 640 alone is 640x1024, not
// a listed size, and breaks this rule as well as the pair rule.
var ruleM3Pairs = rule{"size_pair", func(sent, filled map[string]any) []hit {
	sentW, sentH := has(sent, "width"), has(sent, "height")
	if !sentW && !sentH {
		return nil
	}
	w, okW := intAt(filled, "width")
	h, okH := intAt(filled, "height")
	if !okW || !okH {
		return nil
	}
	for _, p := range M3SizePairs {
		if p[0] == w && p[1] == h {
			return nil
		}
	}
	loc := body("width")
	if !sentW {
		loc = body("height")
	}
	return []hit{{loc, "width x height must be one of 1024x1024, 640x1408, 1408x640, 768x1280, 1280x768, 896x1152, 1152x896"}}
}}

var ruleAccelerationExclusive = rule{"acceleration_exclusive", func(sent, _ map[string]any) []hit {
	if has(sent, "acceleration") && has(sent, "acceleratorOptions") {
		return []hit{{body("acceleratorOptions"), "acceleration and acceleratorOptions are not sent together"}}
	}
	return nil
}}

func acceleratorRules(fb bool) []rule {
	ao := func(sent map[string]any) map[string]any { o, _ := objAt(sent, "acceleratorOptions"); return o }
	pair := func(id, a, b string) rule {
		return rule{id, func(sent, _ map[string]any) []hit {
			o := ao(sent)
			if has(o, a) && has(o, b) {
				return []hit{{body("acceleratorOptions", b), a + " and " + b + " are not sent together"}}
			}
			return nil
		}}
	}
	order := func(id, lo, hi string) rule {
		return rule{id, func(sent, _ map[string]any) []hit {
			o := ao(sent)
			a, okA := ratAt(o, lo)
			b, okB := ratAt(o, hi)
			if okA && okB && a.Cmp(b) >= 0 {
				return []hit{{body("acceleratorOptions", lo), lo + " must be less than " + hi}}
			}
			return nil
		}}
	}
	caches := []string{"teaCache", "dbCache"}
	if fb {
		caches = append(caches, "fbCache")
	}
	return []rule{
		pair("cache_start_exclusive", "cacheStartStep", "cacheStartStepPercentage"),
		pair("cache_end_exclusive", "cacheEndStep", "cacheEndStepPercentage"),
		order("cache_step_order", "cacheStartStep", "cacheEndStep"),
		order("cache_percentage_order", "cacheStartStepPercentage", "cacheEndStepPercentage"),
		{"cache_end_within_steps", func(sent, filled map[string]any) []hit {
			end, ok := ratAt(ao(sent), "cacheEndStep")
			steps, okS := ratAt(filled, "steps")
			if ok && okS && end.Cmp(steps) > 0 {
				return []hit{{body("acceleratorOptions", "cacheEndStep"), "cacheEndStep must be at most steps"}}
			}
			return nil
		}},
		{"cache_exclusive", func(sent, _ map[string]any) []hit {
			o, n := ao(sent), 0
			for _, c := range caches {
				if isTrue(o, c) {
					n++
				}
			}
			if n > 1 {
				return []hit{{body("acceleratorOptions"), "no two of " + joinOr(caches) + " may be true together"}}
			}
			return nil
		}},
	}
}

func joinOr(xs []string) string {
	s := ""
	for i, x := range xs {
		if i > 0 {
			s += ", "
		}
		s += x
	}
	return s
}

// itemsRule checks an array of objects: at least one item, each with the named fields,
// and no item holding both fields of an exclusive pair.
func itemsRule(id, name string, requiredFields []string, exclusive [][2]string) rule {
	return rule{id, func(sent, _ map[string]any) []hit {
		v, ok := lookup(sent, name)
		if !ok {
			return nil
		}
		arr, _ := v.([]any)
		if len(arr) == 0 {
			return []hit{{body(name), name + " holds at least 1 item"}}
		}
		var hs []hit
		for i, it := range arr {
			o, _ := it.(map[string]any)
			idx := strconv.Itoa(i)
			for _, r := range requiredFields {
				if !has(o, r) {
					hs = append(hs, hit{body(name, idx, r), "every " + name + " item has " + r})
				}
			}
			for _, p := range exclusive {
				if has(o, p[0]) && has(o, p[1]) {
					hs = append(hs, hit{body(name, idx, p[1]), p[0] + " and " + p[1] + " are not sent together"})
				}
			}
		}
		return hs
	}}
}

var (
	ruleLora       = itemsRule("lora_items", "lora", []string{"model"}, nil)
	ruleControlNet = itemsRule("controlnet_items", "controlNet", []string{"model", "guideImage"},
		[][2]string{{"endStep", "endStepPercentage"}, {"startStep", "startStepPercentage"}})
	ruleIPAdapters = itemsRule("ip_adapter_items", "ipAdapters", []string{"model", "guideImages"}, nil)
)

var ruleWatermark = rule{"watermark_source", func(sent, _ map[string]any) []hit {
	w, ok := objAt(sent, "advancedFeatures", "watermark")
	if !ok {
		return nil
	}
	if has(w, "text") == has(w, "image") {
		return []hit{{body("advancedFeatures", "watermark"), "exactly one of text or image is sent"}}
	}
	return nil
}}

var ruleSeedImage = rule{"seed_image_required", func(sent, _ map[string]any) []hit {
	if (has(sent, "strength") || has(sent, "inputs", "maskImage")) && !has(sent, "inputs", "seedImage") {
		return []hit{{body("inputs", "seedImage"), "inputs.seedImage is required when strength or inputs.maskImage is sent"}}
	}
	return nil
}}

var ruleOutpaint = rule{"outpaint_side", func(sent, _ map[string]any) []hit {
	o, ok := objAt(sent, "outpaint")
	if !ok {
		return nil
	}
	for _, s := range []string{"top", "bottom", "left", "right"} {
		if has(o, s) {
			return nil
		}
	}
	return []hit{{body("outpaint"), "outpaint has at least one of top, bottom, left, right"}}
}}

var rulePulid = rule{"pulid_fields", func(sent, _ map[string]any) []hit {
	o, ok := objAt(sent, "pulid")
	if !ok {
		return nil
	}
	var hs []hit
	if !has(o, "images") {
		hs = append(hs, hit{body("pulid", "images"), "pulid.images is required when pulid is sent"})
	}
	if has(o, "CFGstartStep") && has(o, "CFGstartStepPercentage") {
		hs = append(hs, hit{body("pulid", "CFGstartStepPercentage"), "CFGstartStep and CFGstartStepPercentage are not sent together"})
	}
	return hs
}}

var ruleLayerDiffuse = rule{"layer_diffuse_png", func(sent, filled map[string]any) []hit {
	if isTrue(sent, "advancedFeatures", "layerDiffuse") && strAt(filled, "outputFormat") != "PNG" {
		return []hit{{body("outputFormat"), "advancedFeatures.layerDiffuse needs outputFormat PNG"}}
	}
	return nil
}}

// MP3SampleRates and OGGSampleRates are M5's sample-rate lists (OGG is Ogg Opus, DESIGN 8).
var (
	MP3SampleRates = []int64{8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000}
	OGGSampleRates = []int64{8000, 12000, 16000, 24000, 48000}
)

// mp3Bitrate gives the kbps bounds of an MP3 sample rate.
func mp3Bitrate(rate int64) (lo, hi int64) {
	switch rate {
	case 16000, 22050, 24000:
		return 8, 160
	case 32000, 44100, 48000:
		return 32, 320
	default: // 8000, 11025, 12000
		return 8, 64
	}
}

// oggBitrate gives the kbps bounds of an Opus sample rate and channel count.
func oggBitrate(rate, channels int64) (lo, hi int64) {
	mono := map[int64][2]int64{8000: {8, 40}, 12000: {16, 48}, 16000: {16, 96}, 24000: {16, 80}, 48000: {32, 224}}
	stereo := map[int64][2]int64{8000: {16, 80}, 12000: {16, 96}, 16000: {24, 192}, 24000: {32, 160}, 48000: {48, 256}}
	b := stereo[rate]
	if channels == 1 {
		b = mono[rate]
	}
	return b[0], b[1]
}

// DefaultSampleRate is the sample rate M5 uses for a format when none is sent (DESIGN 16).
func DefaultSampleRate(format string) int64 {
	if format == "OGG" {
		return 48000
	}
	return 44100
}

func musicUnpriced(sent map[string]any) string {
	if has(sent, "inputs", "audio") {
		return "inputs.audio has no price on this model"
	}
	return ""
}

var musicRules = []rule{
	{"audio_settings_format", func(sent, filled map[string]any) []hit {
		f := strAt(filled, "outputFormat")
		if (f == "WAV" || f == "FLAC") && has(sent, "audioSettings") {
			return []hit{{body("audioSettings"), "audioSettings is not sent when outputFormat is " + f}}
		}
		return nil
	}},
	{"audio_sample_rate", func(sent, filled map[string]any) []hit {
		f := strAt(filled, "outputFormat")
		rate, ok := intAt(sent, "audioSettings", "sampleRate")
		if !ok {
			return nil
		}
		switch {
		case f == "MP3" && !slices.Contains(MP3SampleRates, rate):
			return []hit{{body("audioSettings", "sampleRate"), fmt.Sprintf("MP3 sampleRate is one of %v", MP3SampleRates)}}
		case f == "OGG" && !slices.Contains(OGGSampleRates, rate):
			return []hit{{body("audioSettings", "sampleRate"), fmt.Sprintf("OGG sampleRate is one of %v", OGGSampleRates)}}
		}
		return nil
	}},
	{"audio_bitrate", func(sent, filled map[string]any) []hit {
		f := strAt(filled, "outputFormat")
		br, ok := intAt(sent, "audioSettings", "bitrate")
		if !ok || (f != "MP3" && f != "OGG") {
			return nil
		}
		rate, ok := intAt(sent, "audioSettings", "sampleRate")
		if !ok {
			rate = DefaultSampleRate(f)
		}
		var lo, hi int64
		if f == "MP3" {
			if !slices.Contains(MP3SampleRates, rate) {
				return nil // audio_sample_rate names it
			}
			lo, hi = mp3Bitrate(rate)
		} else {
			if !slices.Contains(OGGSampleRates, rate) {
				return nil
			}
			ch, ok := intAt(sent, "audioSettings", "channels")
			if !ok {
				ch = 2
			}
			lo, hi = oggBitrate(rate, ch)
		}
		if br < lo || br > hi {
			return []hit{{body("audioSettings", "bitrate"), fmt.Sprintf("%s bitrate at %d Hz is %d to %d kbps", f, rate, lo, hi)}}
		}
		return nil
	}},
	{"audio_duration_exclusive", func(sent, _ map[string]any) []hit {
		if has(sent, "inputs", "audio") && has(sent, "duration") {
			return []hit{{body("duration"), "duration is not sent with inputs.audio"}}
		}
		return nil
	}},
	{"audio_required", func(sent, _ map[string]any) []hit {
		if has(sent, "inputs", "audio") {
			return nil
		}
		var hs []hit
		for _, p := range [][]string{{"strength"}, {"settings", "repaintingStart"}, {"settings", "repaintingEnd"}} {
			if has(sent, p...) {
				hs = append(hs, hit{body("inputs", "audio"), "inputs.audio is required when " + joinDot(p) + " is sent"})
			}
		}
		return hs
	}},
}

func joinDot(p []string) string {
	s := p[0]
	for _, x := range p[1:] {
		s += "." + x
	}
	return s
}
