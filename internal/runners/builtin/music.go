package builtin

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/modelexec/modelexec/internal/runners"
)

// SlugMusicTurbo is the slug of M5, music generation.
const SlugMusicTurbo = "music-turbo"

// Music returns the reference runner of the music model (M5, music-turbo).
//
// # Music runner (music-turbo, M5)
//
// A seed-deterministic synthesiser, not the named model. From the seed and a hash of the
// prompt it picks a chord progression in settings.keyScale ("C major", "F# minor", "Bb
// dorian"; random key when omitted) and writes bars of settings.timeSignature beats (2, 3, 4
// or 6; 4 when omitted) at settings.bpm (30 to 300; from the prompt's mood and the seed when
// omitted) for exactly `duration` seconds (default 60): a pad playing the chord, a bass on the
// root, a melody walking the scale, and kick, snare and hi-hat on the beat grid (accent on
// each bar's first beat). The render is cut into `steps` equal time slices (default 10); each
// slice is a step, reported with Reporter.Progress and a cancel point, so a cancelled run
// reports Done = slices rendered / steps. The same input gives the same samples whatever the
// slicing.
//
// Output (outputFormat, default MP3), at audioSettings.channels (1 or 2, default 2) and
// audioSettings.sampleRate (defaults: MP3 44100, OGG 48000, WAV and FLAC 44100). A value the
// encoder cannot produce reaches the runner only while its cross-field rule (spec 01 "Input of
// M5" rules 1 to 3) is warned, not enforced (spec 02 "Versioning" #3): such a request was
// accepted and charged, so it is served, never refused for that reason. The runner takes the
// nearest value its encoder produces (an MP3 or OGG sampleRate off the format's list: the
// nearest rate on it, the higher of two equally near; a WAV or FLAC sampleRate outside 8000 to
// 192000 Hz: the nearest bound, which also bounds the PCM it holds; a bitrate: as below),
// logs the change at "warn", and the result reports the values the file has.
//   - MP3: audio/mpeg, CBR at audioSettings.bitrate rounded down to a bitrate MPEG audio
//     defines for the sample rate (the lowest when asked is below all; defaults 128 kbps at
//     32-48 kHz, 64 at 16-24 kHz, 32 at 8-12 kHz), encoded by github.com/braheezy/shine-mp3
//     (a Go port of the shine encoder).
//     shine-mp3 is LGPL-2.0: it is linked unmodified from its own module, so a distributor
//     of the binary must let users relink against a modified copy (ship the source of this
//     module or the object files); the rest of modelexec keeps its own licence.
//   - WAV: audio/wav, 16-bit PCM (our own RIFF writer).
//   - FLAC: audio/flac, 16-bit, by github.com/mewkiz/flac's encoder.
//   - OGG: audio/ogg, Ogg Opus (DESIGN decision 8) by github.com/thesyncim/gopus at
//     audioSettings.bitrate (default 128 kbps stereo, 64 mono) held to the 6 to 510 kbps an
//     Opus stream of 20 ms packets carries at either channel count, 20 ms frames, in an Ogg
//     stream written per RFC 7845: OpusHead (pre-skip = encoder lookahead) and OpusTags
//     header pages, then audio pages whose last granule position trims the stream to the
//     exact duration.
//
// Result document:
//
//	{"audio": {"storage_key": "...", "content_type": "audio/mpeg", "file_size": 960417,
//	           "duration": 60, "sample_rate": 44100, "channels": 2, "bitrate": 128,
//	           "format": "MP3"},
//	 "seed": 42, "prompt": "...", "bpm": 120, "key_scale": "C major", "time_signature": 4,
//	 "timings": {"inference": 0.8}}
//
// Metrics: "inference_seconds", "audio_seconds", "encode_seconds". inputs.audio (refused
// before any charge by the catalogue, DESIGN decision 16) is refused here too, as
// band_not_priced's runner-side twin invalid_input.
func Music(opts Options) runners.Registry {
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	return runners.Registry{SlugMusicTurbo: &musicRunner{now: now}}
}

