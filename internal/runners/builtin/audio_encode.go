package builtin

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/braheezy/shine-mp3/pkg/mp3"
	"github.com/mewkiz/flac"
	"github.com/mewkiz/flac/frame"
	"github.com/mewkiz/flac/meta"
	"github.com/thesyncim/gopus"
	"github.com/thesyncim/gopus/container/ogg"
)

// encodedAudio is one encoded audio file.
type encodedAudio struct {
	data        []byte
	contentType string
	ext         string
	bitrate     int // kbps: the CBR rate for MP3/OGG, the average for WAV/FLAC
}

// encodeAudio encodes frames of interleaved float PCM in [-1, 1] as spec says. ctx is
// checked between blocks of frames.
func encodeAudio(ctx context.Context, pcm []float32, frames int, spec audioSpec) (encodedAudio, error) {
	var (
		out encodedAudio
		err error
	)
	switch spec.format {
	case "WAV":
		out = encodedAudio{data: encodeWAV(pcm, spec.sampleRate, spec.channels), contentType: "audio/wav", ext: "wav"}
	case "FLAC":
		var data []byte
		data, err = encodeFLAC(ctx, pcm, frames, spec.sampleRate, spec.channels)
		out = encodedAudio{data: data, contentType: "audio/flac", ext: "flac"}
	case "MP3":
		out, err = encodeMP3(ctx, pcm, frames, spec)
	case "OGG":
		out, err = encodeOggOpus(ctx, pcm, frames, spec)
	default:
		err = fmt.Errorf("unknown format %q", spec.format)
	}
	if err != nil {
		return encodedAudio{}, err
	}
	if out.bitrate == 0 && frames > 0 {
		out.bitrate = int(math.Round(float64(len(out.data)) * 8 / (float64(frames) / float64(spec.sampleRate)) / 1000))
	}
	return out, nil
}

func toInt16(v float32) int16 {
	x := math.Round(float64(v) * 32767)
	return int16(max(-32768, min(32767, x)))
}

// encodeWAV writes a canonical 44-byte-header RIFF/WAVE file of 16-bit PCM.
func encodeWAV(pcm []float32, rate, channels int) []byte {
	dataLen := len(pcm) * 2
	b := make([]byte, 44+dataLen)
	copy(b[0:], "RIFF")
	binary.LittleEndian.PutUint32(b[4:], uint32(36+dataLen))
	copy(b[8:], "WAVEfmt ")
	binary.LittleEndian.PutUint32(b[16:], 16)
	binary.LittleEndian.PutUint16(b[20:], 1) // PCM
	binary.LittleEndian.PutUint16(b[22:], uint16(channels))
	binary.LittleEndian.PutUint32(b[24:], uint32(rate))
	binary.LittleEndian.PutUint32(b[28:], uint32(rate*channels*2))
	binary.LittleEndian.PutUint16(b[32:], uint16(channels*2))
	binary.LittleEndian.PutUint16(b[34:], 16)
	copy(b[36:], "data")
	binary.LittleEndian.PutUint32(b[40:], uint32(dataLen))
	for i, v := range pcm {
		binary.LittleEndian.PutUint16(b[44+2*i:], uint16(toInt16(v)))
	}
	return b
}

