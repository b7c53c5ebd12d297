package jsonscan_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelexec/modelexec/internal/jsonscan"
)

// TestMembersAgreesWithDecoding: the walk sees the members encoding/json decodes into a map,
// with the same values, escapes and nesting included.
func TestMembersAgreesWithDecoding(t *testing.T) {
	for _, b := range []string{
		`{}`, ` { } `, `{"a":1}`, `{"a" : "x,}\"]" , "b":[1,{"c":"}"}],"d":{"e":[]},"f":null,"g":true,"h":-1.5e3}`,
		`{"k\u00e9y":"v","k\"q":{"x":"\\"}}`, "{\n\t\"a\"\n:\n1\n,\n\"b\":2}",
	} {
		var want map[string]json.RawMessage
		if err := json.Unmarshal([]byte(b), &want); err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		if err := jsonscan.Members([]byte(b), func(k string, raw []byte) bool { got[k] = string(raw); return true }); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: %v, want %v", b, got, want)
		}
		for k, v := range want {
			if got[k] != strings.TrimSpace(string(v)) {
				t.Fatalf("%s: %q = %q, want %q", b, k, got[k], v)
			}
		}
	}
	for _, b := range []string{``, `[]`, `"x"`, `{"a":}`, `{"a":1`, `1`} {
		if err := jsonscan.Members([]byte(b), func(string, []byte) bool { return true }); err == nil {
			t.Fatalf("%q: no error", b)
		}
	}
}

// TestCount counts members at every depth, ignoring colons inside strings.
func TestCount(t *testing.T) {
	for b, want := range map[string]int{`{}`: 0, `{"a":1}`: 1, `{"a:b":"c:d","e":{"f":[{"g":1}]}}`: 4, `{"a\":":1}`: 1} {
		if got := jsonscan.Count([]byte(b)); got != want {
			t.Fatalf("%s: %d, want %d", b, got, want)
		}
	}
}

// FuzzMembers: the walk never panics and agrees with encoding/json on which texts are objects.
func FuzzMembers(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `{"a":[{"b":"}"}]}`, `[]`, `{"\u0041":"\\"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var m map[string]json.RawMessage
		isObj := json.Unmarshal(b, &m) == nil && m != nil
		n := 0
		err := jsonscan.Members(b, func(k string, raw []byte) bool {
			if _, ok := m[k]; !ok {
				t.Fatalf("key %q not in %v", k, m)
			}
			n++
			return true
		})
		if (err == nil) != isObj {
			t.Fatalf("%q: err %v, object %v", b, err, isObj)
		}
		if isObj && n < len(m) {
			t.Fatalf("%q: %d members, map has %d", b, n, len(m))
		}
	})
}
