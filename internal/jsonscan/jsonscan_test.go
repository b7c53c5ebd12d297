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

// TestMeasure counts members, values and depth as decoding would build them.
func TestMeasure(t *testing.T) {
	for b, want := range map[string]jsonscan.Shape{
		`{}`:                                {Values: 1, Depth: 1},
		`0`:                                 {Values: 1},
		`"x"`:                               {Values: 1},
		`[{},{},{}]`:                        {Values: 4, Depth: 2},
		`[0, -1.5e3,true,null ,"a"]`:        {Values: 6, Depth: 1},
		`{"a:b":"c:d","e":{"f":[{"g":1}]}}`: {Members: 4, Values: 6, Depth: 4},
		`{"a\":":[[["]"]]]}`:                {Members: 1, Values: 5, Depth: 4},
		" {\n\"a\" :\t1 } ":                 {Members: 1, Values: 2, Depth: 1},
	} {
		if got := jsonscan.Measure([]byte(b)); got != want {
			t.Errorf("%s: %+v, want %+v", b, got, want)
		}
	}
}

// FuzzMeasure: on every JSON text, Measure agrees with the tree encoding/json decodes.
func FuzzMeasure(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `[{},[0,"x"]]`, `{"\"":[true,false,null]}`, `-0.5e+7`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var v any
		if json.Unmarshal(b, &v) != nil {
			jsonscan.Measure(b) // never panics on any text
			return
		}
		var want jsonscan.Shape
		var walk func(v any, depth int)
		walk = func(v any, depth int) {
			want.Values++
			switch x := v.(type) {
			case map[string]any:
				want.Depth = max(want.Depth, depth+1)
				for _, e := range x {
					want.Members++
					walk(e, depth+1)
				}
			case []any:
				want.Depth = max(want.Depth, depth+1)
				for _, e := range x {
					walk(e, depth+1)
				}
			}
		}
		walk(v, 0)
		got := jsonscan.Measure(b)
		if got.Values < want.Values || got.Depth != want.Depth || got.Members < want.Members {
			t.Fatalf("%q: %+v, decoded %+v", b, got, want)
		}
	})
}
