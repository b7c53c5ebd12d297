package catalog

// The input contracts of the nine models, written once as Go field descriptions. The JSON
// Schema published in the OpenAPI documents and the validator are both derived from these.
// The catalogue file names a contract per model by its id (the "contract" key).

// SchedulerSetA is the scheduler value set of M2, M7, M8, M9 (`scheduler`) and M4
// (`settings.scheduler`).
var SchedulerSetA = []string{
	"DDIM", "DDIMScheduler", "DDPMScheduler", "DEISMultistepScheduler", "Default", "DPM++",
	"DPM++ 2M", "DPM++ 2M Beta", "DPM++ 2M Exponential", "DPM++ 2M Karras", "DPM++ 2M SDE",
	"DPM++ 2M SDE Beta", "DPM++ 2M SDE Exponential", "DPM++ 2M SDE Karras", "DPM++ 2M SDE Uniform",
	"DPM++ 2M Uniform", "DPM++ 3M", "DPM++ 3M Beta", "DPM++ 3M Exponential", "DPM++ 3M Karras",
	"DPM++ 3M SDE Uniform", "DPM++ 3M Uniform", "DPM++ Beta", "DPM++ Exponential", "DPM++ Karras",
	"DPM++ SDE", "DPM++ SDE Beta", "DPM++ SDE Exponential", "DPM++ SDE Karras", "DPM++ Uniform",
	"DPM++ Uniform Beta", "DPM++ Uniform Exponential", "DPM++ Uniform Karras",
	"DPMSolverMultistepInverse", "DPMSolverMultistepScheduler", "DPMSolverSinglestepScheduler",
	"EDMDPMSolverMultistepScheduler", "EDMEulerScheduler", "Euler", "Euler a", "Euler Beta",
	"Euler Exponential", "Euler Karras", "EulerAncestralDiscreteScheduler", "EulerDiscreteScheduler",
	"FlowMatchEulerDiscreteScheduler", "Heun", "HeunDiscreteScheduler", "Heun Karras",
	"IPNDMScheduler", "IPNDM Uniform", "IPNDM Uniform Beta", "IPNDM Uniform Exponential",
	"IPNDM Uniform Karras", "KDPM2AncestralDiscreteScheduler", "KDPM2DiscreteScheduler", "LCM",
	"LCMScheduler", "LMS", "LMSDiscreteScheduler", "LMS Karras", "PNDMScheduler", "TCDScheduler",
	"UniPC", "UniPC 2M", "UniPC 2M Karras", "UniPC 2M Uniform", "UniPC 3M", "UniPC 3M Karras",
	"UniPC 3M Uniform", "UniPC Karras", "UniPC Uniform", "UniPC Uniform Beta",
	"UniPC Uniform Exponential", "UniPC Uniform Karras",
}

// SchedulerSetB is the scheduler value set of M3.
var SchedulerSetB = []string{
	"DPM++ 2M Karras", "DPM++ SDE Karras", "DPM++ 2M SDE Exponential", "DPM++ 2M SDE Karras",
	"Euler", "Euler a", "Euler Trailing", "LCM", "DDIM", "DDPM", "PNDM", "UniPC",
}

// VocalLanguages is M5's settings.vocalLanguage list.
var VocalLanguages = []string{
	"unknown", "ar", "az", "bg", "bn", "ca", "cs", "da", "de", "el", "en", "es", "fa", "fi", "fr",
	"he", "hi", "hr", "ht", "hu", "id", "is", "it", "ja", "ko", "la", "lt", "ms", "ne", "nl", "no",
	"pa", "pl", "pt", "ro", "ru", "sa", "sk", "sr", "sv", "sw", "ta", "te", "th", "tl", "tr", "uk",
	"ur", "vi", "yue", "zh",
}

// WatermarkPositions are the values of advancedFeatures.watermark.displayPosition.
var WatermarkPositions = []string{
	"top-left", "top-center", "top-right", "center-left", "center-center", "center-right",
	"bottom-left", "bottom-center", "bottom-right", "tiled",
}