type musicInput struct {
	PositivePrompt string  `json:"positivePrompt"`
	Duration       float64 `json:"duration"`
	Seed           int64   `json:"seed"`
	Steps          int     `json:"steps"`
	Inputs         struct {
		Audio string `json:"audio"`
	} `json:"inputs"`
	Settings struct {
		BPM           int    `json:"bpm"`
		KeyScale      string `json:"keyScale"`
		TimeSignature int    `json:"timeSignature"`
		Lyrics        string `json:"lyrics"`
	} `json:"settings"`
	OutputFormat  string `json:"outputFormat"`
	AudioSettings struct {
		Bitrate    int `json:"bitrate"`
		Channels   int `json:"channels"`
		SampleRate int `json:"sampleRate"`
	} `json:"audioSettings"`
}

type musicRunner struct {
	now func() time.Time
}

// audioSpec is the resolved shape of the output file.
type audioSpec struct {
	format     string // MP3, WAV, FLAC, OGG
	sampleRate int
	channels   int
	bitrate    int // kbps asked (0: format default)
}

func musicRefusal(msg string, loc ...string) *runners.Refusal {
	return &runners.Refusal{Code: "invalid_input", Detail: []runners.Violation{{
		Loc: append([]string{"body"}, loc...), Msg: msg, Type: "value_error",
	}}}
}

func (m *musicRunner) Run(ctx context.Context, job runners.Job, env runners.Env) (runners.Result, error) {
	start := m.now()
	rep := reporter(env)
	var in musicInput
	if err := decodeInput(job, &in); err != nil {
		return runners.Result{}, err
	}
	if in.Inputs.Audio != "" {
		return runners.Result{}, musicRefusal("inputs.audio has no price on this model", "inputs", "audio")
	}
	spec, notes, err := resolveAudioSpec(in)
	if err != nil {
		return runners.Result{}, err
	}
	for _, n := range notes {
		rep.Log("warn", "music-turbo: "+n)
	}
	duration := in.Duration
	if duration == 0 {
		duration = 60
	}
	if duration < 0 || duration > 600 {
		return runners.Result{}, musicRefusal("duration must be between 0 and 600 seconds", "duration")
	}
	steps := in.Steps
	if steps <= 0 {
		steps = 10
	}
	song, err := compose(in, duration)
	if err != nil {
		return runners.Result{}, err
	}
	rep.Log("info", fmt.Sprintf("music-turbo: %.2fs %s, %d Hz, %d ch, %d bpm, %s, %d/4, %d steps, seed %d",
		duration, spec.format, spec.sampleRate, spec.channels, song.bpm, song.keyName, song.beatsPerBar, steps, in.Seed))

	frames := int(math.Round(duration * float64(spec.sampleRate)))
	pcm := make([]float32, frames*spec.channels)
	metrics := func(encode float64) map[string]float64 {
		return map[string]float64{"inference_seconds": m.now().Sub(start).Seconds(), "audio_seconds": duration, "encode_seconds": encode}
	}
	for k := 0; k < steps; k++ {
		if err := ctx.Err(); err != nil {
			rep.Log("warn", fmt.Sprintf("cancelled after %d of %d steps", k, steps))
			return runners.Result{Metrics: metrics(0), Done: float64(k) / float64(steps)}, err
		}
		a, b := frames*k/steps, frames*(k+1)/steps
		song.render(pcm, spec.sampleRate, spec.channels, a, b)
		rep.Progress(float64(k+1) / float64(steps))
	}
	encStart := m.now()
	enc, err := encodeAudio(ctx, pcm, frames, spec)
	if err != nil {
		if ctx.Err() != nil {
			return runners.Result{Metrics: metrics(0), Done: 1}, ctx.Err()
		}
		return runners.Result{}, runners.Internal("Encoding the audio", err)
	}
	encodeSeconds := m.now().Sub(encStart).Seconds()
	if env.Outputs == nil {
		return runners.Result{}, runners.Internal("Storing the output", errNoOutputStore)
	}
	key, err := env.Outputs.Put(ctx, "audio."+enc.ext, enc.contentType, enc.data)
	if err != nil {
		if ctx.Err() != nil {
			return runners.Result{Metrics: metrics(encodeSeconds), Done: 1}, ctx.Err()
		}
		return runners.Result{}, runners.OutputNotStored(err)
	}
	if spec.bitrate != 0 && enc.bitrate != spec.bitrate && (spec.format == "MP3" || spec.format == "OGG") {
		rep.Log("warn", fmt.Sprintf("music-turbo: audioSettings.bitrate %d kbps is not produced for %s at %d Hz, %d ch; served at %d kbps",
			spec.bitrate, spec.format, spec.sampleRate, spec.channels, enc.bitrate))
	}
	met := metrics(encodeSeconds)
	rep.Log("info", fmt.Sprintf("stored %s (%d bytes, %d kbps) in %.3fs", enc.contentType, len(enc.data), enc.bitrate, met["inference_seconds"]))
	doc := map[string]any{
		"audio": map[string]any{
			"storage_key":  key,
			"content_type": enc.contentType,
			"file_size":    len(enc.data),
			"duration":     duration,
			"sample_rate":  spec.sampleRate,
			"channels":     spec.channels,
			"bitrate":      enc.bitrate,
			"format":       spec.format,
		},
		"seed":           in.Seed,
		"prompt":         in.PositivePrompt,
		"bpm":            song.bpm,
		"key_scale":      song.keyName,
		"time_signature": song.beatsPerBar,
		"timings":        map[string]float64{"inference": met["inference_seconds"]},
	}
	return runners.Result{
		Document: doc,
		Files:    []runners.File{{Key: key, ContentType: enc.contentType, Bytes: int64(len(enc.data))}},
		Metrics:  met,
		Done:     1,
	}, nil
}

