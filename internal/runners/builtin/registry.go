package builtin

import (
	"time"

	"github.com/modelexec/modelexec/internal/imagebudget"
	"github.com/modelexec/modelexec/internal/runners"
)

// Options configure the built-in image runners.
type Options struct {
	// Now is the clock the runners time themselves with (metrics only); time.Now when nil.
	Now func() time.Time
	// Images is the memory the process's image decodes share (the uploads' too); nil: a
	// budget of imagebudget.Default's size for these runners alone.
	Images *imagebudget.Budget
}

// Image model slugs served by Images.
const (
	SlugImage9BKV  = "image-9b-kv" // M1
	SlugImage4B    = "image-4b"    // M2
	SlugImageLite  = "image-lite"  // M3
	SlugUpscale    = "upscale"     // M4
	SlugEyeMask    = "eye-mask"    // M6
	SlugImageEdit  = "image-edit"  // M7
	SlugImageDev   = "image-dev"   // M8
	SlugImageTurbo = "image-turbo" // M9
)

// Images returns the reference runner of each of the eight image models, by slug.
func Images(opts Options) runners.Registry {
	now := clock(opts.Now)
	if opts.Now == nil {
		now = time.Now
	}
	images := decoder{budget: opts.Images}
	if images.budget == nil {
		images.budget = imagebudget.Default()
	}
	gen := func(slug string, steps int, composite, layers bool) runners.Runner {
		return &generator{slug: slug, defaultSteps: steps, composite: composite, layers: layers, now: now, images: images}
	}
	return runners.Registry{
		SlugImage9BKV:  gen(SlugImage9BKV, 4, false, false),
		SlugImage4B:    gen(SlugImage4B, 28, false, false),
		SlugImageLite:  gen(SlugImageLite, 20, false, false),
		SlugImageDev:   gen(SlugImageDev, 28, true, true),
		SlugImageTurbo: gen(SlugImageTurbo, 8, true, false),
		SlugImageEdit:  &editor{now: now, images: images},
		SlugUpscale:    &upscaler{now: now, images: images},
		SlugEyeMask:    &eyeMasker{now: now, images: images},
	}
}

// Merge returns one registry holding the runners of all of regs (a later one wins on a
// shared slug), e.g. builtin.Merge(builtin.Images(opts), builtin.Music(...)).
func Merge(regs ...runners.Registry) runners.Registry {
	out := runners.Registry{}
	for _, r := range regs {
		for slug, rn := range r {
			out[slug] = rn
		}
	}
	return out
}

// All returns every built-in reference runner: the eight image models and music-turbo.
func All(opts Options) runners.Registry {
	return Merge(Images(opts), Music(opts))
}
