package auth

import (
	"slices"
	"strings"
	"testing"
)

// TestSCP14_Names proves SCP-14 (13 current + 6 older, 19 in all, older never offered), SCP-02,
// SCP-03 (jobs:read and assets:read always on), SCP-04 (ticked and unticked defaults), SCP-01
// (stored scopes are read back as minted, old names included).
func TestSCP14_Names(t *testing.T) {
	want := []Scope{"jobs:read", "assets:read", "image:write", "video:write", "audio:write", "3d:write", "text:write",
		"embeddings:write", "webhooks:write", "chat:read", "community:write", "studio:read", "studio:write"}
	if !slices.Equal(Current, want) {
		t.Fatalf("current %v", Current)
	}
	old := []Scope{"photo:write", "music:write", "svc-ai-video:write", "threed:write", "chat:write", "external:write"}
	if !slices.Equal(Older, old) {
		t.Fatalf("older %v", Older)
	}
	all := map[Scope]bool{}
	for _, s := range append(slices.Clone(Current), Older...) {
		all[s] = true
	}
	if len(all) != 19 {
		t.Fatalf("%d distinct names", len(all))
	}
	if d := DefaultScopes(); !slices.Equal(d, []Scope{JobsRead, AssetsRead, ImageWrite, VideoWrite, AudioWrite, ThreeDWrite, TextWrite, EmbeddingsWrite, WebhooksWrite}) {
		t.Fatalf("defaults %v", d)
	}
	for _, unticked := range []Scope{ChatRead, CommunityWrite, StudioRead, StudioWrite} {
		if slices.Contains(DefaultScopes(), unticked) {
			t.Fatalf("%s ticked by default", unticked)
		}
	}
	// Always-on even when the caller picks nothing but one write scope, or nothing at all.
	for _, in := range [][]Scope{{StudioRead}, {}} {
		got := Normalize(in)
		if !slices.Contains(got, JobsRead) || !slices.Contains(got, AssetsRead) {
			t.Fatalf("Normalize(%v) = %v", in, got)
		}
	}
	got, err := ParseMintScopes("studio:write, chat:read,studio:write")
	if err != nil || !slices.Equal(got, []Scope{JobsRead, AssetsRead, ChatRead, StudioWrite}) {
		t.Fatalf("ParseMintScopes: %v %v", got, err)
	}
	for _, o := range append(slices.Clone(Older), "admin", "keys:write", "image:read") {
		if _, err := ParseMintScopes(string(o)); err == nil {
			t.Fatalf("%s offered at minting", o)
		}
	}
	// SCP-01 / SCP-20: a stored list is read back exactly, older names kept.
	stored := ParseStored("jobs:read,assets:read,svc-ai-video:write")
	if !slices.Equal(stored, []Scope{JobsRead, AssetsRead, SvcVideoWrite}) || len(ParseStored("")) != 0 {
		t.Fatalf("ParseStored %v", stored)
	}
}