// Sample rates each encoder produces: the lists of spec 01 "Input of M5" rules 2 and 3 for
// MP3 and OGG, a range for WAV and FLAC (8 kHz to 192 kHz; it also bounds the PCM a run holds).
var (
	mp3SampleRates = []int{8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000}
	oggSampleRates = []int{8000, 12000, 16000, 24000, 48000}
)

const (
	pcmMinSampleRate = 8000
	pcmMaxSampleRate = 192000
)

// resolveAudioSpec reads the output's shape from the input. A sample rate the format's
// encoder does not produce is served at the nearest one it does (see Music); notes says what
// was changed, for the job's log.
func resolveAudioSpec(in musicInput) (s audioSpec, notes []string, err error) {
	s = audioSpec{format: strings.ToUpper(in.OutputFormat), channels: in.AudioSettings.Channels,
		sampleRate: in.AudioSettings.SampleRate, bitrate: in.AudioSettings.Bitrate}
	if s.format == "" {
		s.format = "MP3"
	}
	if s.channels == 0 {
		s.channels = 2
	}
	if s.channels != 1 && s.channels != 2 {
		return s, nil, musicRefusal("channels must be 1 or 2", "audioSettings", "channels")
	}
	asked := s.sampleRate
	switch s.format {
	case "MP3":
		if s.sampleRate == 0 {
			s.sampleRate = 44100
		}
		s.sampleRate = nearestRate(mp3SampleRates, s.sampleRate)
	case "OGG":
		if s.sampleRate == 0 {
			s.sampleRate = 48000
		}
		s.sampleRate = nearestRate(oggSampleRates, s.sampleRate)
	case "WAV", "FLAC":
		if s.sampleRate == 0 {
			s.sampleRate = 44100
		}
		s.sampleRate = max(pcmMinSampleRate, min(pcmMaxSampleRate, s.sampleRate))
	default:
		return s, nil, musicRefusal("outputFormat must be MP3, WAV, FLAC or OGG", "outputFormat")
	}
	if asked != 0 && asked != s.sampleRate {
		notes = append(notes, fmt.Sprintf("audioSettings.sampleRate %d Hz is not produced for %s; served at %d Hz", asked, s.format, s.sampleRate))
	}
	if s.bitrate < 0 {
		return s, nil, musicRefusal("bitrate must be 8 kbps or more", "audioSettings", "bitrate")
	}
	return s, notes, nil
}

