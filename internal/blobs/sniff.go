package blobs

import (
	"bytes"
	"strings"
	"unicode/utf8"
)

// SniffLen is how many leading bytes BytesMatchType needs to decide.
const SniffLen = 512

// magic is what the first bytes of a file of each checked content type look like. An
// upload declares its type and the link is bound to it; without this check any bytes
// (HTML, a script) could be stored and later served under an image's content type.
var magic = map[string]func(b []byte) bool{
	"image/png":  func(b []byte) bool { return bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) },
	"image/jpeg": func(b []byte) bool { return bytes.HasPrefix(b, []byte{0xFF, 0xD8, 0xFF}) },
	"image/webp": func(b []byte) bool { return riff(b, "WEBP") },
	"image/gif": func(b []byte) bool {
		return bytes.HasPrefix(b, []byte("GIF87a")) || bytes.HasPrefix(b, []byte("GIF89a"))
	},
	"audio/wav":   isWAV,
	"audio/x-wav": isWAV,
	"audio/wave":  isWAV,
	"audio/flac":  func(b []byte) bool { return bytes.HasPrefix(b, []byte("fLaC")) },
	"audio/ogg":   func(b []byte) bool { return bytes.HasPrefix(b, []byte("OggS")) },
	"audio/opus":  func(b []byte) bool { return bytes.HasPrefix(b, []byte("OggS")) },
	"audio/mpeg": func(b []byte) bool {
		// An ID3 tag, or an MPEG audio frame sync (11 set bits).
		return bytes.HasPrefix(b, []byte("ID3")) || len(b) >= 2 && b[0] == 0xFF && b[1]&0xE0 == 0xE0
	},
	"audio/mp4":       func(b []byte) bool { return len(b) >= 8 && string(b[4:8]) == "ftyp" },
	"video/mp4":       func(b []byte) bool { return len(b) >= 8 && string(b[4:8]) == "ftyp" },
	"video/webm":      func(b []byte) bool { return bytes.HasPrefix(b, []byte{0x1A, 0x45, 0xDF, 0xA3}) },
	"application/pdf": func(b []byte) bool { return bytes.HasPrefix(b, []byte("%PDF-")) },
	"text/plain":      isText,
	"text/markdown":   isText,
}

// isText reports whether head reads as UTF-8 text without NUL characters (a rune cut by the
// end of head is allowed): a text document, not a binary file under a text type.
func isText(b []byte) bool {
	if len(b) == 0 || bytes.IndexByte(b, 0) >= 0 {
		return false
	}
	for cut := 0; cut < utf8.UTFMax && len(b) > 0; cut++ {
		if utf8.Valid(b) {
			return true
		}
		b = b[:len(b)-1]
	}
	return false
}

func isWAV(b []byte) bool { return riff(b, "WAVE") }

func riff(b []byte, form string) bool {
	return len(b) >= 12 && string(b[:4]) == "RIFF" && string(b[8:12]) == form
}

// BytesMatchType reports whether head (the first SniffLen bytes of a file, or all of a
// shorter one) looks like contentType. Image, audio and video types this package knows
// are checked by their magic numbers; an image, audio or video type it does not know is
// refused (it cannot be vouched for); other types are not checked.
func BytesMatchType(contentType string, head []byte) bool {
	ct := strings.ToLower(strings.TrimSpace(contentType))
	if i := strings.IndexByte(ct, ';'); i >= 0 {
		ct = strings.TrimSpace(ct[:i])
	}
	if check, ok := magic[ct]; ok {
		return check(head)
	}
	for _, media := range []string{"image/", "audio/", "video/"} {
		if strings.HasPrefix(ct, media) {
			return false
		}
	}
	return true
}
