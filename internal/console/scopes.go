package console

import "github.com/modelexec/modelexec/internal/auth"

// scopeWords says what each scope lets a key do, in the words of the scope table (spec 02
// "Scopes"); the key list and the mint form show these with the scope's name beside them.
var scopeWords = map[auth.Scope]string{
	auth.JobsRead:        "Read jobs and webhook endpoints",
	auth.AssetsRead:      "Fetch the outputs of finished jobs",
	auth.ImageWrite:      "Make images",
	auth.VideoWrite:      "Make video",
	auth.AudioWrite:      "Make audio (music, speech, sound)",
	auth.ThreeDWrite:     "Make 3D models",
	auth.TextWrite:       "Chat and text models, uploads",
	auth.EmbeddingsWrite: "Make embeddings",
	auth.WebhooksWrite:   "Create and delete webhook endpoints",
	auth.ChatRead:        "Read chat threads back",
	auth.CommunityWrite:  "Act in the community",
	auth.StudioRead:      "Read studio projects",
	auth.StudioWrite:     "Change studio projects",
	auth.PhotoWrite:      "The platform's image address (older name)",
	auth.MusicWrite:      "The platform's music address (older name)",
	auth.SvcVideoWrite:   "The platform's video address (older name)",
	auth.ThreedWrite:     "The platform's 3D address (older name)",
	auth.ChatWrite:       "Chat endpoints (older name)",
	auth.ExternalWrite:   "Models outside the platform (older name)",
}

// scopeLabel is one scope as the pages show it.
type scopeLabel struct{ Name, Words string }

func scopeLabels(ss []auth.Scope) []scopeLabel {
	out := make([]scopeLabel, 0, len(ss))
	for _, s := range ss {
		w := scopeWords[s]
		if w == "" {
			w = string(s)
		}
		out = append(out, scopeLabel{Name: string(s), Words: w})
	}
	return out
}