// ControlNetModelsM8 and ControlNetModelsM9 are the controlNet[].model enums.
var (
	ControlNetModelsM8 = []string{
		"svc-serverless:25@1", "svc-serverless:26@1", "svc-serverless:27@1", "svc-serverless:28@1",
		"svc-serverless:29@1", "svc-serverless:30@1", "svc-serverless:31@1", "svc-serverless:98@1",
	}
	ControlNetModelsM9 = []string{"svc-serverless:z-image@turbo-controlnet"}
	IPAdapterModels    = []string{"svc-serverless:56@1", "svc-serverless:56@2", "svc-serverless:56@3", "svc-serverless:56@4"}
	// HiresFixModels are the upscale models of hiresFix (each 4x), ids exactly as published.
	HiresFixModels = []string{"serverless:504@1", "serverless:realesrgan@anime-6b", "serverless:esrgan@animesharp", "serverless:esrgan@ultrasharp"}
)

// M3SizePairs is M3's list of allowed width x height pairs.
var M3SizePairs = [][2]int64{{1024, 1024}, {640, 1408}, {1408, 640}, {768, 1280}, {1280, 768}, {896, 1152}, {1152, 896}}

const (
	seedMax   = "9223372036854775807"
	seedMaxM5 = "2147483647"
	hexColour = `^#([0-9A-Fa-f]{3}|[0-9A-Fa-f]{4}|[0-9A-Fa-f]{6}|[0-9A-Fa-f]{8})$`
	keyScale  = `^[A-G](#|b|♯|♭)? (major|minor|ionian|dorian|phrygian|lydian|mixolydian|aeolian|locrian)$`
)

func seedField(name, max string) *field {
	f := integer(name).between("0", max)
	f.randomSeed = true
	return f
}

func outputFields(formats []string, def string) []*field {
	return []*field{
		str("outputType").oneOf("URL").dflt("URL"),
		str("outputFormat").strings(formats).dflt(def),
	}
}

func imageOutputFields() []*field {
	return append(outputFields([]string{"JPG", "PNG", "WEBP"}, "JPG"),
		integer("outputQuality").between("20", "99").dflt(int64(95)))
}

func watermarkField() *field {
	return object("watermark",
		str("text").length(2, 32),
		urlField("image"),
		str("displayPosition").strings(WatermarkPositions),
		number("opacity").between("0.1", "1"),
		str("fontColor").match(hexColour).doc("Hex colour, e.g. #RRGGBB."),
		str("bgColor").match(hexColour).doc("Hex colour, e.g. #RRGGBB."),
	).doc("Exactly one of text or image.")
}

func loraField() *field {
	return array("lora", object("",
		str("model").doc("LoRA identifier."),
		number("weight").between("-4", "4").dflt(int64(1)).doc("0 means no influence."),
	)).doc("At least 1 item; every item has model.")
}

func acceleratorField(fb bool) *field {
	fs := []*field{
		integer("cacheStartStep").between("0", "").doc("Less than cacheEndStep."),
		integer("cacheEndStep").between("1", "").doc("Greater than cacheStartStep, at most steps."),
		integer("cacheStartStepPercentage").between("0", "99").doc("Less than cacheEndStepPercentage."),
		integer("cacheEndStepPercentage").between("1", "100").doc("Greater than cacheStartStepPercentage."),
		integer("cacheMaxConsecutiveSteps").between("1", "5").dflt(int64(3)),
		boolean("teaCache"),
		number("teaCacheDistance").between("0", "1").dflt(0.5).doc("Lower favours quality."),
		boolean("dbCache"),
		number("dbCacheThreshold").between("0", "1").dflt(0.25),
		integer("dbCacheSkipInterval").between("1", "").dflt(int64(5)),
	}
	if fb {
		fs = append(fs, boolean("fbCache"), number("fbCacheThreshold").between("0", "1").dflt(0.25))
	}
	return object("acceleratorOptions", fs...)
}

