package tokens

import (
	"strings"
	"testing"
)

func TestSplitJoinsBack(t *testing.T) {
	for _, s := range []string{"", "Hello, world!", "  two  spaces\n\nand lines", "naïve café 東京 123456789", "antidisestablishmentarianism", "x"} {
		if got := strings.Join(Split(s), ""); got != s {
			t.Errorf("Split(%q) joined = %q", s, got)
		}
	}
}

func TestCount(t *testing.T) {
	cases := []struct {
		in   string
		want int
	}{
		{"", 0},
		{"Hello", 1},
		{"Hello world", 2},          // "Hello", " world"
		{"Hello, world!", 4},        // "Hello", ",", " world", "!"
		{"1234567", 3},              // "123", "456", "7"
		{"internationalization", 4}, // 20 letters in pieces of 6
		{"東京", 2},
		{"a\n\n\nb", 3},
	}
	for _, c := range cases {
		if got := Count(c.in); got != c.want {
			t.Errorf("Count(%q) = %d (%q), want %d", c.in, got, Split(c.in), c.want)
		}
	}
}

// FuzzTokenSplit: whatever the text, the pieces join back to it, none is empty, and Count
// agrees with Split.
func FuzzTokenSplit(f *testing.F) {
	for _, s := range []string{"", "Hello, world!", "a  b\n\n\tc", "東京 123456", "\xff\xfe broken utf-8"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		pieces := Split(s)
		if strings.Join(pieces, "") != s {
			t.Fatalf("Split(%q) does not join back", s)
		}
		for _, p := range pieces {
			if p == "" {
				t.Fatalf("Split(%q) has an empty piece", s)
			}
		}
		if Count(s) != len(pieces) {
			t.Fatalf("Count(%q) = %d, Split has %d", s, Count(s), len(pieces))
		}
	})
}
