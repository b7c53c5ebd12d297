package builtin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"
	"testing"

	"github.com/go-audio/wav"
	"github.com/mewkiz/flac"
	"github.com/thesyncim/gopus"
	"github.com/thesyncim/gopus/container/ogg"

	"github.com/modelexec/modelexec/internal/runners"
)

type musicFile struct {
	contentType string
	data        []byte
}

type musicOutputs struct {
	mu    sync.Mutex
	files map[string]musicFile
}

func (o *musicOutputs) Put(_ context.Context, name, ct string, data []byte) (string, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.files == nil {
		o.files = map[string]musicFile{}
	}
	key := "outputs/test/" + name
	o.files[key] = musicFile{ct, append([]byte(nil), data...)}
	return key, nil
}

type musicReporter struct {
	progress []float64
	logs     []string // "level: message"
	cancel   func(fraction float64)
}

func (r *musicReporter) Log(level, msg string) { r.logs = append(r.logs, level+": "+msg) }
func (r *musicReporter) Progress(f float64) {
	r.progress = append(r.progress, f)
	if r.cancel != nil {
		r.cancel(f)
	}
}

func runMusic(t *testing.T, ctx context.Context, input map[string]any, rep *musicReporter) (runners.Result, *musicOutputs, error) {
	t.Helper()
	raw, _ := json.Marshal(input)
	out := &musicOutputs{}
	if rep == nil {
		rep = &musicReporter{}
	}
	rn, err := Music(Options{}).For(SlugMusicTurbo)
	if err != nil {
		t.Fatal(err)
	}
	res, err := rn.Run(ctx, runners.Job{ID: "music_t", Slug: SlugMusicTurbo, Input: raw}, runners.Env{Outputs: out, Report: rep})
	return res, out, err
}

func audioFile(t *testing.T, res runners.Result, out *musicOutputs) (map[string]any, musicFile) {
	t.Helper()
	a, ok := res.Document["audio"].(map[string]any)
	if !ok {
		t.Fatalf("document has no audio: %v", res.Document)
	}
	f, ok := out.files[a["storage_key"].(string)]
	if !ok {
		t.Fatalf("no stored file %v", a["storage_key"])
	}
	if f.contentType != a["content_type"] {
		t.Fatalf("content type %s vs %v", f.contentType, a["content_type"])
	}
	return a, f
}

func rms(x []float64) float64 {
	var s float64
	for _, v := range x {
		s += v * v
	}
	return math.Sqrt(s / float64(max(1, len(x))))
}

// decodeWAV returns sample rate, channels and samples (normalised) of a WAV file.
func decodeWAV(t *testing.T, data []byte) (int, int, []float64) {
	d := wav.NewDecoder(bytes.NewReader(data))
	buf, err := d.FullPCMBuffer()
	if err != nil {
		t.Fatal(err)
	}
	if d.BitDepth != 16 || d.WavAudioFormat != 1 {
		t.Fatalf("wav: %d bits, format %d", d.BitDepth, d.WavAudioFormat)
	}
	s := make([]float64, len(buf.Data))
	for i, v := range buf.Data {
		s[i] = float64(v) / 32768
	}
	return int(d.SampleRate), int(d.NumChans), s
}