// sharedImageFields are the shared image options: output, safety, watermark, lora, accelerator.
func sharedImageFields(fb bool, extraAdvanced ...*field) []*field {
	fs := imageOutputFields()
	check := boolean("checkContent").dflt(true)
	check.forceTrue = true
	adv := append([]*field{watermarkField()}, extraAdvanced...)
	return append(fs,
		object("safety", check),
		object("advancedFeatures", adv...),
		loraField(),
		acceleratorField(fb),
	)
}

func ultralyticsField() *field {
	return object("ultralytics",
		number("CFGScale").between("0", "50").dflt(int64(8)),
		number("confidence").between("0", "1").dflt(0.9),
		integer("inpaintSize").between("128", "2048").dflt(int64(1024)),
		integer("maskBlur").between("0", "100").dflt(int64(5)),
		integer("maskPadding").between("0", "20").dflt(int64(5)),
		str("negativePrompt"),
		str("positivePrompt"),
		integer("steps").between("1", "100").dflt(int64(20)),
		number("strength").between("0", "1").dflt(0.3),
	).doc("Face refinement.")
}

func sizeFields(lo, hi string) []*field {
	return []*field{
		integer("width").between(lo, hi).dflt(int64(1024)).doc("Sent together with height, or neither (1024x1024)."),
		integer("height").between(lo, hi).dflt(int64(1024)).doc("Sent together with width, or neither (1024x1024)."),
	}
}

func inpaintFields() []*field {
	return []*field{
		number("strength").between("0", "1").dflt(0.8).with("inputs.seedImage").doc("Needs inputs.seedImage."),
		integer("maskMargin").between("32", "128"),
		object("outpaint",
			integer("top").between("0", ""),
			integer("bottom").between("0", ""),
			integer("left").between("0", ""),
			integer("right").between("0", ""),
			integer("blur").between("0", "32"),
		).doc("At least one of top, bottom, left, right."),
	}
}

func controlNetField(models []string) *field {
	return array("controlNet", object("",
		str("model").strings(models),
		number("weight").between("-4", "4").dflt(int64(1)),
		urlField("guideImage"),
		str("controlMode").oneOf("balanced", "controlnet", "prompt").dflt("balanced"),
		integer("endStep").between("1", ""),
		integer("endStepPercentage").between("1", "100"),
		integer("startStep").between("0", ""),
		integer("startStepPercentage").between("0", "99"),
	)).doc("At least 1 item, each with model and guideImage.")
}

func promptFields(pLo, pHi, nLo, nHi int) []*field {
	return []*field{
		str("positivePrompt").req().length(pLo, pHi),
		str("negativePrompt").length(nLo, nHi).doc("Ignored when CFGScale is 1 or less."),
	}
}

func fields(groups ...[]*field) []*field {
	var out []*field
	for _, g := range groups {
		out = append(out, g...)
	}
	return out
}

func one(fs ...*field) []*field { return fs }

// contractM2 is M2's input; M1 is the same field set with steps 1-50 default 4 (DESIGN 15).
func contractM2(stepsDefault int64) *field {
	return object("",
		fields(
			one(object("inputs", array("referenceImages", urlField("")).count(1, 4))),
			promptFields(1, 10000, 1, 10000),
			sizeFields("128", "2048"),
			one(
				seedField("seed", seedMax),
				integer("steps").between("1", "50").dflt(stepsDefault),
				str("scheduler").strings(SchedulerSetA),
				number("CFGScale").between("1", "20").dflt(3.5),
				str("acceleration").oneOf("none", "low", "medium", "high").dflt("high").unless("acceleratorOptions").doc("Not sent together with acceleratorOptions."),
			),
			sharedImageFields(false),
		)...)
}

func contractM3() *field {
	return object("",
		fields(
			one(object("inputs", array("referenceImages", urlField("")).count(1, 1))),
			promptFields(2, 32000, 2, 3000),
			one(
				integer("width").between("1", "").dflt(int64(1024)).doc("Sent together with height; the pair is one of the published sizes."),
				integer("height").between("1", "").dflt(int64(1024)).doc("Sent together with width; the pair is one of the published sizes."),
				seedField("seed", seedMax),
				integer("steps").between("10", "50").dflt(int64(20)),
				str("scheduler").strings(SchedulerSetB),
				number("CFGScale").between("2", "10").dflt(int64(7)),
			),
			sharedImageFields(true),
		)...)
}