// encodeFLAC writes 16-bit FLAC in blocks of 4096 frames.
func encodeFLAC(ctx context.Context, pcm []float32, frames, rate, channels int) ([]byte, error) {
	const block = 4096
	info := &meta.StreamInfo{
		BlockSizeMin: block, BlockSizeMax: block, SampleRate: uint32(rate),
		NChannels: uint8(channels), BitsPerSample: 16, NSamples: uint64(frames),
	}
	var buf bytes.Buffer
	enc, err := flac.NewEncoder(&buf, info)
	if err != nil {
		return nil, err
	}
	chans := frame.ChannelsMono
	if channels == 2 {
		chans = frame.ChannelsLR
	}
	for off := 0; off < frames; off += block {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		n := min(block, frames-off)
		f := &frame.Frame{Header: frame.Header{HasFixedBlockSize: true, BlockSize: uint16(n), SampleRate: uint32(rate), Channels: chans, BitsPerSample: 16}}
		for c := 0; c < channels; c++ {
			s := make([]int32, n)
			for i := range s {
				s[i] = int32(toInt16(pcm[(off+i)*channels+c]))
			}
			f.Subframes = append(f.Subframes, &frame.Subframe{SubHeader: frame.SubHeader{Pred: frame.PredVerbatim}, Samples: s, NSamples: n})
		}
		if err := enc.WriteFrame(f); err != nil {
			return nil, err
		}
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// mp3Bitrates are the Layer III bitrates (kbps) by MPEG version: MPEG-1 for 32-48 kHz,
// MPEG-2 for 16-24 kHz, MPEG-2.5 for 8-12 kHz.
var mp3Bitrates = map[string][]int{
	"1":   {32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320},
	"2":   {8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160},
	"2.5": {8, 16, 24, 32, 40, 48, 56, 64},
}

func mp3Version(rate int) string {
	switch {
	case rate >= 32000:
		return "1"
	case rate >= 16000:
		return "2"
	}
	return "2.5"
}

// mp3Bitrate picks the bitrate MPEG defines at or below asked (the lowest when asked is
// below all); asked 0 gives the default of the version.
func mp3Bitrate(rate, asked int) (kbps, index int) {
	v := mp3Version(rate)
	list := mp3Bitrates[v]
	if asked == 0 {
		asked = map[string]int{"1": 128, "2": 64, "2.5": 32}[v]
	}
	idx := 0
	for i, b := range list {
		if b <= asked {
			idx = i
		}
	}
	return list[idx], idx + 1 // bitrate_index 0 is "free format"
}

// encodeMP3 encodes CBR MPEG Layer III with shine-mp3, one frame per call so that the
// encoder never reads past the samples it is given (its Write assumes stereo strides).
//
// The frame sizes are worked out here, not by shine, for two faults of shine v0.1.0:
//   - A granule's part2_3_length is a 12-bit field, so one channel of one granule holds at
//     most 4095 bits of main data. Mono at a version's top bitrates (44.1 kHz padded frames
//     at 320 kbps, 32 kHz at 320, 16 kHz at 160, 8 kHz at 64, …) has more room than that;
//     shine counts the excess as "reservoir drain" and never writes it, so the frame comes
//     out short and the next header lands inside it. shine is therefore given a frame no
//     larger than its granules can fill (mp3FrameLayout), and the rest of the frame the
//     header declares is filled here with zero bytes, ancillary data a decoder skips (the
//     next frame's main_data_begin is 0: shine keeps no bit reservoir).
//   - shine writes whole 32-bit words and keeps the last bits of a frame for the next one,
//     with no call to flush them: the file's last frame lost up to three bytes. One more
//     frame of silence pushes them out, and is then cut off.
func encodeMP3(ctx context.Context, pcm []float32, frames int, spec audioSpec) (encodedAudio, error) {
	enc := mp3.NewEncoder(spec.sampleRate, spec.channels)
	kbps, idx := mp3Bitrate(spec.sampleRate, spec.bitrate)
	if mp3.CheckConfig(spec.sampleRate, kbps) < 0 {
		return encodedAudio{}, fmt.Errorf("mp3: %d Hz at %d kbps not supported", spec.sampleRate, kbps)
	}
	// NewEncoder fixes 128 kbps; the header carries the chosen rate.
	enc.Mpeg.Bitrate = int64(kbps)
	enc.Mpeg.BitrateIndex = int64(idx)
	// With no fractional slots shine takes Padding and WholeSlotsPerFrame as set before each
	// frame instead of deriving them (in floats, which can land a hair under a whole number
	// and flag padding on frames that have none).
	enc.Mpeg.FracSlotsPerFrame = 0
	enc.Mpeg.Slot_lag = 0
	layout := newMP3FrameLayout(spec.sampleRate, kbps, spec.channels)
	spp := layout.samples
	// shine walks the samples with unsafe pointer arithmetic and leaves its cursors one
	// stride past the last sample it read; slack at the end of the allocation keeps those
	// cursors inside it (a pointer past an allocation's end confuses the garbage collector).
	chunk := make([]int16, spp*spec.channels, spp*spec.channels+16)
	nFrames := (frames + spp - 1) / spp
	var raw bytes.Buffer
	for n, off := 0, 0; n < nFrames; n, off = n+1, off+spp {
		if n%64 == 0 {
			if err := ctx.Err(); err != nil {
				return encodedAudio{}, err
			}
		}
		clear(chunk)
		k := min(spp, frames-off)
		for i := 0; i < k*spec.channels; i++ {
			chunk[i] = toInt16(pcm[off*spec.channels+i])
		}
		f := layout.frame(n)
		enc.Mpeg.Padding = int64(f.padding)
		enc.Mpeg.WholeSlotsPerFrame = int64(f.encoded - f.padding)
		if err := enc.Write(&raw, chunk); err != nil {
			return encodedAudio{}, err
		}
	}
	if nFrames > 0 { // flush the bits shine still holds
		clear(chunk)
		enc.Mpeg.Padding = 0
		enc.Mpeg.WholeSlotsPerFrame = int64(layout.frame(0).encoded)
		if err := enc.Write(&raw, chunk); err != nil {
			return encodedAudio{}, err
		}
	}
	src := raw.Bytes()
	out := make([]byte, 0, nFrames*(layout.whole+1))
	for n := range nFrames {
		f := layout.frame(n)
		if len(src) < f.encoded {
			return encodedAudio{}, fmt.Errorf("mp3: encoder wrote %d bytes short of a %d-byte frame", f.encoded-len(src), f.encoded)
		}
		out = append(out, src[:f.encoded]...)
		out = append(out, make([]byte, f.size-f.encoded)...)
		src = src[f.encoded:]
	}
	return encodedAudio{data: out, contentType: "audio/mpeg", ext: "mp3", bitrate: kbps}, nil
}

// mp3FrameLayout gives the size of each frame of a CBR Layer III stream and how much of it
// the encoder may fill.
type mp3FrameLayout struct {
	samples  int // per channel per frame: 1152 for MPEG-1, 576 for MPEG-2 and 2.5
	num, den int // bytes per frame as the fraction num/den
	whole    int // num / den: an unpadded frame
	maxFill  int // the most bytes one frame's header, side information and main data take
}

func newMP3FrameLayout(rate, kbps, channels int) mp3FrameLayout {
	granules, side := 2, map[int]int{1: 17, 2: 32}[channels] // MPEG-1
	if mp3Version(rate) != "1" {
		granules, side = 1, map[int]int{1: 9, 2: 17}[channels]
	}
	l := mp3FrameLayout{samples: granules * mp3.GRANULE_SIZE, num: granules * mp3.GRANULE_SIZE * kbps * 1000, den: 8 * rate}
	l.whole = l.num / l.den
	// part2_3_length is 12 bits: at most 4095 bits of main data per granule and channel.
	l.maxFill = 4 + side + granules*channels*4095/8
	return l
}

// mp3Frame is one frame: size bytes as its header says, the first encoded of them written
// by the encoder, the rest zero-filled ancillary data.
type mp3Frame struct {
	size, padding, encoded int
}

// frame gives frame n (from 0): its size is what the first n+1 frames of num/den bytes
// take, in whole bytes, less what the first n take, so padded frames keep the stream's
// length within a byte of exact.
func (l mp3FrameLayout) frame(n int) mp3Frame {
	size := int((int64(n+1)*int64(l.num))/int64(l.den) - (int64(n)*int64(l.num))/int64(l.den))
	return mp3Frame{size: size, padding: size - l.whole, encoded: min(size, l.maxFill)}
}

// Opus frames are 20 ms; Ogg pages hold up to this many packets.
const (
	opusFrameMs     = 20
	opusPagePackets = 50
)

// opusDefaultBitrate is the bitrate (kbps) of OGG output when none is asked.
func opusDefaultBitrate(channels int) int {
	if channels == 1 {
		return 64
	}
	return 128
}

// opusBitrate is the bitrate (kbps) the Opus encoder produces for asked (0: the default) at
// channels. Opus carries 6 to 510 kbps (RFC 6716 2.1.1): an encoder packet holds at most 1275
// bytes, 510 kbps at 20 ms frames. libopus's own per-channel bound (750 kbps a channel) lies
// above that at either channel count, so the packet bound is the one that holds; a larger
// target would be taken silently and the file still be at 510.
func opusBitrate(asked, channels int) int {
	if asked == 0 {
		return opusDefaultBitrate(channels)
	}
	return max(opusMinKbps, min(opusMaxKbps, asked))
}

const (
	opusMinKbps = 6
	opusMaxKbps = 1275 * 8 * (1000 / opusFrameMs) / 1000
)

// encodeOggOpus encodes Opus with gopus and wraps it in Ogg per RFC 7845: page 0 (BOS)
// holds OpusHead, page 1 OpusTags, then audio pages; granule positions count 48 kHz
// samples including the pre-skip, and the last page's granule position trims the padding
// so a player outputs exactly frames samples.
func encodeOggOpus(ctx context.Context, pcm []float32, frames int, spec audioSpec) (encodedAudio, error) {
	enc, err := gopus.NewEncoder(gopus.EncoderConfig{SampleRate: spec.sampleRate, Channels: spec.channels, Application: gopus.ApplicationAudio})
	if err != nil {
		return encodedAudio{}, err
	}
	kbps := opusBitrate(spec.bitrate, spec.channels)
	if err := enc.SetBitrate(kbps * 1000); err != nil {
		return encodedAudio{}, err
	}
	frameSize := spec.sampleRate * opusFrameMs / 1000
	if err := enc.SetFrameSize(frameSize); err != nil {
		return encodedAudio{}, err
	}
	lookahead := enc.Lookahead() // at the input rate
	preSkip := lookahead * 48000 / spec.sampleRate
	finalGranule := uint64(preSkip) + uint64(frames)*48000/uint64(spec.sampleRate)

	// Feed the encoder frames + lookahead samples (zero padded to whole frames) so the
	// last real sample leaves the encoder.
	total := frames + lookahead
	nPackets := (total + frameSize - 1) / frameSize
	var packets [][]byte
	in := make([]float32, frameSize*spec.channels)
	buf := make([]byte, 4000)
	for p := 0; p < nPackets; p++ {
		if p%50 == 0 {
			if err := ctx.Err(); err != nil {
				return encodedAudio{}, err
			}
		}
		clear(in)
		off := p * frameSize
		if off < frames {
			copy(in, pcm[off*spec.channels:min(frames, off+frameSize)*spec.channels])
		}
		n, err := enc.Encode(in, buf)
		if err != nil {
			return encodedAudio{}, err
		}
		packets = append(packets, append([]byte(nil), buf[:n]...))
	}
	if len(packets) == 0 {
		return encodedAudio{}, errors.New("opus: no audio")
	}

	var out bytes.Buffer
	serial := uint32(0x6d657865) // fixed: the same input gives the same bytes
	seq := uint32(0)
	writePage := func(headerType byte, granule uint64, pkts [][]byte) {
		p := ogg.Page{HeaderType: headerType, GranulePos: granule, SerialNumber: serial, PageSequence: seq}
		for _, pk := range pkts {
			p.Segments = append(p.Segments, ogg.BuildSegmentTable(len(pk))...)
			p.Payload = append(p.Payload, pk...)
		}
		out.Write(p.Encode())
		seq++
	}
	head := ogg.DefaultOpusHead(uint32(spec.sampleRate), uint8(spec.channels))
	head.PreSkip = uint16(preSkip)
	writePage(ogg.PageFlagBOS, 0, [][]byte{head.Encode()})
	tags := &ogg.OpusTags{Vendor: "modelexec reference runner (gopus)", Comments: map[string]string{"ENCODER": "modelexec music-turbo"}}
	writePage(0, 0, [][]byte{tags.Encode()})

	samplesPerPacket := uint64(48000 * opusFrameMs / 1000)
	for i := 0; i < len(packets); {
		j := min(len(packets), i+opusPagePackets)
		if len(packets)-j == 1 { // keep at least two packets on the last page: its trim spans < 2 packets
			j--
		}
		segs := 0
		for k := i; k < j; k++ {
			segs += len(ogg.BuildSegmentTable(len(packets[k])))
			if segs > 255 {
				j = k
				break
			}
		}
		granule := uint64(j) * samplesPerPacket
		var flag byte
		if j == len(packets) {
			flag = ogg.PageFlagEOS
			granule = finalGranule
		}
		writePage(flag, granule, packets[i:j])
		i = j
	}
	return encodedAudio{data: out.Bytes(), contentType: "audio/ogg", ext: "ogg", bitrate: kbps}, nil
}