// nearestRate is the rate of rates (ascending) nearest to asked, the higher of two equally near.
func nearestRate(rates []int, asked int) int {
	best := rates[0]
	for _, r := range rates[1:] {
		if distance(r, asked) <= distance(best, asked) {
			best = r
		}
	}
	return best
}

func distance(a, b int) int {
	if a < b {
		return b - a
	}
	return a - b
}

// ---- composition ----

// note is one sounding event.
type note struct {
	start, dur float64 // seconds
	freq       float64 // Hz; 0 for drums
	voice      voice
	amp        float64
	pan        float64 // -1 left … 1 right
}

type voice int

const (
	voicePad voice = iota
	voiceBass
	voiceLead
	voiceKick
	voiceSnare
	voiceHat
)

type song struct {
	bpm         int
	beatsPerBar int
	keyName     string
	notes       []note
	noiseSeed   uint64
	duration    float64
}

var noteNames = map[byte]int{'C': 0, 'D': 2, 'E': 4, 'F': 5, 'G': 7, 'A': 9, 'B': 11}

var modes = map[string][]int{
	"major":      {0, 2, 4, 5, 7, 9, 11},
	"ionian":     {0, 2, 4, 5, 7, 9, 11},
	"minor":      {0, 2, 3, 5, 7, 8, 10},
	"aeolian":    {0, 2, 3, 5, 7, 8, 10},
	"dorian":     {0, 2, 3, 5, 7, 9, 10},
	"phrygian":   {0, 1, 3, 5, 7, 8, 10},
	"lydian":     {0, 2, 4, 6, 7, 9, 11},
	"mixolydian": {0, 2, 4, 5, 7, 9, 10},
	"locrian":    {0, 1, 3, 5, 6, 8, 10},
}

// parseKeyScale reads "C major", "F# minor", "Bb dorian" (also ♯/♭): the root pitch class
// and the scale's semitone steps.
func parseKeyScale(s string) (root int, scale []int, name string, ok bool) {
	s = strings.TrimSpace(strings.NewReplacer("♯", "#", "♭", "b").Replace(s))
	if s == "" {
		return 0, nil, "", false
	}
	base, found := noteNames[strings.ToUpper(s[:1])[0]]
	if !found {
		return 0, nil, "", false
	}
	rest := s[1:]
	acc := ""
	if strings.HasPrefix(rest, "#") || strings.HasPrefix(rest, "b") {
		acc = rest[:1]
		if acc == "#" {
			base++
		} else {
			base--
		}
		rest = rest[1:]
	}
	if !strings.HasPrefix(rest, " ") {
		return 0, nil, "", false
	}
	mode := strings.ToLower(strings.TrimSpace(rest))
	sc, found := modes[mode]
	if !found {
		return 0, nil, "", false
	}
	return (base + 12) % 12, sc, strings.ToUpper(s[:1]) + acc + " " + mode, true
}

var pitchNames = []string{"C", "C#", "D", "D#", "E", "F", "F#", "G", "G#", "A", "A#", "B"}