func decodeFLAC(t *testing.T, data []byte) (int, int, []float64) {
	st, err := flac.New(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	var s []float64
	for {
		f, err := st.ParseNext()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < int(f.BlockSize); i++ {
			for _, sf := range f.Subframes {
				s = append(s, float64(sf.Samples[i])/32768)
			}
		}
	}
	if int(st.Info.NSamples)*int(st.Info.NChannels) != len(s) {
		t.Fatalf("flac: streaminfo says %d frames, decoded %d samples", st.Info.NSamples, len(s))
	}
	return int(st.Info.SampleRate), int(st.Info.NChannels), s
}

// decodeOggOpus decodes every packet with gopus and applies the pre-skip and the end trim
// of the last granule position (RFC 7845 §4.2, §4.5); it returns the input sample rate of
// OpusHead, channels and the playable samples at 48 kHz.
func decodeOggOpus(t *testing.T, data []byte) (int, int, []float64) {
	r, err := ogg.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	ch := int(r.Channels())
	dec, err := gopus.NewDecoder(gopus.DefaultDecoderConfig(48000, ch))
	if err != nil {
		t.Fatal(err)
	}
	pcm := make([]float32, 5760*ch)
	var s []float64
	var last uint64
	for {
		pkt, granule, err := r.ReadPacket()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		last = granule
		n, err := dec.Decode(pkt, pcm)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range pcm[:n*ch] {
			s = append(s, float64(v))
		}
	}
	pre := int(r.PreSkip())
	playable := int(last) - pre
	if playable < 0 || (pre+playable)*ch > len(s) {
		t.Fatalf("opus: granule %d, pre-skip %d, decoded %d frames", last, pre, len(s)/ch)
	}
	return int(r.SampleRate()), ch, s[pre*ch : (pre+playable)*ch]
}

// mp3Frames walks MPEG audio frame headers; it returns the frame count, sample rate,
// channels, bitrate (kbps) and samples per frame, failing on a broken chain.
func mp3Frames(t *testing.T, data []byte) (frames, rate, channels, kbps, spp int) {
	rates := map[int][3]int{3: {44100, 48000, 32000}, 2: {22050, 24000, 16000}, 0: {11025, 12000, 8000}}
	brV1 := []int{0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320}
	brV2 := []int{0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160}
	for off := 0; off < len(data); {
		if off+4 > len(data) || data[off] != 0xFF || data[off+1]&0xE0 != 0xE0 {
			t.Fatalf("mp3: no frame sync at %d of %d", off, len(data))
		}
		ver := int(data[off+1]>>3) & 3 // 3 = MPEG-1, 2 = MPEG-2, 0 = MPEG-2.5
		layer := int(data[off+1]>>1) & 3
		if layer != 1 {
			t.Fatalf("mp3: layer bits %d, want Layer III", layer)
		}
		bi := int(data[off+2] >> 4)
		si := int(data[off+2]>>2) & 3
		pad := int(data[off+2]>>1) & 1
		mode := int(data[off+3] >> 6)
		r := rates[ver][si]
		var br, size, n int
		if ver == 3 {
			br, n = brV1[bi], 1152
			size = 144*br*1000/r + pad
		} else {
			br, n = brV2[bi], 576
			size = 72*br*1000/r + pad
		}
		c := 2
		if mode == 3 {
			c = 1
		}
		if frames == 0 {
			rate, channels, kbps, spp = r, c, br, n
		} else if r != rate || c != channels || br != kbps {
			t.Fatalf("mp3: frame %d changes format", frames)
		}
		frames++
		off += size
	}
	return
}

// TestINM5_MusicFormats decodes each of the four formats back and checks duration,
// channels and sample rate (issue 5 "Done when"). Proves IN-M5-03 (duration honoured),
// IN-M5-13 (the four formats), IN-M5-14 (channels, sampleRate, bitrate), IN-M5-16/18 (the
// sample rates of MP3 and OGG), IN-M5-22 (OGG is Ogg Opus).
func TestINM5_MusicFormats(t *testing.T) {
	const dur = 2.0
	cases := []struct {
		format   string
		audio    map[string]any
		rate, ch int
		kbps     int
		ct       string
	}{
		{"WAV", nil, 44100, 2, 0, "audio/wav"},
		{"FLAC", nil, 44100, 2, 0, "audio/flac"},
		{"MP3", nil, 44100, 2, 128, "audio/mpeg"},
		{"MP3", map[string]any{"channels": 1, "sampleRate": 22050, "bitrate": 64}, 22050, 1, 64, "audio/mpeg"},
		{"MP3", map[string]any{"channels": 2, "sampleRate": 8000, "bitrate": 30}, 8000, 2, 24, "audio/mpeg"},
		{"MP3", map[string]any{"channels": 2, "sampleRate": 48000, "bitrate": 320}, 48000, 2, 320, "audio/mpeg"},
		{"OGG", nil, 48000, 2, 128, "audio/ogg"},
		{"OGG", map[string]any{"channels": 1, "sampleRate": 16000, "bitrate": 32}, 16000, 1, 32, "audio/ogg"},
		{"OGG", map[string]any{"channels": 2, "sampleRate": 24000, "bitrate": 96}, 24000, 2, 96, "audio/ogg"},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s_%d_%d", c.format, c.rate, c.ch), func(t *testing.T) {
			in := map[string]any{"positivePrompt": "an upbeat synth tune", "duration": dur, "seed": 7, "steps": 4, "outputFormat": c.format}
			if c.audio != nil {
				in["audioSettings"] = c.audio
			}
			res, out, err := runMusic(t, context.Background(), in, nil)
			if err != nil {
				t.Fatal(err)
			}
			a, f := audioFile(t, res, out)
			if f.contentType != c.ct || a["sample_rate"] != c.rate || a["channels"] != c.ch || a["duration"] != dur {
				t.Fatalf("document %v", a)
			}
			if c.kbps != 0 && a["bitrate"] != c.kbps {
				t.Fatalf("bitrate %v want %d", a["bitrate"], c.kbps)
			}
			if res.Done != 1 || res.Document["seed"] != int64(7) {
				t.Fatalf("done %v seed %v", res.Done, res.Document["seed"])
			}
			var rate, ch int
			var samples []float64
			var seconds float64
			switch c.format {
			case "WAV":
				rate, ch, samples = decodeWAV(t, f.data)
				seconds = float64(len(samples)/ch) / float64(rate)
			case "FLAC":
				rate, ch, samples = decodeFLAC(t, f.data)
				seconds = float64(len(samples)/ch) / float64(rate)
			case "OGG":
				rate, ch, samples = decodeOggOpus(t, f.data)
				seconds = float64(len(samples)/ch) / 48000
			case "MP3":
				var frames, kbps, spp int
				frames, rate, ch, kbps, spp = mp3Frames(t, f.data)
				if kbps != c.kbps {
					t.Fatalf("mp3 frames at %d kbps", kbps)
				}
				seconds = float64(frames*spp) / float64(rate)
				// Whole frames: at most one frame of padding past the asked duration.
				if seconds < dur || seconds > dur+float64(spp)/float64(rate) {
					t.Fatalf("mp3: %d frames = %.4fs", frames, seconds)
				}
				seconds = dur
			}
			if rate != c.rate || ch != c.ch {
				t.Fatalf("decoded %d Hz %d ch, want %d Hz %d ch", rate, ch, c.rate, c.ch)
			}
			if math.Abs(seconds-dur) > 1e-9 {
				t.Fatalf("decoded %.6fs, want %.1fs", seconds, dur)
			}
			if samples != nil {
				if l := rms(samples); l < 0.02 || l > 0.9 {
					t.Fatalf("rms %.4f: silent or clipped", l)
				}
			}
		})
	}
}

