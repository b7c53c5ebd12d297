// Package builtin owns the built-in CPU reference runners: one runners.Runner per catalogue
// model, deterministic for a given seed, producing real files that honour the contract. They
// exercise the whole service end to end on one machine; they are NOT the named models. Real
// models plug in through the Cog runner (internal/runners/cog) by catalogue configuration.
//
// It must not import net/http handlers, database/sql, any store, or internal/catalog: a runner
// reads its validated input (defaults filled) with encoding/json into small structs, fetches url
// inputs through runners.Inputs, stores files through runners.Outputs and reports through
// runners.Reporter.
//
// # Image runners (Images)
//
//   - image-9b-kv (M1), image-4b (M2), image-lite (M3), image-dev (M8), image-turbo (M9): a
//     procedural scene (sky gradient, soft light discs, layered ridges, value-noise texture)
//     drawn from the seed and a hash of the slug and prompts (prompt words such as "sunset",
//     "ocean", "forest", "night" pick the palette) at exactly width x height. The scene is
//     rendered in `steps` bands of rows; each band is a step, reported with Reporter.Progress and
//     a cancel point. M8 and M9 composite inputs.seedImage (scaled to the canvas, or to the inner
//     rectangle left by outpaint.top/bottom/left/right, its seam feathered by outpaint.blur) with
//     the generated content at strength (default 0.8); inputs.maskImage (luminance: white edited,
//     black preserved, grey blends) limits the edit, and maskMargin makes the new content be
//     composed for the mask's bounding box plus that many pixels of context. M8's
//     advancedFeatures.layerDiffuse renders the subject on a transparent background (alpha kept
//     by PNG and WEBP; JPG is flattened on white).
//   - image-edit (M7): inputs.referenceImages[0] cropped to the asked aspect and resized to
//     width x height with Catmull-Rom (the reference's own size when none is asked), then a
//     colour grade picked by prompt and seed (lift/gamma/gain per channel, saturation,
//     vignette) applied in `steps` bands.
//   - upscale (M4): Catmull-Rom resampling of inputs.image by upscaleFactor (1 to 4, default 2)
//     to exactly round(w*f) x round(h*f), in 4 bands (progress and cancel points).
//   - eye-mask (M6): faces found with pigo's facefinder cascade and pupils with its puploc
//     cascade (pure Go; cascades embedded from maskcascade/, MIT). Detection confidence is
//     q/(q+5) of pigo's score q, so pigo's customary threshold 5 is 0.5; detections above
//     settings.confidence are kept, best first, at most settings.maxDetections. Each eye is an
//     ellipse of 0.24 x 0.14 face widths around its pupil grown by settings.maskPadding pixels,
//     white on black at the image's size, feathered by settings.maskBlur (three box passes of
//     radius ceil(maskBlur/2)). The puploc detector jitters its start with math/rand, so a pupil
//     may move by a pixel between runs; masks are otherwise deterministic.
//
// Every image runner but eye-mask stamps advancedFeatures.watermark when sent: text rendered in
// Go Regular (golang.org/x/image/font/gofont, BSD) sized 1/14 of the short side (shrunk to fit),
// fontColor (default #FFFFFF, with a soft shadow when there is no bgColor) on an optional bgColor
// box, or the image at watermark.image scaled to at most a quarter of the short side; placed at
// displayPosition (default bottom-right; margin 1/40 of the short side, at least 4 px) or
// repeated in a brick pattern for "tiled"; blended at opacity (default 1).
//
// outputFormat JPG (default, image/jpeg at outputQuality, default 95), PNG (image/png,
// lossless) or WEBP (image/webp, lossy at outputQuality, alpha kept).
//
// WEBP is encoded by github.com/gen2brain/webp: libwebp compiled to WASM and transpiled to Go,
// no cgo. Built without tags it first tries a system libwebp through purego and falls back to
// the transpiled code; build with -tags nodynamic (DESIGN.md's choice for releases) to always
// use the pure-Go code, so the bytes do not depend on the host. The module needs no tag: go build
// and go test work with and without it (measured: 1024x1024 WEBP encode about 0.9 s on one core
// with nodynamic, 0.6 s through a system libwebp).
//
// # Refusals and failures
//
// A url input that cannot be fetched or decoded (JPEG, PNG, GIF, WEBP; at most 40 Mi pixels) is
// *runners.Refusal image_unreadable with loc ["body", "inputs", "image"] (or the field it came
// from: ["body","inputs","seedImage"], ["body","inputs","referenceImages","0"],
// ["body","advancedFeatures","watermark","image"], ...); a missing one is image_required; a
// value the runner cannot honour (outpaint leaving no room, an upscale above 256 Mi pixels) is
// invalid_input. Refusals and failures returned by runners.Inputs pass through unchanged. A
// store error is *runners.Failure runner_failed (retryable).
//
// Cancellation is the context: a runner checks it between steps and returns ctx.Err() with
// Result.Done = steps done / steps (0 before the first step), so the charge settles pro rata.
//
// # Result documents (fal / Runware style)
//
// Any object with "storage_key" is served with a signed "url" in its place.
//
// Image generation and editing (M1, M2, M3, M7, M8, M9):
//
//	{"images": [{"storage_key": "...", "width": 1024, "height": 768,
//	             "content_type": "image/jpeg", "file_size": 123456, "seed": 42}],
//	 "seed": 42, "prompt": "...", "has_nsfw_concepts": [false],
//	 "timings": {"inference": 0.42}}
//
// Upscale (M4): {"images": [{...}], "upscale_factor": 2, "input": {"width": w, "height": h},
// "seed": s (when settings.seed is sent), "timings": {...}}.
//
// Eye mask (M6): one mask image holding every kept detection:
//
//	{"masks": [{"storage_key": "...", "width": W, "height": H, "content_type": "image/png",
//	            "file_size": n,
//	            "detections": [{"box": [x, y, w, h],        // both eye regions, padding included
//	                            "confidence": 0.93,
//	                            "face_box": [x, y, w, h],
//	                            "eyes": [{"side": "left", "center": [x, y], "box": [x, y, w, h],
//	                                      "localised": true}, {"side": "right", ...}]}]}],
//	 "detections": 1, "timings": {"inference": 0.05}}
//
// "left" and "right" are the viewer's. Boxes are pixels, [x, y, width, height], origin top left.
//
// # Logs and metrics
//
// Reporter.Log lines at "info" (what was asked, what was stored) and "warn" (cancelled after n
// of m steps). Result.Metrics: inference_seconds, steps (steps or bands done), megapixels
// (output), output_bytes, and per model upscale_factor (M4) or detections (M6).
package builtin