func compose(in musicInput, duration float64) (*song, error) {
	h := fnv.New64a()
	_, _ = h.Write([]byte(in.PositivePrompt))
	ph := h.Sum64()
	rng := rand.New(rand.NewPCG(uint64(in.Seed), ph))
	prompt := strings.ToLower(in.PositivePrompt)

	s := &song{duration: duration, noiseSeed: uint64(in.Seed)*0x9E3779B97F4A7C15 ^ ph}
	var root int
	var scale []int
	if in.Settings.KeyScale != "" {
		r, sc, name, ok := parseKeyScale(in.Settings.KeyScale)
		if !ok {
			return nil, musicRefusal("keyScale must be a note, an optional accidental, a space and a mode, e.g. \"F# minor\"", "settings", "keyScale")
		}
		root, scale, s.keyName = r, sc, name
	} else {
		root = rng.IntN(12)
		mode := "major"
		if rng.IntN(2) == 0 || containsAny(prompt, "sad", "dark", "melanchol", "night", "moody") {
			mode = "minor"
		}
		scale, s.keyName = modes[mode], pitchNames[root]+" "+mode
	}
	s.bpm = in.Settings.BPM
	if s.bpm == 0 {
		lo, hi := 84, 128
		switch {
		case containsAny(prompt, "ambient", "slow", "ballad", "calm", "lofi", "lo-fi", "chill"):
			lo, hi = 60, 90
		case containsAny(prompt, "dance", "techno", "house", "fast", "energetic", "drum"):
			lo, hi = 120, 150
		}
		s.bpm = lo + rng.IntN(hi-lo+1)
	}
	if s.bpm < 1 {
		return nil, musicRefusal("bpm must be 30 to 300", "settings", "bpm")
	}
	s.beatsPerBar = in.Settings.TimeSignature
	if s.beatsPerBar == 0 {
		s.beatsPerBar = 4
	}
	switch s.beatsPerBar {
	case 2, 3, 4, 6:
	default:
		return nil, musicRefusal("timeSignature must be 2, 3, 4 or 6", "settings", "timeSignature")
	}

	progressions := [][]int{{0, 4, 5, 3}, {0, 5, 3, 4}, {0, 3, 4, 4}, {5, 3, 0, 4}, {0, 6, 5, 4}, {0, 3, 0, 4}}
	prog := progressions[rng.IntN(len(progressions))]
	beat := 60 / float64(s.bpm)
	bar := beat * float64(s.beatsPerBar)
	deg := func(d, octave int) float64 { // scale degree d (may exceed 6) to Hz
		oct := d / 7
		if d < 0 {
			oct = (d - 6) / 7
		}
		semis := root + scale[((d%7)+7)%7] + 12*(oct+octave)
		return 261.6256 * math.Pow(2, float64(semis)/12) // C4 = 0
	}
	melodyDeg := 7 + rng.IntN(3)
	for b := 0; float64(b)*bar < duration; b++ {
		t0 := float64(b) * bar
		chord := prog[b%len(prog)]
		for i, d := range []int{chord, chord + 2, chord + 4} {
			s.notes = append(s.notes, note{start: t0, dur: bar, freq: deg(d, -1), voice: voicePad, amp: 0.10, pan: float64(i-1) * 0.5})
		}
		half := s.beatsPerBar / 2
		if half == 0 {
			half = 1
		}
		for _, bt := range []int{0, half} {
			s.notes = append(s.notes, note{start: t0 + float64(bt)*beat, dur: beat * 0.9 * float64(half), freq: deg(chord, -2), voice: voiceBass, amp: 0.28})
		}
		for i := 0; i < s.beatsPerBar*2; i++ { // eighth notes
			t := t0 + float64(i)*beat/2
			if i%2 == 1 && rng.IntN(3) == 0 {
				continue // rest
			}
			step := rng.IntN(5) - 2
			melodyDeg = max(5, min(12, melodyDeg+step))
			if i == 0 {
				melodyDeg = chord + 7 // land on the chord root each bar
			}
			s.notes = append(s.notes, note{start: t, dur: beat * 0.45, freq: deg(melodyDeg, 0), voice: voiceLead, amp: 0.16, pan: 0.3})
		}
		for i := 0; i < s.beatsPerBar; i++ {
			t := t0 + float64(i)*beat
			accent := 0.8
			if i == 0 {
				accent = 1
			}
			if i == 0 || (s.beatsPerBar == 4 && i == 2) || (s.beatsPerBar == 6 && i == 3) {
				s.notes = append(s.notes, note{start: t, dur: 0.25, voice: voiceKick, amp: 0.5 * accent})
			} else {
				s.notes = append(s.notes, note{start: t, dur: 0.18, voice: voiceSnare, amp: 0.22 * accent})
			}
			for j := 0; j < 2; j++ {
				s.notes = append(s.notes, note{start: t + float64(j)*beat/2, dur: 0.05, voice: voiceHat, amp: 0.06, pan: -0.4})
			}
		}
	}
	return s, nil
}

