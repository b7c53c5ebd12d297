package auth

import (
	"fmt"
	"slices"
	"strings"

	"github.com/modelexec/modelexec/internal/apierr"
)

// Scope names what a key may do (spec 02 "Scopes (19)").
type Scope string

// The 13 current scopes.
const (
	JobsRead        Scope = "jobs:read"
	AssetsRead      Scope = "assets:read"
	ImageWrite      Scope = "image:write"
	VideoWrite      Scope = "video:write"
	AudioWrite      Scope = "audio:write"
	ThreeDWrite     Scope = "3d:write"
	TextWrite       Scope = "text:write"
	EmbeddingsWrite Scope = "embeddings:write"
	WebhooksWrite   Scope = "webhooks:write"
	ChatRead        Scope = "chat:read"
	CommunityWrite  Scope = "community:write"
	StudioRead      Scope = "studio:read"
	StudioWrite     Scope = "studio:write"
)

// The 6 older names: honoured on keys minted with them, never offered at minting.
const (
	PhotoWrite    Scope = "photo:write"
	MusicWrite    Scope = "music:write"
	SvcVideoWrite Scope = "svc-ai-video:write"
	ThreedWrite   Scope = "threed:write"
	ChatWrite     Scope = "chat:write"
	ExternalWrite Scope = "external:write"
)

// Current lists the scopes a key may be minted with.
var Current = []Scope{JobsRead, AssetsRead, ImageWrite, VideoWrite, AudioWrite, ThreeDWrite, TextWrite,
	EmbeddingsWrite, WebhooksWrite, ChatRead, CommunityWrite, StudioRead, StudioWrite}

// Older lists the names honoured on keys minted with them.
var Older = []Scope{PhotoWrite, MusicWrite, SvcVideoWrite, ThreedWrite, ChatWrite, ExternalWrite}

// AlwaysOn scopes are part of every key (SCP-02, SCP-03).
var AlwaysOn = []Scope{JobsRead, AssetsRead}

// Ticked are on by default at minting (SCP-04).
var Ticked = []Scope{ImageWrite, VideoWrite, AudioWrite, ThreeDWrite, TextWrite, EmbeddingsWrite, WebhooksWrite}

// DefaultScopes is what a key gets when minted without a list.
func DefaultScopes() []Scope { return Normalize(nil) }

// Normalize adds the always-on scopes, removes duplicates and sorts in catalogue order.
func Normalize(in []Scope) []Scope {
	if in == nil {
		in = Ticked
	}
	set := map[Scope]bool{}
	for _, s := range append(slices.Clone(AlwaysOn), in...) {
		set[s] = true
	}
	var out []Scope
	for _, s := range append(slices.Clone(Current), Older...) {
		if set[s] {
			out = append(out, s)
		}
	}
	return out
}

// ParseMintScopes reads a comma-separated list for minting: only current names are offered.
func ParseMintScopes(list string) ([]Scope, error) {
	var out []Scope
	for _, p := range strings.Split(list, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		s := Scope(p)
		if !slices.Contains(Current, s) {
			return nil, fmt.Errorf("unknown or withdrawn scope %q (offered: %s)", p, join(Current))
		}
		out = append(out, s)
	}
	return Normalize(out), nil
}

// Requirement is what a route or model asks of a key: the scope to mint (Required) and every
// scope that would have done (Accepted, Required included).
type Requirement struct {
	Required Scope
	Accepted []Scope
}

// Need returns the requirement of a route that takes exactly these scopes, the first being
// the one to mint.
func Need(required Scope, alsoAccepted ...Scope) Requirement {
	return Requirement{Required: required, Accepted: append([]Scope{required}, alsoAccepted...)}
}

// Satisfied reports whether a key holding scopes meets r. A zero Requirement needs nothing.
func (r Requirement) Satisfied(scopes []Scope) bool {
	if r.Required == "" {
		return true
	}
	for _, s := range scopes {
		if slices.Contains(r.Accepted, s) {
			return true
		}
	}
	return false
}

// Mintable reports whether s may be chosen at minting (the 13 current names).
func Mintable(s Scope) bool { return slices.Contains(Current, s) }

// Refuse is the step-7 refusal of a key holding scopes that does not meet r: 403
// insufficient_scope carrying required (the scope to mint), accepted (every scope that would
// have done) and scopes (what the key has) (SCP-29). When required is an older name that is no
// longer minted (external:write, svc-ai-video:write), minting it is impossible, so the message
// says what to do instead: name the model's address, or use a key with the kind the model
// makes (SCP-30).
func (r Requirement) Refuse(scopes []Scope) *apierr.Error {
	e := apierr.New(apierr.InsufficientScope, "required", string(r.Required),
		"accepted", Strings(r.Accepted), "scopes", Strings(scopes))
	if r.Required == "" || Mintable(r.Required) {
		return e
	}
	var mintable []Scope
	for _, s := range r.Accepted {
		if Mintable(s) {
			mintable = append(mintable, s)
		}
	}
	kind := "the write scope of the kind the model makes"
	if len(mintable) > 0 {
		kind = join(mintable)
	}
	e.Message = fmt.Sprintf("This key lacks %s, which is no longer minted: name the model's address, or use a key with the kind the model makes (%s).", r.Required, kind)
	return e
}

// ProductRequirement is the write scope of a product (spec 02 Scopes rule 5): image models take
// image:write or photo:write; music audio:write or music:write; 3D 3d:write or threed:write;
// models outside the platform's own namespace also external:write.
func ProductRequirement(product string) Requirement {
	switch product {
	case "photo":
		return Need(ImageWrite, PhotoWrite)
	case "external":
		return Need(ImageWrite, PhotoWrite, ExternalWrite)
	case "music":
		return Need(AudioWrite, MusicWrite)
	case "threed":
		return Need(ThreeDWrite, ThreedWrite)
	case "video":
		return Need(VideoWrite, SvcVideoWrite)
	case "chat", "text":
		return Need(TextWrite, ChatWrite)
	}
	return Need(Scope(product + ":write"))
}

// Strings renders scopes for JSON.
func Strings(scopes []Scope) []string {
	out := make([]string, len(scopes))
	for i, s := range scopes {
		out[i] = string(s)
	}
	return out
}

// ParseStored reads the stored comma-separated scope list of a key (any name, old ones included).
func ParseStored(list string) []Scope {
	var out []Scope
	for _, p := range strings.Split(list, ",") {
		if p != "" {
			out = append(out, Scope(p))
		}
	}
	return out
}

func join(s []Scope) string { return strings.Join(Strings(s), ", ") }