func contractM4() *field {
	return object("",
		fields(
			one(
				object("inputs", urlField("image").req()).req(),
				number("upscaleFactor").between("1", "4").dflt(int64(2)).doc("2 doubles width and height."),
				object("settings",
					str("positivePrompt"),
					str("negativePrompt").doc("Ignored when CFGScale is 1 or less."),
					seedField("seed", seedMax),
					integer("steps").between("1", ""),
					str("scheduler").strings(SchedulerSetA),
					number("CFGScale").between("0", ""),
					number("strength").between("0", "1").dflt(0.8),
					number("controlNetWeight").between("-4", "4").dflt(int64(1)),
				).always(),
			),
			imageOutputFields(),
		)...)
}

func contractM5() *field {
	return object("",
		fields(
			one(
				str("positivePrompt").req().length(2, 3000),
				object("inputs", urlField("audio").doc("Audio input: such a request has no price on this model and is refused.")),
				number("duration").between("30", "120").dflt(int64(60)).unless("inputs.audio").doc("Seconds of output."),
				seedField("seed", seedMaxM5),
				integer("steps").between("1", "20").dflt(int64(10)),
				number("strength").between("0", "1").dflt(0.5).with("inputs.audio").doc("Fraction of steps using the input source; needs inputs.audio."),
				object("settings",
					integer("bpm").between("30", "300"),
					str("keyScale").match(keyScale).doc("Note, optional accidental, space, mode, e.g. C major, F# minor."),
					str("lyrics").length(10, 3000),
					number("repaintingStart").between("-300", "300").doc("Seconds; negative prepends audio; needs inputs.audio."),
					number("repaintingEnd").between("0", "300").doc("Seconds; beyond the audio duration appends audio; needs inputs.audio."),
					integer("timeSignature").oneOf(int64(2), int64(3), int64(4), int64(6)),
					str("vocalLanguage").strings(VocalLanguages).dflt("en"),
				).always(),
			),
			outputFields([]string{"MP3", "WAV", "FLAC", "OGG"}, "MP3"),
			one(object("audioSettings",
				integer("bitrate").between("8", "").doc("kbps; bounds depend on outputFormat and sampleRate."),
				integer("channels").oneOf(int64(1), int64(2)).dflt(int64(2)),
				integer("sampleRate").between("1", "").doc("Hz; MP3 and OGG (Ogg Opus) each take a fixed list."),
			).doc("Not sent with WAV or FLAC.")),
		)...)
}

func contractM6() *field {
	return object("",
		fields(
			one(
				object("inputs", urlField("image").req()).req(),
				object("settings",
					number("confidence").between("0", "1").dflt(0.5).doc("Only detections above it are kept."),
					integer("maxDetections").between("1", "20").dflt(int64(6)),
					integer("maskPadding").between("0", "200").dflt(int64(10)),
					integer("maskBlur").between("0", "100").dflt(int64(5)),
				).always(),
			),
			outputFields([]string{"JPG", "PNG", "WEBP"}, "JPG"),
		)...)
}

func contractM7() *field {
	return object("",
		fields(
			one(object("inputs", array("referenceImages", urlField("")).count(1, 1).req()).req()),
			promptFields(1, 32000, 1, 32000),
			sizeFields("128", "2048"),
			one(
				seedField("seed", seedMax),
				integer("steps").between("1", "100").dflt(int64(8)),
				str("scheduler").strings(SchedulerSetA),
				number("CFGScale").between("1", "20"),
				object("settings", number("trueCFGScale")),
			),
			sharedImageFields(true),
			one(ultralyticsField()),
		)...)
}