func containsAny(s string, words ...string) bool {
	for _, w := range words {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

// noise is deterministic white noise in [-1, 1) indexed by sample position.
func noise(seed, i uint64) float64 {
	x := seed ^ (i * 0x9E3779B97F4A7C15)
	x ^= x >> 30
	x *= 0xBF58476D1CE4E5B9
	x ^= x >> 27
	x *= 0x94D049BB133111EB
	x ^= x >> 31
	return float64(x>>11)/float64(1<<52) - 1
}

// render writes frames [a, b) of the song into pcm (interleaved, channels wide). The
// samples of a frame depend only on its index, so any slicing gives the same audio.
func (s *song) render(pcm []float32, rate, channels, a, b int) {
	if a >= b {
		return
	}
	sr := float64(rate)
	mix := make([]float64, (b-a)*2) // stereo scratch
	ta, tb := float64(a)/sr, float64(b)/sr
	for _, n := range s.notes {
		end := n.start + n.dur + release(n.voice)
		if end <= ta || n.start >= tb {
			continue
		}
		i0 := max(a, int(math.Ceil(n.start*sr)))
		i1 := min(b, int(math.Ceil(end*sr)))
		gl, gr := math.Sqrt((1-n.pan)/2), math.Sqrt((1+n.pan)/2)
		for i := i0; i < i1; i++ {
			t := float64(i)/sr - n.start
			v := n.amp * voiceSample(n, t, s.noiseSeed, uint64(i))
			mix[(i-a)*2] += v * gl
			mix[(i-a)*2+1] += v * gr
		}
	}
	total := int(math.Round(s.duration * sr))
	fade := int(0.02 * sr)
	for i := a; i < b; i++ {
		g := 1.0
		if i < fade {
			g = float64(i) / float64(fade)
		}
		if r := total - 1 - i; r < fade {
			g = math.Min(g, float64(max(r, 0))/float64(fade))
		}
		l, r := mix[(i-a)*2]*g, mix[(i-a)*2+1]*g
		if channels == 1 {
			pcm[i] = float32(math.Tanh((l + r) * 0.7))
		} else {
			pcm[i*2] = float32(math.Tanh(l))
			pcm[i*2+1] = float32(math.Tanh(r))
		}
	}
}

func release(v voice) float64 {
	switch v {
	case voicePad:
		return 0.3
	case voiceLead, voiceBass:
		return 0.08
	}
	return 0
}

func voiceSample(n note, t float64, seed, i uint64) float64 {
	env := func(attack, rel float64) float64 {
		e := 1.0
		if t < attack {
			e = t / attack
		}
		if t > n.dur {
			e *= math.Max(0, 1-(t-n.dur)/rel)
		}
		return e
	}
	ph := 2 * math.Pi * n.freq * t
	switch n.voice {
	case voicePad:
		return env(0.15, 0.3) * (math.Sin(ph) + 0.5*math.Sin(ph*1.003+0.5) + 0.25*math.Sin(2*ph))
	case voiceBass:
		return env(0.01, 0.08) * (math.Sin(ph) + 0.3*math.Sin(2*ph)) * math.Exp(-t*1.5)
	case voiceLead:
		return env(0.01, 0.08) * (math.Sin(ph) + 0.35*math.Sin(3*ph) + 0.15*math.Sin(5*ph)) * math.Exp(-t*3)
	case voiceKick:
		f := 50 + 90*math.Exp(-t*30)
		return math.Sin(2*math.Pi*f*t) * math.Exp(-t*12)
	case voiceSnare:
		return (0.7*noise(seed+1, i) + 0.3*math.Sin(2*math.Pi*190*t)) * math.Exp(-t*20)
	case voiceHat:
		return noise(seed+2, i) * math.Exp(-t*80)
	}
	return 0
}
