package tokens

import (
	"unicode"
	"unicode/utf8"
)

// Longest piece of one word, in letters.
const maxWordPiece = 6

// Split cuts s into tokens. Joining them gives s back exactly.
func Split(s string) []string {
	var out []string
	i := 0
	for i < len(s) {
		start := i
		r, n := utf8.DecodeRuneInString(s[i:])
		// A single space joins the piece that follows it.
		if r == ' ' && i+1 < len(s) {
			if next, _ := utf8.DecodeRuneInString(s[i+1:]); isWord(next) || unicode.IsDigit(next) {
				i++
				r, n = next, 1
				if next >= utf8.RuneSelf {
					_, n = utf8.DecodeRuneInString(s[i:])
				}
			}
		}
		switch {
		case r < utf8.RuneSelf && isWord(r):
			i += n
			count := 1
			for i < len(s) && count < maxWordPiece {
				c := s[i]
				if c >= utf8.RuneSelf || !isWord(rune(c)) {
					break
				}
				i++
				count++
			}
		case r < utf8.RuneSelf && unicode.IsDigit(r):
			i += n
			for count := 1; i < len(s) && count < 3 && s[i] >= '0' && s[i] <= '9'; count++ {
				i++
			}
		case r == '\n' || r == '\r':
			for i < len(s) && (s[i] == '\n' || s[i] == '\r') {
				i++
			}
		case r == ' ' || r == '\t':
			for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
				i++
			}
		default:
			i += n
		}
		out = append(out, s[start:i])
	}
	return out
}

// Count is len(Split(s)) without building the pieces.
func Count(s string) int {
	// Split allocates; counting on the same walk keeps the two from ever disagreeing, and
	// prompts are at most tens of thousands of characters.
	return len(Split(s))
}

func isWord(r rune) bool {
	return r < utf8.RuneSelf && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '_' || r == '\'')
}
