package builtin

import (
	"context"
	"fmt"
	"testing"
)

// mp3Header is one MPEG audio frame header (ISO 11172-3 2.4.1.3, ISO 13818-3 2.4.2.3).
type mp3Header struct {
	version   int // header bits: 3 MPEG-1, 2 MPEG-2, 0 MPEG-2.5
	kbps      int
	rate      int
	padding   int
	channels  int
	size      int // bytes, header included
	samples   int // per channel
	sideBytes int // side information after the 4-byte header
}

// parseMP3Header reads the Layer III header at data[off:]; msg says why there is none.
func parseMP3Header(data []byte, off int) (h mp3Header, msg string) {
	if off+4 > len(data) {
		return h, fmt.Sprintf("%d bytes left, no room for a header", len(data)-off)
	}
	b := data[off : off+4]
	if b[0] != 0xFF || b[1]&0xE0 != 0xE0 {
		return h, fmt.Sprintf("no frame sync: % x", b)
	}
	h.version = int(b[1]>>3) & 3
	if h.version == 1 {
		return h, "reserved MPEG version"
	}
	if layer := int(b[1]>>1) & 3; layer != 1 {
		return h, fmt.Sprintf("layer bits %d, want 1 (Layer III)", layer)
	}
	if b[1]&1 == 0 {
		return h, "CRC present; the encoder writes none"
	}
	bi, si := int(b[2]>>4), int(b[2]>>2)&3
	if bi == 0 || bi == 15 || si == 3 {
		return h, fmt.Sprintf("bitrate index %d, sample rate index %d", bi, si)
	}
	h.padding = int(b[2]>>1) & 1
	h.channels = 2
	if b[3]>>6 == 3 {
		h.channels = 1
	}
	rates := map[int][3]int{3: {44100, 48000, 32000}, 2: {22050, 24000, 16000}, 0: {11025, 12000, 8000}}
	h.rate = rates[h.version][si]
	if h.version == 3 {
		h.kbps = []int{0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320}[bi]
		h.samples = 1152
		h.sideBytes = map[int]int{1: 17, 2: 32}[h.channels]
	} else {
		h.kbps = []int{0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160}[bi]
		h.samples = 576
		h.sideBytes = map[int]int{1: 9, 2: 17}[h.channels]
	}
	h.size = h.samples/8*h.kbps*1000/h.rate + h.padding
	return h, ""
}

// bitReader reads big-endian bit fields.
type bitReader struct {
	b   []byte
	pos int
}

func (r *bitReader) read(n int) int {
	v := 0
	for ; n > 0; n-- {
		v = v<<1 | int(r.b[r.pos/8]>>(7-r.pos%8))&1
		r.pos++
	}
	return v
}

// mp3MainData reads a frame's side information: main_data_begin and the part2_3_length of
// every granule and channel, the bits of main data it holds (ISO 11172-3 2.4.1.7,
// ISO 13818-3 2.4.1.7).
func mp3MainData(frame []byte, h mp3Header) (mainDataBegin, bits int) {
	r := &bitReader{b: frame[4 : 4+h.sideBytes]}
	granules := 1
	if h.version == 3 {
		granules = 2
		mainDataBegin = r.read(9)
		r.read(map[int]int{1: 5, 2: 3}[h.channels]) // private bits
		r.read(4 * h.channels)                      // scfsi
	} else {
		mainDataBegin = r.read(8)
		r.read(h.channels) // private bits
	}
	for gr := 0; gr < granules; gr++ {
		for ch := 0; ch < h.channels; ch++ {
			bits += r.read(12) // part2_3_length
			r.read(9 + 8)      // big_values, global_gain
			if h.version == 3 {
				r.read(4) // scalefac_compress
			} else {
				r.read(9)
			}
			r.read(1 + 22) // window_switching_flag and its 22 bits either way
			if h.version == 3 {
				r.read(1) // preflag
			}
			r.read(2) // scalefac_scale, count1table_select
		}
	}
	return mainDataBegin, bits
}

// TestINM5_17_MP3FrameChain encodes every spec-allowed MP3 sample rate at its lowest, a
// middle and its highest bitrate, mono and stereo, and walks the file frame by frame: each
// header sits exactly where the previous frame's length (bitrate, sample rate, padding)
// ends, the last frame ends at the end of the file, each frame's main data fits in it, and
// every header carries the sample rate, bitrate and channel mode the result reports.
// Proves IN-M5-14, IN-M5-16 and IN-M5-17 for the bytes produced, not only the request.
func TestINM5_17_MP3FrameChain(t *testing.T) {
	const duration = 0.25
	bitrates := map[int][3]int{ // lowest, middle, highest (spec 01 "Input of M5" rule 2)
		8000: {8, 32, 64}, 11025: {8, 32, 64}, 12000: {8, 32, 64},
		16000: {8, 80, 160}, 22050: {8, 80, 160}, 24000: {8, 80, 160},
		32000: {32, 128, 320}, 44100: {32, 128, 320}, 48000: {32, 128, 320},
	}
	for _, rate := range mp3SampleRates {
		for _, kbps := range bitrates[rate] {
			for _, channels := range []int{1, 2} {
				t.Run(fmt.Sprintf("%dHz_%dkbps_%dch", rate, kbps, channels), func(t *testing.T) {
					t.Parallel()
					in := map[string]any{"positivePrompt": "calm piano", "duration": duration, "seed": 5, "outputFormat": "MP3",
						"audioSettings": map[string]any{"channels": channels, "sampleRate": rate, "bitrate": kbps}}
					res, out, err := runMusic(t, context.Background(), in, nil)
					if err != nil {
						t.Fatal(err)
					}
					doc, f := audioFile(t, res, out)
					if doc["sample_rate"] != rate || doc["channels"] != channels || doc["bitrate"] != kbps {
						t.Fatalf("result reports %v Hz, %v ch, %v kbps; asked %d Hz, %d ch, %d kbps",
							doc["sample_rate"], doc["channels"], doc["bitrate"], rate, channels, kbps)
					}
					frames, samples, spp := 0, 0, 0
					for off := 0; off < len(f.data); {
						h, msg := parseMP3Header(f.data, off)
						if msg != "" {
							t.Fatalf("frame %d at byte %d of %d: %s", frames, off, len(f.data), msg)
						}
						if h.rate != rate || h.kbps != kbps || h.channels != channels {
							t.Fatalf("frame %d at byte %d: %d Hz, %d kbps, %d ch; the result reports %d Hz, %d kbps, %d ch",
								frames, off, h.rate, h.kbps, h.channels, rate, kbps, channels)
						}
						if off+h.size > len(f.data) {
							t.Fatalf("frame %d at byte %d is %d bytes long, the file ends %d bytes in", frames, off, h.size, len(f.data)-off)
						}
						begin, bits := mp3MainData(f.data[off:off+h.size], h)
						if room := (h.size - 4 - h.sideBytes) * 8; begin != 0 || bits > room {
							t.Fatalf("frame %d at byte %d: main_data_begin %d, %d bits of main data in a frame with room for %d",
								frames, off, begin, bits, room)
						}
						frames++
						samples, spp = samples+h.samples, h.samples
						off += h.size
					}
					if want := int(duration * float64(rate)); samples < want || samples >= want+spp {
						t.Fatalf("%d frames hold %d samples for %d asked", frames, samples, want)
					}
				})
			}
		}
	}
}