// TestSCP21_ProductRequirement proves SCP-21 (accepted scopes by kind), SCP-15..SCP-19 (each older
// name reaches its own kind only), SCP-20 (an old-video key without external:write reaches only the
// video address), SCP-22 (M1 external: image:write or external:write, DESIGN 19; others image:write;
// M5 audio:write), SCP-29 (required/accepted shape), SCP-30 (required may be unmintable only when
// named so).
func TestSCP21_ProductRequirement(t *testing.T) {
	cases := []struct {
		product  string
		required Scope
		accepted []Scope
	}{
		{"photo", ImageWrite, []Scope{ImageWrite, PhotoWrite}},
		{"image", ImageWrite, []Scope{ImageWrite}},
		{"external", ImageWrite, []Scope{ImageWrite, PhotoWrite, ExternalWrite}},
		{"music", AudioWrite, []Scope{AudioWrite, MusicWrite}},
		{"audio", AudioWrite, []Scope{AudioWrite}},
		{"threed", ThreeDWrite, []Scope{ThreeDWrite, ThreedWrite}},
		{"3d", ThreeDWrite, []Scope{ThreeDWrite}},
		{"video", VideoWrite, []Scope{VideoWrite, SvcVideoWrite}},
		{"chat", TextWrite, []Scope{TextWrite, ChatWrite}},
		{"text", TextWrite, []Scope{TextWrite, ChatWrite}},
		{"embeddings", EmbeddingsWrite, []Scope{EmbeddingsWrite}},
	}
	for _, c := range cases {
		r := ProductRequirement(c.product)
		if r.Required != c.required || !slices.Equal(r.Accepted, c.accepted) {
			t.Errorf("%s: %+v, want %s %v", c.product, r, c.required, c.accepted)
		}
		if !slices.Contains(Current, r.Required) {
			t.Errorf("%s: required %s cannot be minted", c.product, r.Required)
		}
	}
	// Each older name reaches exactly its kind.
	reach := map[Scope][]string{
		PhotoWrite:    {"photo", "external"},
		MusicWrite:    {"music"},
		ThreedWrite:   {"threed"},
		SvcVideoWrite: {"video"},
		ChatWrite:     {"chat", "text"},
		ExternalWrite: {"external"},
	}
	products := []string{"photo", "image", "external", "music", "audio", "threed", "3d", "video", "chat", "text", "embeddings"}
	for s, want := range reach {
		keyScopes := Normalize([]Scope{s})
		for _, p := range products {
			if got := ProductRequirement(p).Satisfied(keyScopes); got != slices.Contains(want, p) {
				t.Errorf("%s on %s: satisfied %v", s, p, got)
			}
		}
	}
	// Always-on reads reach no write.
	for _, p := range products {
		if ProductRequirement(p).Satisfied(Normalize([]Scope{})) {
			t.Errorf("a read-only key reaches %s", p)
		}
	}
	// SCP-28: a zero requirement (GET /v1/me) needs nothing.
	if !(Requirement{}).Satisfied(nil) {
		t.Fatal("zero requirement")
	}
	// SCP-13: a studio read route takes studio:read or studio:write.
	if r := Need(StudioRead, StudioWrite); !r.Satisfied([]Scope{StudioWrite}) || r.Satisfied([]Scope{CommunityWrite}) {
		t.Fatal("Need")
	}
	// SCP-30: a requirement naming an unmintable scope (the own video address) keeps it as required.
	if r := Need(SvcVideoWrite); r.Required != SvcVideoWrite || slices.Contains(Current, r.Required) {
		t.Fatal("unmintable required")
	}
}

func TestPlansAndStatus(t *testing.T) {
	for _, p := range Plans {
		if got, err := ParsePlan(string(p)); err != nil || got != p {
			t.Fatal(p)
		}
	}
	if _, err := ParsePlan("enterprise"); err == nil {
		t.Fatal("unknown plan")
	}
	for _, s := range []Status{Live, Banned, Suspended, Limited} {
		if got, err := ParseStatus(string(s)); err != nil || got != s {
			t.Fatal(s)
		}
	}
	if _, err := ParseStatus("deleted"); err == nil {
		t.Fatal("unknown status")
	}
	if DefaultMonthlyAllowance(Free) != 0 || DefaultMonthlyAllowance(Pro) <= 0 {
		t.Fatal("allowances")
	}
}

// TestSCP30_UnmintableRequired proves SCP-29 and SCP-30 on the refusal itself: insufficient_scope
// carries required, accepted and the key's scopes; when required is an older name that cannot be
// minted (external:write, svc-ai-video:write) the message tells the caller to name the model's
// address or use a key with the kind the model makes, instead of asking for a scope no one can mint.
func TestSCP30_UnmintableRequired(t *testing.T) {
	for _, s := range Older {
		if Mintable(s) {
			t.Errorf("%s is mintable", s)
		}
	}
	for _, s := range Current {
		if !Mintable(s) {
			t.Errorf("%s is not mintable", s)
		}
	}
	has := Normalize([]Scope{StudioRead})
	plain := ProductRequirement("photo").Refuse(has)
	if plain.Code != "insufficient_scope" || plain.Entry().Status != 403 || plain.Fields["required"] != "image:write" ||
		!slices.Equal(plain.Fields["accepted"].([]string), []string{"image:write", "photo:write"}) ||
		!slices.Equal(plain.Fields["scopes"].([]string), []string{"jobs:read", "assets:read", "studio:read"}) {
		t.Fatalf("%+v", plain)
	}
	if plain.Message != "" {
		t.Fatalf("a mintable requirement keeps the catalogue message, got %q", plain.Message)
	}
	for _, c := range []struct {
		r    Requirement
		kind string
	}{
		{Need(SvcVideoWrite), "the write scope of the kind the model makes"},
		{Need(ExternalWrite, ImageWrite), "image:write"},
	} {
		e := c.r.Refuse(has)
		if e.Fields["required"] != string(c.r.Required) {
			t.Fatalf("required %v", e.Fields["required"])
		}
		for _, want := range []string{string(c.r.Required), "no longer minted", "name the model's address", "kind the model makes", c.kind} {
			if !strings.Contains(e.Message, want) {
				t.Errorf("%s: message %q lacks %q", c.r.Required, e.Message, want)
			}
		}
	}
}