// TestINM5_MusicDeterministic: the same seed gives the same bytes; another seed or
// prompt another tune. (IN-M5-04 seed; DESIGN "deterministic for a given seed")
func TestINM5_MusicDeterministic(t *testing.T) {
	in := map[string]any{"positivePrompt": "calm piano", "duration": 1.0, "seed": 11, "outputFormat": "WAV"}
	bytesOf := func(in map[string]any) []byte {
		res, out, err := runMusic(t, context.Background(), in, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, f := audioFile(t, res, out)
		return f.data
	}
	a, b := bytesOf(in), bytesOf(in)
	if !bytes.Equal(a, b) {
		t.Fatal("same seed, different audio")
	}
	in2 := map[string]any{"positivePrompt": "calm piano", "duration": 1.0, "seed": 12, "outputFormat": "WAV"}
	if bytes.Equal(a, bytesOf(in2)) {
		t.Fatal("different seed, same audio")
	}
	// Slicing into steps does not change the samples.
	in3 := map[string]any{"positivePrompt": "calm piano", "duration": 1.0, "seed": 11, "steps": 7, "outputFormat": "WAV"}
	if !bytes.Equal(a, bytesOf(in3)) {
		t.Fatal("steps changed the audio")
	}
	// OGG is deterministic too (fixed serial number).
	og := map[string]any{"positivePrompt": "calm piano", "duration": 1.0, "seed": 11, "outputFormat": "OGG"}
	if !bytes.Equal(bytesOf(og), bytesOf(og)) {
		t.Fatal("ogg not deterministic")
	}
}

// TestINM5_MusicSettings: bpm, keyScale and timeSignature are honoured and reported;
// the beat grid shows in the audio's onsets. Proves IN-M5-07, IN-M5-08, IN-M5-11.
func TestINM5_MusicSettings(t *testing.T) {
	in := map[string]any{"positivePrompt": "drum groove", "duration": 4.0, "seed": 3, "outputFormat": "WAV",
		"settings": map[string]any{"bpm": 120, "keyScale": "F# minor", "timeSignature": 3}}
	res, out, err := runMusic(t, context.Background(), in, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Document["bpm"] != 120 || res.Document["key_scale"] != "F# minor" || res.Document["time_signature"] != 3 {
		t.Fatalf("document %v", res.Document)
	}
	_, f := audioFile(t, res, out)
	rate, ch, s := decodeWAV(t, f.data)
	// Energy in 10 ms windows: the kick at each bar start (every 3 beats of 0.5 s = 1.5 s)
	// stands out against the window just before it.
	win := rate / 100
	energy := func(at float64) float64 {
		i0 := int(at*float64(rate)) * ch
		return rms(s[max(0, i0) : i0+win*ch])
	}
	for _, bar := range []float64{1.5, 3.0} {
		if on, before := energy(bar), energy(bar-0.06); on < 1.5*before {
			t.Errorf("no onset at bar start %.1fs: %.3f vs %.3f", bar, on, before)
		}
	}
	for _, c := range []struct {
		key string
		ok  bool
	}{{"C major", true}, {"Bb dorian", true}, {"F♯ minor", true}, {"c minor", true}, {"H major", false}, {"C", false}, {"C# blues", false}, {"Cmajor", false}} {
		_, _, _, ok := parseKeyScale(c.key)
		if ok != c.ok {
			t.Errorf("parseKeyScale(%q) ok=%v", c.key, ok)
		}
	}
	_, _, err = runMusic(t, context.Background(), map[string]any{"positivePrompt": "x", "duration": 1.0, "settings": map[string]any{"keyScale": "H major"}}, nil)
	var ref *runners.Refusal
	if !errors.As(err, &ref) || ref.Detail[0].Loc[2] != "keyScale" {
		t.Fatalf("bad keyScale: %v", err)
	}
}

// TestINM5_MusicCancel: cancel stops between steps and reports the fraction done.
// Proves the cancel contract of runners.Runner for M5 (DESIGN decision 29).
func TestINM5_MusicCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	rep := &musicReporter{cancel: func(f float64) {
		if f >= 0.3 {
			cancel()
		}
	}}
	res, out, err := runMusic(t, ctx, map[string]any{"positivePrompt": "long tune", "duration": 2.0, "steps": 10, "outputFormat": "FLAC"}, rep)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
	if res.Done != 0.3 || len(out.files) != 0 {
		t.Fatalf("done %v, files %d", res.Done, len(out.files))
	}
	if len(rep.progress) != 3 || rep.progress[0] != 0.1 {
		t.Fatalf("progress %v", rep.progress)
	}
}

// TestINM5_02_AudioInputRefused: a request sending inputs.audio is refused by the runner
// too (the catalogue refuses it before any charge). IN-M5-02.
func TestINM5_02_AudioInputRefused(t *testing.T) {
	_, _, err := runMusic(t, context.Background(), map[string]any{"positivePrompt": "x", "inputs": map[string]any{"audio": "https://example.com/a.mp3"}}, nil)
	var ref *runners.Refusal
	if !errors.As(err, &ref) {
		t.Fatalf("err %v", err)
	}
}

func TestMP3BitrateChoice(t *testing.T) {
	for _, c := range []struct{ rate, asked, want int }{
		{44100, 0, 128}, {44100, 320, 320}, {44100, 100, 96}, {44100, 8, 32},
		{22050, 0, 64}, {22050, 160, 160}, {16000, 8, 8},
		{8000, 0, 32}, {11025, 64, 64}, {12000, 100, 64},
	} {
		if got, _ := mp3Bitrate(c.rate, c.asked); got != c.want {
			t.Errorf("mp3Bitrate(%d, %d) = %d, want %d", c.rate, c.asked, got, c.want)
		}
	}
}
