package builtin

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/thesyncim/gopus/container/ogg"

	"github.com/modelexec/modelexec/internal/catalog"
)

// opusPayloadKbps is the bitrate of the Opus packets of an Ogg Opus file (its Ogg framing and
// header packets left out) over seconds of audio.
func opusPayloadKbps(t *testing.T, data []byte, seconds float64) float64 {
	t.Helper()
	r, err := ogg.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for {
		pkt, _, err := r.ReadPacket()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		n += len(pkt)
	}
	return float64(n) * 8 / seconds / 1000
}

// TestINSHARED43_MusicWarnedRequestIsServed: a music request breaking one of M5's cross-field
// rules on the output (spec 01 "Input of M5" rules 1 to 3) before the enforcement date is
// accepted with a warning (spec 02 "Versioning" #3), so the runner serves it: it takes the
// nearest sample rate and bitrate its encoder produces instead of failing the charged job,
// logs the change, and the result reports what the file has (its header decoded back; for
// OGG, the Opus packets' bitrate). Proves IN-SHARED-43 for M5 and IN-M5-22 (the OGG bitrate
// reported is the encoder's).
func TestINSHARED43_MusicWarnedRequestIsServed(t *testing.T) {
	cat, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	m, ok := cat.Model(SlugMusicTurbo)
	if !ok {
		t.Fatal("no music-turbo in the catalogue")
	}
	warned := m.EnforcementDate().Add(-24 * time.Hour)
	const dur = 30.0
	cases := []struct {
		name, body string
		rule       string
		rate, ch   int
		kbps       int // 0: not checked (WAV, FLAC)
		log        string
	}{
		{"OGG_44100", `{"outputFormat":"OGG","audioSettings":{"sampleRate":44100}}`, "audio_sample_rate", 48000, 2, 128, "sampleRate 44100 Hz is not produced for OGG; served at 48000 Hz"},
		{"MP3_44000", `{"outputFormat":"MP3","audioSettings":{"sampleRate":44000}}`, "audio_sample_rate", 44100, 2, 128, "served at 44100 Hz"},
		{"MP3_9000_mono", `{"audioSettings":{"sampleRate":9000,"channels":1,"bitrate":32}}`, "audio_sample_rate", 8000, 1, 32, "served at 8000 Hz"},
		{"MP3_bitrate_1000", `{"audioSettings":{"bitrate":1000}}`, "audio_bitrate", 44100, 2, 320, "bitrate 1000 kbps is not produced for MP3 at 44100 Hz, 2 ch; served at 320 kbps"},
		{"WAV_1000000", `{"outputFormat":"WAV","audioSettings":{"sampleRate":1000000,"channels":1}}`, "audio_settings_format", 192000, 1, 0, "sampleRate 1000000 Hz is not produced for WAV; served at 192000 Hz"},
		{"FLAC_1000", `{"outputFormat":"FLAC","audioSettings":{"sampleRate":1000}}`, "audio_settings_format", 8000, 2, 0, "served at 8000 Hz"},
		{"OGG_bitrate_100000", `{"outputFormat":"OGG","audioSettings":{"bitrate":100000}}`, "audio_bitrate", 48000, 2, 510, "bitrate 100000 kbps is not produced for OGG at 48000 Hz, 2 ch; served at 510 kbps"},
		{"OGG_mono_bitrate_300", `{"outputFormat":"OGG","audioSettings":{"channels":1,"sampleRate":16000,"bitrate":300}}`, "audio_bitrate", 16000, 1, 300, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var sent map[string]any
			if err := json.Unmarshal([]byte(c.body), &sent); err != nil {
				t.Fatal(err)
			}
			sent["positivePrompt"], sent["duration"], sent["seed"], sent["steps"] = "calm piano", dur, 7, 1
			raw, _ := json.Marshal(sent)
			in, warns, err := m.Validate(raw, warned, nil)
			if err != nil || !slices.ContainsFunc(warns, func(w catalog.Warning) bool { return w.Rule == c.rule }) {
				t.Fatalf("before enforcement: warnings %v, err %v; want a warning of %s", warns, err, c.rule)
			}
			if _, _, err := m.Validate(raw, m.EnforcementDate(), nil); err == nil {
				t.Fatalf("from the enforcement date the request is still accepted")
			}
			var input map[string]any
			if err := json.Unmarshal(in.JSON, &input); err != nil {
				t.Fatal(err)
			}
			rep := &musicReporter{}
			res, out, err := runMusic(t, context.Background(), input, rep)
			if err != nil {
				t.Fatalf("the warned request failed in the runner: %v", err)
			}
			a, f := audioFile(t, res, out)
			if a["sample_rate"] != c.rate || a["channels"] != c.ch || (c.kbps != 0 && a["bitrate"] != c.kbps) {
				t.Fatalf("result %v, want %d Hz, %d ch, %d kbps", a, c.rate, c.ch, c.kbps)
			}
			if c.log != "" && !slices.ContainsFunc(rep.logs, func(l string) bool { return strings.HasPrefix(l, "warn: ") && strings.Contains(l, c.log) }) {
				t.Fatalf("no warn log %q in %q", c.log, rep.logs)
			}
			var rate, ch int
			switch input["outputFormat"] {
			case "WAV":
				rate, ch, _ = decodeWAV(t, f.data)
			case "FLAC":
				rate, ch, _ = decodeFLAC(t, f.data)
			case "MP3":
				var kbps int
				_, rate, ch, kbps, _ = mp3Frames(t, f.data)
				if kbps != c.kbps {
					t.Fatalf("the MP3 frames are at %d kbps, the result says %v", kbps, a["bitrate"])
				}
			case "OGG":
				rate, ch, _ = decodeOggOpus(t, f.data)
				// VBR: the packets land near the target, never far above it.
				if got := opusPayloadKbps(t, f.data, dur); got > float64(c.kbps)*1.03 || got < float64(c.kbps)*0.8 {
					t.Fatalf("the Opus packets carry %.1f kbps, the result says %v", got, a["bitrate"])
				}
			default:
				t.Fatalf("format %v", input["outputFormat"])
			}
			if rate != c.rate || ch != c.ch {
				t.Fatalf("the file is %d Hz, %d ch; the result says %v Hz, %v ch", rate, ch, a["sample_rate"], a["channels"])
			}
		})
	}
}

func TestNearestRate(t *testing.T) {
	for _, c := range []struct{ asked, want int }{
		{44100, 48000}, {36000, 48000}, {35999, 24000}, {9999, 8000}, {10000, 12000}, {1, 8000}, {1_000_000, 48000}, {-5, 8000},
	} {
		if got := nearestRate(oggSampleRates, c.asked); got != c.want {
			t.Errorf("nearestRate(OGG, %d) = %d, want %d", c.asked, got, c.want)
		}
	}
	if got := nearestRate(mp3SampleRates, 44000); got != 44100 {
		t.Errorf("nearestRate(MP3, 44000) = %d, want 44100", got)
	}
}