func contractM8() *field {
	hires := newField("hiresFix", tTrueOrObject)
	hires.fields = []*field{
		str("model").req().strings(HiresFixModels),
		integer("steps").between("1", ""),
		number("strength").between("0", "1"),
	}
	hires.desc = "true, or an object naming the upscale model (each 4x)."
	return object("",
		fields(
			one(
				integer("steps").between("1", "100").dflt(int64(28)),
				object("inputs", urlField("seedImage"), urlField("maskImage").doc("White marks the area to edit, black is preserved.")),
			),
			promptFields(2, 3000, 2, 3000),
			sizeFields("128", "2048"),
			one(
				seedField("seed", seedMax),
				str("scheduler").strings(SchedulerSetA),
				number("CFGScale").between("0", "20"),
			),
			inpaintFields(),
			one(
				str("promptWeighting").oneOf("sdEmbeds").doc("(text), (text:number) raise and [text] lowers attention."),
				controlNetField(ControlNetModelsM8),
				array("ipAdapters", object("",
					str("model").strings(IPAdapterModels),
					number("weight").between("-4", "4").dflt(int64(1)),
					array("guideImages", urlField("")).count(1, 0),
				)).doc("At least 1 item, each with model and guideImages."),
				hires,
				object("pulid",
					integer("CFGstartStep").between("0", ""),
					integer("CFGstartStepPercentage").between("0", "99"),
					number("idWeight").between("0", "3").dflt(int64(1)),
					array("images", urlField("")).count(1, 1),
					number("trueCFGScale").between("0", "10"),
				).doc("images required; CFGstartStep and CFGstartStepPercentage not both."),
				number("trueCFGScale"),
				ultralyticsField(),
			),
			sharedImageFields(false, boolean("layerDiffuse").doc("Transparent output; needs outputFormat PNG.")),
		)...)
}

func contractM9() *field {
	return object("",
		fields(
			one(object("inputs", urlField("seedImage"), urlField("maskImage").doc("White marks the area to edit, black is preserved."))),
			promptFields(2, 10000, 2, 3000),
			sizeFields("128", "2048"),
			one(
				seedField("seed", seedMax),
				integer("steps").between("1", "50").dflt(int64(8)),
				str("scheduler").strings(SchedulerSetA),
				number("CFGScale").between("0", "20"),
			),
			inpaintFields(),
			one(controlNetField(ControlNetModelsM9), ultralyticsField()),
			sharedImageFields(true),
		)...)
}

// contract is one model's input contract: its fields, its cross-field rules, and the checks
// that refuse a request as unpriced before the rules are judged.
type contract struct {
	id       string
	root     *field
	rules    []rule
	unpriced func(sent map[string]any) string // "" when priced
}

// idempotencyKey is the one top-level field every model accepts and leaves to the caller.
const idempotencyKey = "idempotency_key"

func contracts() map[string]*contract {
	imageRules := func(withAcceleration, fb bool, extra ...rule) []rule {
		rs := []rule{ruleSizePair}
		if withAcceleration {
			rs = append(rs, ruleAccelerationExclusive)
		}
		rs = append(rs, acceleratorRules(fb)...)
		rs = append(rs, ruleLora, ruleWatermark)
		return append(rs, extra...)
	}
	inpaint := []rule{ruleSeedImage, ruleOutpaint, ruleControlNet}
	cs := []*contract{
		{id: "image-9b-kv", root: contractM2(4), rules: imageRules(true, false)},
		{id: "image-4b", root: contractM2(28), rules: imageRules(true, false)},
		{id: "image-lite", root: contractM3(), rules: imageRules(false, true, ruleM3Pairs)},
		{id: "upscale", root: contractM4()},
		{id: "music-turbo", root: contractM5(), rules: musicRules, unpriced: musicUnpriced},
		{id: "eye-mask", root: contractM6()},
		{id: "image-edit", root: contractM7(), rules: imageRules(false, true)},
		{id: "image-dev", root: contractM8(), rules: imageRules(false, false, append(inpaint, ruleIPAdapters, rulePulid, ruleLayerDiffuse)...)},
		{id: "image-turbo", root: contractM9(), rules: imageRules(false, true, inpaint...)},
	}
	out := make(map[string]*contract, len(cs))
	for _, c := range cs {
		out[c.id] = c
	}
	return out
}
