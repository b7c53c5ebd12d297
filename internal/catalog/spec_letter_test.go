package catalog

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The tables of this file restate the spec's input tables and rules (spec 01 §Conventions for
// input fields, §Shared image options, §Scheduler value sets, §Input of M2..M9, DESIGN 10, 14-18)
// by hand, one request per case, each case named after the requirement id it proves. They
// judge the validator from the outside (Validate on a request body), so a contract description
// that drifts from the spec's letter fails here even though the schema and the validator
// still agree with each other.

// letterCase is one request judged against the spec's letter.
//
// body is a JSON object merged over the model's base body (baseBodies); a body starting with
// '=' replaces the base body. "@sN" as a JSON string stands for a string of N characters.
//
// want is one of:
//
//	ok [path=json ...]   accepted with no warning; each path (dots, array indexes as numbers)
//	                     holds that JSON value in the filled input ("-": absent)
//	refuse loc type      refused before any rule with a violation of that type at loc
//	rule id loc          structurally accepted; rule id warned at loc before the enforcement
//	                     date, refused (cross_field) from it on
//	unpriced             refused as *NotPricedError (band_not_priced) before any rule
type letterCase struct {
	id, slug, body, want string
}

const (
	u  = `"https://h.example/a.png"`
	u2 = `"https://h.example/b.png"`
)

var letterCases = []letterCase{
	// Conventions for input fields.
	{"IN-SHARED-01", "upscale", `{"settings":{"seed":5}}`, "ok settings.seed=5"},
	{"IN-SHARED-01", "upscale", `{"settings.seed":5}`, "refuse body.settings.seed extra_forbidden"},
	{"IN-SHARED-01", "image-4b", `{"lora":[{"model":"a"},{"model":"b","weight":2}]}`, "ok lora.0.model=\"a\" lora.0.weight=1 lora.1.weight=2"},
	{"IN-SHARED-01", "image-4b", `{"lora[].model":"a"}`, "refuse body.lora[].model extra_forbidden"},
	{"IN-SHARED-02", "upscale", `{"inputs":{"image":"http://h.example/a.png"}}`, "ok"},
	{"IN-SHARED-02", "upscale", `{"inputs":{"image":"file:///tmp/a.png"}}`, "refuse body.inputs.image url_type"},
	{"IN-SHARED-02", "upscale", `{"inputs":{"image":"/tmp/a.png"}}`, "refuse body.inputs.image url_type"},
	{"IN-SHARED-02", "upscale", `{"inputs":{"image":"ftp://h.example/a.png"}}`, "refuse body.inputs.image url_type"},
	{"IN-SHARED-02", "image-edit", `{"inputs":{"referenceImages":["a.png"]}}`, "refuse body.inputs.referenceImages.0 url_type"},
	{"IN-SHARED-03", "image-4b", `{}`, "ok seed=4294967295"},
	{"IN-SHARED-03", "image-9b-kv", `{}`, "ok seed=4294967295"},
	{"IN-SHARED-03", "upscale", `{}`, "ok settings.seed=4294967295"},
	{"IN-SHARED-03", "music-turbo", `{}`, "ok seed=2147483647"},
	{"IN-SHARED-03", "eye-mask", `{}`, "ok seed=- settings.seed=-"},
	{"IN-SHARED-04", "image-9b-kv", `{"seed":9223372036854775807}`, "ok seed=9223372036854775807"},
	{"IN-SHARED-04", "image-4b", `{"seed":0}`, "ok seed=0"},
	{"IN-SHARED-04", "image-4b", `{"seed":9223372036854775808}`, "refuse body.seed less_than_equal"},
	{"IN-SHARED-04", "image-4b", `{"seed":-1}`, "refuse body.seed greater_than_equal"},
	{"IN-SHARED-04", "image-lite", `{"seed":9223372036854775807}`, "ok"},
	{"IN-SHARED-04", "image-lite", `{"seed":9223372036854775808}`, "refuse body.seed less_than_equal"},
	{"IN-SHARED-04", "image-edit", `{"seed":9223372036854775807}`, "ok"},
	{"IN-SHARED-04", "image-dev", `{"seed":9223372036854775808}`, "refuse body.seed less_than_equal"},
	{"IN-SHARED-04", "image-turbo", `{"seed":9223372036854775807}`, "ok"},
	{"IN-SHARED-04", "upscale", `{"settings":{"seed":9223372036854775807}}`, "ok"},
	{"IN-SHARED-04", "upscale", `{"settings":{"seed":9223372036854775808}}`, "refuse body.settings.seed less_than_equal"},
	{"IN-SHARED-04", "music-turbo", `{"seed":2147483647}`, "ok seed=2147483647"},
	{"IN-SHARED-04", "music-turbo", `{"seed":2147483648}`, "refuse body.seed less_than_equal"},
	{"IN-SHARED-04", "image-4b", `{"seed":1.5}`, "refuse body.seed int_from_float"},
	{"IN-SHARED-05", "image-turbo", `{"CFGScale":1,"negativePrompt":"blurry"}`, "ok negativePrompt=-"},
	{"IN-SHARED-05", "image-turbo", `{"CFGScale":0.5,"negativePrompt":"blurry"}`, "ok negativePrompt=-"},
	{"IN-SHARED-05", "image-turbo", `{"CFGScale":1.01,"negativePrompt":"blurry"}`, "ok negativePrompt=\"blurry\""},
	{"IN-SHARED-05", "image-4b", `{"CFGScale":1,"negativePrompt":"blurry"}`, "ok negativePrompt=-"},
	{"IN-SHARED-05", "image-4b", `{"negativePrompt":"blurry"}`, "ok negativePrompt=\"blurry\""},
	{"IN-SHARED-05", "upscale", `{"settings":{"CFGScale":1,"negativePrompt":"blurry"}}`, "ok settings.negativePrompt=-"},
	{"IN-SHARED-06", "image-4b", `{"steps":"28"}`, "refuse body.steps int_type"},
	{"IN-SHARED-06", "image-4b", `{"steps":28.5}`, "refuse body.steps int_from_float"},
	{"IN-SHARED-06", "image-4b", `{"CFGScale":"3"}`, "refuse body.CFGScale float_type"},
	{"IN-SHARED-06", "image-4b", `{"positivePrompt":7}`, "refuse body.positivePrompt string_type"},
	{"IN-SHARED-06", "image-4b", `{"acceleration":"max"}`, "refuse body.acceleration enum"},
	{"IN-SHARED-06", "image-4b", `{"safety":{"checkContent":"yes"}}`, "refuse body.safety.checkContent bool_type"},
	// Shared image options.
	{"IN-SHARED-07", "image-4b", `{}`, "ok outputType=\"URL\""},
	{"IN-SHARED-07", "image-lite", `{}`, "ok outputType=\"URL\""},
	{"IN-SHARED-07", "image-edit", `{}`, "ok outputType=\"URL\""},
	{"IN-SHARED-07", "image-dev", `{}`, "ok outputType=\"URL\""},
	{"IN-SHARED-07", "image-turbo", `{"outputType":"URL"}`, "ok outputType=\"URL\""},
	{"IN-SHARED-07", "image-4b", `{"outputType":"base64Data"}`, "refuse body.outputType enum"},
	{"IN-SHARED-07", "image-4b", `{"outputType":"url"}`, "refuse body.outputType enum"},
	{"IN-SHARED-08", "image-4b", `{}`, "ok outputFormat=\"JPG\""},
	{"IN-SHARED-08", "image-lite", `{"outputFormat":"PNG"}`, "ok outputFormat=\"PNG\""},
	{"IN-SHARED-08", "image-edit", `{"outputFormat":"WEBP"}`, "ok outputFormat=\"WEBP\""},
	{"IN-SHARED-08", "image-dev", `{"outputFormat":"JPEG"}`, "refuse body.outputFormat enum"},
	{"IN-SHARED-08", "image-turbo", `{"outputFormat":"jpg"}`, "refuse body.outputFormat enum"},
	{"IN-SHARED-08", "image-4b", `{"outputFormat":"GIF"}`, "refuse body.outputFormat enum"},
	{"IN-SHARED-09", "image-4b", `{}`, "ok outputQuality=95"},
	{"IN-SHARED-09", "image-turbo", `{"outputQuality":20}`, "ok outputQuality=20"},
	{"IN-SHARED-09", "image-turbo", `{"outputQuality":99}`, "ok"},
	{"IN-SHARED-09", "image-turbo", `{"outputQuality":19}`, "refuse body.outputQuality greater_than_equal"},
	{"IN-SHARED-09", "image-turbo", `{"outputQuality":100}`, "refuse body.outputQuality less_than_equal"},
	{"IN-SHARED-09", "image-lite", `{"outputQuality":95.5}`, "refuse body.outputQuality int_from_float"},
	{"IN-SHARED-10", "image-4b", `{"safety":{"checkContent":false}}`, "ok safety.checkContent=true"},
	{"IN-SHARED-10", "image-dev", `{"safety":{"checkContent":true}}`, "ok safety.checkContent=true"},
	{"IN-SHARED-10", "image-turbo", `{"safety":{}}`, "ok safety.checkContent=true"},
	{"IN-SHARED-11", "image-4b", `{"advancedFeatures":{"watermark":{"text":"ab"}}}`, "ok"},
	{"IN-SHARED-11", "image-4b", `{"advancedFeatures":{"watermark":{"text":"@s32"}}}`, "ok"},
	{"IN-SHARED-11", "image-4b", `{"advancedFeatures":{"watermark":{"text":"a"}}}`, "refuse body.advancedFeatures.watermark.text string_too_short"},
	{"IN-SHARED-11", "image-4b", `{"advancedFeatures":{"watermark":{"text":"@s33"}}}`, "refuse body.advancedFeatures.watermark.text string_too_long"},
	{"IN-SHARED-11", "image-edit", `{"advancedFeatures":{"watermark":{"image":` + u + `}}}`, "ok"},
	{"IN-SHARED-11", "image-edit", `{"advancedFeatures":{"watermark":{"image":"logo.png"}}}`, "refuse body.advancedFeatures.watermark.image url_type"},
	{"IN-SHARED-12", "image-lite", `{"advancedFeatures":{"watermark":{"text":"ab","displayPosition":"center"}}}`, "refuse body.advancedFeatures.watermark.displayPosition enum"},
	{"IN-SHARED-12", "image-lite", `{"advancedFeatures":{"watermark":{"text":"ab","displayPosition":"Top-Left"}}}`, "refuse body.advancedFeatures.watermark.displayPosition enum"},
	{"IN-SHARED-12", "image-lite", `{"advancedFeatures":{"watermark":{"text":"ab","displayPosition":"top_left"}}}`, "refuse body.advancedFeatures.watermark.displayPosition enum"},
	{"IN-SHARED-13", "image-dev", `{"advancedFeatures":{"watermark":{"text":"ab","opacity":0.1}}}`, "ok"},
	{"IN-SHARED-13", "image-dev", `{"advancedFeatures":{"watermark":{"text":"ab","opacity":1}}}`, "ok"},
	{"IN-SHARED-13", "image-dev", `{"advancedFeatures":{"watermark":{"text":"ab","opacity":0.09}}}`, "refuse body.advancedFeatures.watermark.opacity greater_than_equal"},
	{"IN-SHARED-13", "image-dev", `{"advancedFeatures":{"watermark":{"text":"ab","opacity":1.01}}}`, "refuse body.advancedFeatures.watermark.opacity less_than_equal"},
	{"IN-SHARED-14", "image-turbo", `{"advancedFeatures":{"watermark":{"text":"ab","fontColor":"#FF00aa","bgColor":"#000"}}}`, "ok"},
	{"IN-SHARED-14", "image-turbo", `{"advancedFeatures":{"watermark":{"text":"ab","fontColor":"red"}}}`, "refuse body.advancedFeatures.watermark.fontColor string_pattern_mismatch"},
	{"IN-SHARED-14", "image-turbo", `{"advancedFeatures":{"watermark":{"text":"ab","bgColor":"#12345"}}}`, "refuse body.advancedFeatures.watermark.bgColor string_pattern_mismatch"},
	{"IN-SHARED-14", "image-turbo", `{"advancedFeatures":{"watermark":{"text":"ab","bgColor":"#GG0000"}}}`, "refuse body.advancedFeatures.watermark.bgColor string_pattern_mismatch"},
	{"IN-SHARED-15", "image-4b", `{"advancedFeatures":{"watermark":{"opacity":0.5}}}`, "rule watermark_source body.advancedFeatures.watermark"},
	{"IN-SHARED-15", "image-4b", `{"advancedFeatures":{"watermark":{"text":"ab","image":` + u + `}}}`, "rule watermark_source body.advancedFeatures.watermark"},
	{"IN-SHARED-16", "image-4b", `{"lora":[{"model":"a","weight":-4},{"model":"b","weight":4},{"model":"c","weight":0}]}`, "ok lora.2.weight=0"},
	{"IN-SHARED-16", "image-4b", `{"lora":[{"model":"a","weight":-4.01}]}`, "refuse body.lora.0.weight greater_than_equal"},
	{"IN-SHARED-16", "image-4b", `{"lora":[{"model":"a","weight":4.01}]}`, "refuse body.lora.0.weight less_than_equal"},
	{"IN-SHARED-16", "image-4b", `{"lora":[{"model":1}]}`, "refuse body.lora.0.model string_type"},
	{"IN-SHARED-17", "image-4b", `{"lora":[]}`, "rule lora_items body.lora"},
	{"IN-SHARED-17", "image-4b", `{"lora":[{"weight":1}]}`, "rule lora_items body.lora.0.model"},
	{"IN-SHARED-18", "image-4b", `{"acceleratorOptions":{"cacheStartStep":0,"cacheEndStep":1}}`, "ok"},
	{"IN-SHARED-18", "image-4b", `{"acceleratorOptions":{"cacheStartStep":-1}}`, "refuse body.acceleratorOptions.cacheStartStep greater_than_equal"},
	{"IN-SHARED-18", "image-4b", `{"acceleratorOptions":{"cacheStartStep":4,"cacheEndStep":4}}`, "rule cache_step_order body.acceleratorOptions.cacheStartStep"},
	{"IN-SHARED-19", "image-4b", `{"acceleratorOptions":{"cacheEndStep":0}}`, "refuse body.acceleratorOptions.cacheEndStep greater_than_equal"},
	{"IN-SHARED-19", "image-4b", `{"acceleratorOptions":{"cacheEndStep":28}}`, "ok"},
	{"IN-SHARED-19", "image-4b", `{"acceleratorOptions":{"cacheEndStep":29}}`, "rule cache_end_within_steps body.acceleratorOptions.cacheEndStep"},
	{"IN-SHARED-19", "image-turbo", `{"acceleratorOptions":{"cacheEndStep":9}}`, "rule cache_end_within_steps body.acceleratorOptions.cacheEndStep"},
	{"IN-SHARED-19", "image-turbo", `{"steps":20,"acceleratorOptions":{"cacheEndStep":20}}`, "ok"},
	{"IN-SHARED-20", "image-lite", `{"acceleratorOptions":{"cacheStartStepPercentage":0}}`, "ok"},
	{"IN-SHARED-20", "image-lite", `{"acceleratorOptions":{"cacheStartStepPercentage":99}}`, "ok"},
	{"IN-SHARED-20", "image-lite", `{"acceleratorOptions":{"cacheStartStepPercentage":100}}`, "refuse body.acceleratorOptions.cacheStartStepPercentage less_than_equal"},
	{"IN-SHARED-20", "image-lite", `{"acceleratorOptions":{"cacheStartStepPercentage":-1}}`, "refuse body.acceleratorOptions.cacheStartStepPercentage greater_than_equal"},
	{"IN-SHARED-20", "image-lite", `{"acceleratorOptions":{"cacheStartStepPercentage":60,"cacheEndStepPercentage":50}}`, "rule cache_percentage_order body.acceleratorOptions.cacheStartStepPercentage"},
	{"IN-SHARED-21", "image-lite", `{"acceleratorOptions":{"cacheStartStepPercentage":99,"cacheEndStepPercentage":100}}`, "ok"},
	{"IN-SHARED-21", "image-lite", `{"acceleratorOptions":{"cacheEndStepPercentage":1}}`, "ok"},
	{"IN-SHARED-21", "image-lite", `{"acceleratorOptions":{"cacheEndStepPercentage":0}}`, "refuse body.acceleratorOptions.cacheEndStepPercentage greater_than_equal"},
	{"IN-SHARED-21", "image-lite", `{"acceleratorOptions":{"cacheEndStepPercentage":101}}`, "refuse body.acceleratorOptions.cacheEndStepPercentage less_than_equal"},
	{"IN-SHARED-22", "image-edit", `{"acceleratorOptions":{}}`, "ok acceleratorOptions.cacheMaxConsecutiveSteps=3"},
	{"IN-SHARED-22", "image-edit", `{"acceleratorOptions":{"cacheMaxConsecutiveSteps":1}}`, "ok"},
	{"IN-SHARED-22", "image-edit", `{"acceleratorOptions":{"cacheMaxConsecutiveSteps":5}}`, "ok"},
	{"IN-SHARED-22", "image-edit", `{"acceleratorOptions":{"cacheMaxConsecutiveSteps":0}}`, "refuse body.acceleratorOptions.cacheMaxConsecutiveSteps greater_than_equal"},
	{"IN-SHARED-22", "image-edit", `{"acceleratorOptions":{"cacheMaxConsecutiveSteps":6}}`, "refuse body.acceleratorOptions.cacheMaxConsecutiveSteps less_than_equal"},
	{"IN-SHARED-23", "image-dev", `{"acceleratorOptions":{"teaCache":true}}`, "ok acceleratorOptions.teaCacheDistance=0.5"},
	{"IN-SHARED-23", "image-dev", `{"acceleratorOptions":{"teaCache":"true"}}`, "refuse body.acceleratorOptions.teaCache bool_type"},
	{"IN-SHARED-23", "image-dev", `{"acceleratorOptions":{"teaCacheDistance":0}}`, "ok"},
	{"IN-SHARED-23", "image-dev", `{"acceleratorOptions":{"teaCacheDistance":1}}`, "ok"},
	{"IN-SHARED-23", "image-dev", `{"acceleratorOptions":{"teaCacheDistance":1.01}}`, "refuse body.acceleratorOptions.teaCacheDistance less_than_equal"},
	{"IN-SHARED-23", "image-dev", `{"acceleratorOptions":{"teaCacheDistance":-0.01}}`, "refuse body.acceleratorOptions.teaCacheDistance greater_than_equal"},
	{"IN-SHARED-24", "image-9b-kv", `{"acceleratorOptions":{"dbCache":true}}`, "ok acceleratorOptions.dbCacheThreshold=0.25 acceleratorOptions.dbCacheSkipInterval=5"},
	{"IN-SHARED-24", "image-9b-kv", `{"acceleratorOptions":{"dbCache":1}}`, "refuse body.acceleratorOptions.dbCache bool_type"},
	{"IN-SHARED-24", "image-9b-kv", `{"acceleratorOptions":{"dbCacheThreshold":0,"dbCacheSkipInterval":1}}`, "ok"},
	{"IN-SHARED-24", "image-9b-kv", `{"acceleratorOptions":{"dbCacheThreshold":1,"dbCacheSkipInterval":1000}}`, "ok"},
	{"IN-SHARED-24", "image-9b-kv", `{"acceleratorOptions":{"dbCacheThreshold":1.01}}`, "refuse body.acceleratorOptions.dbCacheThreshold less_than_equal"},
	{"IN-SHARED-24", "image-9b-kv", `{"acceleratorOptions":{"dbCacheSkipInterval":0}}`, "refuse body.acceleratorOptions.dbCacheSkipInterval greater_than_equal"},
	{"IN-SHARED-25", "image-lite", `{"acceleratorOptions":{"fbCache":true}}`, "ok acceleratorOptions.fbCacheThreshold=0.25"},
	{"IN-SHARED-25", "image-edit", `{"acceleratorOptions":{"fbCache":true,"fbCacheThreshold":1}}`, "ok"},
	{"IN-SHARED-25", "image-turbo", `{"acceleratorOptions":{"fbCacheThreshold":0}}`, "ok"},
	{"IN-SHARED-25", "image-turbo", `{"acceleratorOptions":{"fbCacheThreshold":1.01}}`, "refuse body.acceleratorOptions.fbCacheThreshold less_than_equal"},
	{"IN-SHARED-25", "image-9b-kv", `{"acceleratorOptions":{"fbCache":true}}`, "refuse body.acceleratorOptions.fbCache extra_forbidden"},
	{"IN-SHARED-25", "image-4b", `{"acceleratorOptions":{"fbCacheThreshold":0.3}}`, "refuse body.acceleratorOptions.fbCacheThreshold extra_forbidden"},
	{"IN-SHARED-25", "image-dev", `{"acceleratorOptions":{"fbCache":true}}`, "refuse body.acceleratorOptions.fbCache extra_forbidden"},
	{"IN-SHARED-26", "image-edit", `{"ultralytics":{}}`, "ok ultralytics.CFGScale=8 ultralytics.confidence=0.9"},
	{"IN-SHARED-26", "image-dev", `{"ultralytics":{"CFGScale":0,"confidence":0}}`, "ok"},
	{"IN-SHARED-26", "image-turbo", `{"ultralytics":{"CFGScale":50,"confidence":1}}`, "ok"},
	{"IN-SHARED-26", "image-turbo", `{"ultralytics":{"CFGScale":50.01}}`, "refuse body.ultralytics.CFGScale less_than_equal"},
	{"IN-SHARED-26", "image-turbo", `{"ultralytics":{"CFGScale":-0.01}}`, "refuse body.ultralytics.CFGScale greater_than_equal"},
	{"IN-SHARED-26", "image-turbo", `{"ultralytics":{"confidence":1.01}}`, "refuse body.ultralytics.confidence less_than_equal"},
	{"IN-SHARED-26", "image-4b", `{"ultralytics":{}}`, "refuse body.ultralytics extra_forbidden"},
	{"IN-SHARED-26", "image-lite", `{"ultralytics":{}}`, "refuse body.ultralytics extra_forbidden"},
	{"IN-SHARED-27", "image-edit", `{"ultralytics":{}}`, "ok ultralytics.inpaintSize=1024"},
	{"IN-SHARED-27", "image-edit", `{"ultralytics":{"inpaintSize":128}}`, "ok"},
	{"IN-SHARED-27", "image-edit", `{"ultralytics":{"inpaintSize":2048}}`, "ok"},
	{"IN-SHARED-27", "image-edit", `{"ultralytics":{"inpaintSize":127}}`, "refuse body.ultralytics.inpaintSize greater_than_equal"},
	{"IN-SHARED-27", "image-edit", `{"ultralytics":{"inpaintSize":2049}}`, "refuse body.ultralytics.inpaintSize less_than_equal"},
	{"IN-SHARED-28", "image-dev", `{"ultralytics":{}}`, "ok ultralytics.maskBlur=5 ultralytics.maskPadding=5"},
	{"IN-SHARED-28", "image-dev", `{"ultralytics":{"maskBlur":0,"maskPadding":0}}`, "ok"},
	{"IN-SHARED-28", "image-dev", `{"ultralytics":{"maskBlur":100,"maskPadding":20}}`, "ok"},
	{"IN-SHARED-28", "image-dev", `{"ultralytics":{"maskBlur":101}}`, "refuse body.ultralytics.maskBlur less_than_equal"},
	{"IN-SHARED-28", "image-dev", `{"ultralytics":{"maskPadding":21}}`, "refuse body.ultralytics.maskPadding less_than_equal"},
	{"IN-SHARED-28", "image-dev", `{"ultralytics":{"maskPadding":-1}}`, "refuse body.ultralytics.maskPadding greater_than_equal"},
	{"IN-SHARED-29", "image-turbo", `{"ultralytics":{"positivePrompt":"a sharp face","negativePrompt":"blur"}}`, "ok ultralytics.positivePrompt=\"a sharp face\""},
	{"IN-SHARED-29", "image-turbo", `{"ultralytics":{"positivePrompt":1}}`, "refuse body.ultralytics.positivePrompt string_type"},
	{"IN-SHARED-29", "image-turbo", `{"ultralytics":{"negativePrompt":true}}`, "refuse body.ultralytics.negativePrompt string_type"},
	{"IN-SHARED-30", "image-turbo", `{"ultralytics":{}}`, "ok ultralytics.steps=20 ultralytics.strength=0.3"},
	{"IN-SHARED-30", "image-turbo", `{"ultralytics":{"steps":1,"strength":1}}`, "ok"},
	{"IN-SHARED-30", "image-turbo", `{"ultralytics":{"steps":100}}`, "ok"},
	{"IN-SHARED-30", "image-turbo", `{"ultralytics":{"steps":0}}`, "refuse body.ultralytics.steps greater_than_equal"},
	{"IN-SHARED-30", "image-turbo", `{"ultralytics":{"steps":101}}`, "refuse body.ultralytics.steps less_than_equal"},
	{"IN-SHARED-30", "image-turbo", `{"ultralytics":{"strength":1.01}}`, "refuse body.ultralytics.strength less_than_equal"},
	{"IN-SHARED-31", "image-dev", `{"inputs":{"seedImage":` + u + `,"maskImage":` + u2 + `}}`, "ok"},
	{"IN-SHARED-31", "image-turbo", `{"inputs":{"seedImage":` + u + `}}`, "ok inputs.maskImage=-"},
	{"IN-SHARED-31", "image-turbo", `{"inputs":{"seedImage":"a.png"}}`, "refuse body.inputs.seedImage url_type"},
	{"IN-SHARED-31", "image-dev", `{"inputs":{"seedImage":` + u + `,"maskImage":"mask"}}`, "refuse body.inputs.maskImage url_type"},
	{"IN-SHARED-31", "image-4b", `{"inputs":{"seedImage":` + u + `}}`, "refuse body.inputs.seedImage extra_forbidden"},
	{"IN-SHARED-32", "image-dev", `{"inputs":{"seedImage":` + u + `}}`, "ok strength=0.8"},
	{"IN-SHARED-32", "image-turbo", `{"inputs":{"seedImage":` + u + `},"strength":0}`, "ok strength=0"},
	{"IN-SHARED-32", "image-turbo", `{"inputs":{"seedImage":` + u + `},"strength":1}`, "ok"},
	{"IN-SHARED-32", "image-turbo", `{"inputs":{"seedImage":` + u + `},"strength":1.01}`, "refuse body.strength less_than_equal"},
	{"IN-SHARED-32", "image-turbo", `{"inputs":{"seedImage":` + u + `},"strength":-0.01}`, "refuse body.strength greater_than_equal"},
	{"IN-SHARED-32", "image-dev", `{"maskMargin":32}`, "ok"},
	{"IN-SHARED-32", "image-dev", `{"maskMargin":128}`, "ok"},
	{"IN-SHARED-32", "image-dev", `{"maskMargin":31}`, "refuse body.maskMargin greater_than_equal"},
	{"IN-SHARED-32", "image-turbo", `{"maskMargin":129}`, "refuse body.maskMargin less_than_equal"},
	{"IN-SHARED-33", "image-dev", `{"outpaint":{"top":0,"bottom":0,"left":0,"right":4096,"blur":0}}`, "ok"},
	{"IN-SHARED-33", "image-turbo", `{"outpaint":{"top":1,"blur":32}}`, "ok"},
	{"IN-SHARED-33", "image-turbo", `{"outpaint":{"top":-1}}`, "refuse body.outpaint.top greater_than_equal"},
	{"IN-SHARED-33", "image-turbo", `{"outpaint":{"left":-1}}`, "refuse body.outpaint.left greater_than_equal"},
	{"IN-SHARED-33", "image-dev", `{"outpaint":{"right":1,"blur":33}}`, "refuse body.outpaint.blur less_than_equal"},
	{"IN-SHARED-33", "image-dev", `{"outpaint":{"bottom":1.5}}`, "refuse body.outpaint.bottom int_from_float"},
	{"IN-SHARED-34", "image-dev", `{"strength":0.5}`, "rule seed_image_required body.inputs.seedImage"},
	{"IN-SHARED-34", "image-dev", `{"inputs":{"maskImage":` + u + `}}`, "rule seed_image_required body.inputs.seedImage"},
	{"IN-SHARED-34", "image-turbo", `{"strength":0.5}`, "rule seed_image_required body.inputs.seedImage"},
	{"IN-SHARED-34", "image-turbo", `{"inputs":{"maskImage":` + u + `}}`, "rule seed_image_required body.inputs.seedImage"},
	{"IN-SHARED-34", "image-turbo", `{"strength":0.5,"inputs":{"seedImage":` + u + `,"maskImage":` + u2 + `}}`, "ok"},
	{"IN-SHARED-35", "image-dev", `{"outpaint":{}}`, "rule outpaint_side body.outpaint"},
	{"IN-SHARED-35", "image-turbo", `{"outpaint":{"blur":4}}`, "rule outpaint_side body.outpaint"},
	{"IN-SHARED-35", "image-turbo", `{"outpaint":{"bottom":0}}`, "ok"},
	{"IN-SHARED-36", "image-dev", `{"controlNet":[{"model":"svc-serverless:25@1","guideImage":` + u + `}]}`, "ok controlNet.0.weight=1"},
	{"IN-SHARED-36", "image-dev", `{"controlNet":[{"model":"svc-serverless:25@1","guideImage":` + u + `,"weight":-4}]}`, "ok"},
	{"IN-SHARED-36", "image-turbo", `{"controlNet":[{"model":"svc-serverless:z-image@turbo-controlnet","guideImage":` + u + `,"weight":4}]}`, "ok"},
	{"IN-SHARED-36", "image-turbo", `{"controlNet":[{"model":"svc-serverless:z-image@turbo-controlnet","guideImage":` + u + `,"weight":4.01}]}`, "refuse body.controlNet.0.weight less_than_equal"},
	{"IN-SHARED-36", "image-dev", `{"controlNet":[{"model":"svc-serverless:25@1","guideImage":` + u + `,"weight":-4.01}]}`, "refuse body.controlNet.0.weight greater_than_equal"},
	{"IN-SHARED-36", "image-dev", `{"controlNet":[{"model":"svc-serverless:25@1","guideImage":"g.png"}]}`, "refuse body.controlNet.0.guideImage url_type"},
	{"IN-SHARED-37", "image-dev", `{"controlNet":[{"model":"svc-serverless:25@1","guideImage":` + u + `}]}`, "ok controlNet.0.controlMode=\"balanced\""},
	{"IN-SHARED-37", "image-dev", `{"controlNet":[{"model":"svc-serverless:25@1","guideImage":` + u + `,"controlMode":"controlnet"}]}`, "ok"},
	{"IN-SHARED-37", "image-turbo", `{"controlNet":[{"model":"svc-serverless:z-image@turbo-controlnet","guideImage":` + u + `,"controlMode":"prompt"}]}`, "ok"},
	{"IN-SHARED-37", "image-turbo", `{"controlNet":[{"model":"svc-serverless:z-image@turbo-controlnet","guideImage":` + u + `,"controlMode":"Balanced"}]}`, "refuse body.controlNet.0.controlMode enum"},
	{"IN-SHARED-37", "image-turbo", `{"controlNet":[{"model":"svc-serverless:z-image@turbo-controlnet","guideImage":` + u + `,"controlMode":"both"}]}`, "refuse body.controlNet.0.controlMode enum"},
	{"IN-SHARED-38", "image-dev", `{"controlNet":[{"model":"svc-serverless:25@1","guideImage":` + u + `,"endStep":1,"startStep":0}]}`, "ok"},
	{"IN-SHARED-38", "image-dev", `{"controlNet":[{"model":"svc-serverless:25@1","guideImage":` + u + `,"endStepPercentage":1,"startStepPercentage":0}]}`, "ok"},
	{"IN-SHARED-38", "image-dev", `{"controlNet":[{"model":"svc-serverless:25@1","guideImage":` + u + `,"endStepPercentage":100,"startStepPercentage":99}]}`, "ok"},
	{"IN-SHARED-38", "image-dev", `{"controlNet":[{"model":"svc-serverless:25@1","guideImage":` + u + `,"endStep":0}]}`, "refuse body.controlNet.0.endStep greater_than_equal"},
	{"IN-SHARED-38", "image-dev", `{"controlNet":[{"model":"svc-serverless:25@1","guideImage":` + u + `,"endStepPercentage":0}]}`, "refuse body.controlNet.0.endStepPercentage greater_than_equal"},
	{"IN-SHARED-38", "image-dev", `{"controlNet":[{"model":"svc-serverless:25@1","guideImage":` + u + `,"endStepPercentage":101}]}`, "refuse body.controlNet.0.endStepPercentage less_than_equal"},
	{"IN-SHARED-38", "image-turbo", `{"controlNet":[{"model":"svc-serverless:z-image@turbo-controlnet","guideImage":` + u + `,"startStep":-1}]}`, "refuse body.controlNet.0.startStep greater_than_equal"},
	{"IN-SHARED-38", "image-turbo", `{"controlNet":[{"model":"svc-serverless:z-image@turbo-controlnet","guideImage":` + u + `,"startStepPercentage":100}]}`, "refuse body.controlNet.0.startStepPercentage less_than_equal"},
	{"IN-SHARED-39", "image-dev", `{"controlNet":[{"model":"svc-serverless:32@1","guideImage":` + u + `}]}`, "refuse body.controlNet.0.model enum"},
	{"IN-SHARED-39", "image-dev", `{"controlNet":[{"model":"svc-serverless:z-image@turbo-controlnet","guideImage":` + u + `}]}`, "refuse body.controlNet.0.model enum"},
	{"IN-SHARED-39", "image-turbo", `{"controlNet":[{"model":"svc-serverless:25@1","guideImage":` + u + `}]}`, "refuse body.controlNet.0.model enum"},
	{"IN-SHARED-39", "image-turbo", `{"controlNet":[{"model":"svc-serverless:z-image@turbo","guideImage":` + u + `}]}`, "refuse body.controlNet.0.model enum"},
	{"IN-SHARED-39", "image-4b", `{"controlNet":[{"model":"svc-serverless:25@1","guideImage":` + u + `}]}`, "refuse body.controlNet extra_forbidden"},
	{"IN-SHARED-40", "image-dev", `{"controlNet":[]}`, "rule controlnet_items body.controlNet"},
	{"IN-SHARED-40", "image-dev", `{"controlNet":[{"guideImage":` + u + `}]}`, "rule controlnet_items body.controlNet.0.model"},
	{"IN-SHARED-40", "image-turbo", `{"controlNet":[{"model":"svc-serverless:z-image@turbo-controlnet"}]}`, "rule controlnet_items body.controlNet.0.guideImage"},
	{"IN-SHARED-40", "image-turbo", `{"controlNet":[{"model":"svc-serverless:z-image@turbo-controlnet","guideImage":` + u + `,"endStep":2,"endStepPercentage":20}]}`, "rule controlnet_items body.controlNet.0.endStepPercentage"},
	{"IN-SHARED-40", "image-dev", `{"controlNet":[{"model":"svc-serverless:25@1","guideImage":` + u + `,"startStep":2,"startStepPercentage":20}]}`, "rule controlnet_items body.controlNet.0.startStepPercentage"},
	{"IN-SHARED-41", "image-4b", `{"scheduler":"Euler Trailing"}`, "refuse body.scheduler enum"},
	{"IN-SHARED-41", "image-edit", `{"scheduler":"DDPM"}`, "refuse body.scheduler enum"},
	{"IN-SHARED-41", "image-dev", `{"scheduler":"euler"}`, "refuse body.scheduler enum"},
	{"IN-SHARED-41", "image-turbo", `{"scheduler":"Euler A"}`, "refuse body.scheduler enum"},
	{"IN-SHARED-41", "upscale", `{"settings":{"scheduler":"PNDM"}}`, "refuse body.settings.scheduler enum"},
	{"IN-SHARED-42", "image-lite", `{"scheduler":"DPM++ 2M"}`, "refuse body.scheduler enum"},
	{"IN-SHARED-42", "image-lite", `{"scheduler":"Euler trailing"}`, "refuse body.scheduler enum"},
	{"IN-SHARED-42", "image-lite", `{"scheduler":"UniPC Karras"}`, "refuse body.scheduler enum"},
	{"IN-SHARED-43", "image-4b", `{"width":1024}`, "rule width_height_pair body.height"},
	{"IN-SHARED-43", "music-turbo", `{"strength":0.5}`, "rule audio_required body.inputs.audio"},

	// M1.
	{"IN-M1-01", "image-9b-kv", `{}`, "ok acceleration=\"high\""},
	{"IN-M1-01", "image-9b-kv", `{"acceleration":"none"}`, "ok acceleration=\"none\""},
	{"IN-M1-01", "image-9b-kv", `{"acceleration":"low"}`, "ok"},
	{"IN-M1-01", "image-9b-kv", `{"acceleration":"medium"}`, "ok"},
	{"IN-M1-01", "image-9b-kv", `{"acceleration":"high"}`, "ok"},
	{"IN-M1-01", "image-9b-kv", `{"acceleration":"ultra"}`, "refuse body.acceleration enum"},
	{"IN-M1-01", "image-9b-kv", `{"acceleration":"High"}`, "refuse body.acceleration enum"},
	{"IN-M1-02", "image-9b-kv", `{"outputFormat":"PNG","outputQuality":20,"safety":{"checkContent":false},"advancedFeatures":{"watermark":{"text":"ab","displayPosition":"tiled"}},"lora":[{"model":"a"}]}`, "ok outputType=\"URL\" safety.checkContent=true lora.0.weight=1"},
	{"IN-M1-02", "image-9b-kv", `{"acceleratorOptions":{"teaCache":true}}`, "ok acceleration=- acceleratorOptions.teaCacheDistance=0.5"},
	{"IN-M1-02", "image-9b-kv", `{"outputFormat":"GIF"}`, "refuse body.outputFormat enum"},
	{"IN-M1-02", "image-9b-kv", `{"acceleration":"low","acceleratorOptions":{"dbCache":true}}`, "rule acceleration_exclusive body.acceleratorOptions"},
	{"IN-M1-02", "image-9b-kv", `{"ultralytics":{}}`, "refuse body.ultralytics extra_forbidden"},
	{"IN-M1-03", "image-9b-kv", `{"seed":42,"idempotency_key":"run-1"}`, "ok seed=42 idempotency_key=-"},
	{"IN-M1-03", "image-9b-kv", `{"seed":"42"}`, "refuse body.seed int_type"},

	// M2.
	{"IN-M2-01", "image-4b", `{"inputs":{"referenceImages":[` + u + `]}}`, "ok"},
	{"IN-M2-01", "image-4b", `{"inputs":{"referenceImages":[` + u + `,` + u + `,` + u + `,` + u2 + `]}}`, "ok"},
	{"IN-M2-01", "image-4b", `{"inputs":{"referenceImages":[]}}`, "refuse body.inputs.referenceImages too_short"},
	{"IN-M2-01", "image-4b", `{"inputs":{"referenceImages":[` + u + `,` + u + `,` + u + `,` + u + `,` + u2 + `]}}`, "refuse body.inputs.referenceImages too_long"},
	{"IN-M2-01", "image-4b", `{"inputs":{}}`, "ok"},
	{"IN-M2-02", "image-4b", `={}`, "refuse body.positivePrompt missing"},
	{"IN-M2-02", "image-4b", `{"positivePrompt":""}`, "refuse body.positivePrompt string_too_short"},
	{"IN-M2-02", "image-4b", `{"positivePrompt":"@s1"}`, "ok"},
	{"IN-M2-02", "image-4b", `{"positivePrompt":"@s10000"}`, "ok"},
	{"IN-M2-02", "image-4b", `{"positivePrompt":"@s10001"}`, "refuse body.positivePrompt string_too_long"},
	{"IN-M2-03", "image-4b", `{"negativePrompt":""}`, "refuse body.negativePrompt string_too_short"},
	{"IN-M2-03", "image-4b", `{"negativePrompt":"@s1"}`, "ok"},
	{"IN-M2-03", "image-4b", `{"negativePrompt":"@s10000"}`, "ok"},
	{"IN-M2-03", "image-4b", `{"negativePrompt":"@s10001"}`, "refuse body.negativePrompt string_too_long"},
	{"IN-M2-04", "image-4b", `{}`, "ok width=1024 height=1024"},
	{"IN-M2-04", "image-4b", `{"width":128,"height":2048}`, "ok width=128 height=2048"},
	{"IN-M2-04", "image-4b", `{"width":2048,"height":128}`, "ok"},
	{"IN-M2-04", "image-4b", `{"width":127,"height":1024}`, "refuse body.width greater_than_equal"},
	{"IN-M2-04", "image-4b", `{"width":1024,"height":2049}`, "refuse body.height less_than_equal"},
	{"IN-M2-04", "image-4b", `{"width":1024,"height":127}`, "refuse body.height greater_than_equal"},
	{"IN-M2-04", "image-4b", `{"width":2049,"height":1024}`, "refuse body.width less_than_equal"},
	{"IN-M2-05", "image-4b", `{}`, "ok steps=28"},
	{"IN-M2-05", "image-4b", `{"steps":1}`, "ok"},
	{"IN-M2-05", "image-4b", `{"steps":50}`, "ok"},
	{"IN-M2-05", "image-4b", `{"steps":0}`, "refuse body.steps greater_than_equal"},
	{"IN-M2-05", "image-4b", `{"steps":51}`, "refuse body.steps less_than_equal"},
	{"IN-M2-06", "image-4b", `{}`, "ok scheduler=-"},
	{"IN-M2-06", "image-4b", `{"scheduler":"FlowMatchEulerDiscreteScheduler"}`, "ok"},
	{"IN-M2-06", "image-4b", `{"scheduler":"DDPM"}`, "refuse body.scheduler enum"},
	{"IN-M2-07", "image-4b", `{}`, "ok CFGScale=3.5"},
	{"IN-M2-07", "image-4b", `{"CFGScale":1}`, "ok"},
	{"IN-M2-07", "image-4b", `{"CFGScale":20}`, "ok"},
	{"IN-M2-07", "image-4b", `{"CFGScale":0.99}`, "refuse body.CFGScale greater_than_equal"},
	{"IN-M2-07", "image-4b", `{"CFGScale":20.01}`, "refuse body.CFGScale less_than_equal"},
	{"IN-M2-08", "image-4b", `{}`, "ok acceleration=\"high\""},
	{"IN-M2-08", "image-4b", `{"acceleration":"none"}`, "ok"},
	{"IN-M2-08", "image-4b", `{"acceleration":"low"}`, "ok"},
	{"IN-M2-08", "image-4b", `{"acceleration":"medium"}`, "ok acceleration=\"medium\""},
	{"IN-M2-08", "image-4b", `{"acceleration":"off"}`, "refuse body.acceleration enum"},
	{"IN-M2-08", "image-4b", `{"acceleration":"highest"}`, "refuse body.acceleration enum"},
	{"IN-M2-09", "image-4b", `{"outputFormat":"WEBP","safety":{"checkContent":true},"advancedFeatures":{"watermark":{"image":` + u + `}},"lora":[{"model":"a"}],"acceleratorOptions":{"dbCache":true}}`, "ok"},
	{"IN-M2-09", "image-4b", `{"acceleratorOptions":{"fbCache":false}}`, "refuse body.acceleratorOptions.fbCache extra_forbidden"},
	{"IN-M2-10", "image-4b", `{"width":1024}`, "rule width_height_pair body.height"},
	{"IN-M2-10", "image-4b", `{"height":768}`, "rule width_height_pair body.width"},
	{"IN-M2-11", "image-4b", `{"acceleration":"high","acceleratorOptions":{}}`, "rule acceleration_exclusive body.acceleratorOptions"},
	{"IN-M2-11", "image-4b", `{"acceleratorOptions":{"teaCache":true}}`, "ok acceleration=-"},
	{"IN-M2-12", "image-4b", `{"acceleratorOptions":{"cacheStartStep":1,"cacheStartStepPercentage":10}}`, "rule cache_start_exclusive body.acceleratorOptions.cacheStartStepPercentage"},
	{"IN-M2-12", "image-4b", `{"acceleratorOptions":{"cacheEndStep":10,"cacheEndStepPercentage":50}}`, "rule cache_end_exclusive body.acceleratorOptions.cacheEndStepPercentage"},
	{"IN-M2-12", "image-4b", `{"acceleratorOptions":{"teaCache":true,"dbCache":true}}`, "rule cache_exclusive body.acceleratorOptions"},
	{"IN-M2-12", "image-4b", `{"acceleratorOptions":{"teaCache":true,"dbCache":false,"cacheStartStep":1,"cacheEndStepPercentage":50}}`, "ok"},
	{"IN-M2-13", "image-4b", `{"lora":[{"weight":0.5}]}`, "rule lora_items body.lora.0.model"},
	{"IN-M2-13", "image-4b", `{"advancedFeatures":{"watermark":{}}}`, "rule watermark_source body.advancedFeatures.watermark"},

	// M3.
	{"IN-M3-01", "image-lite", `{"inputs":{"referenceImages":[` + u + `]}}`, "ok"},
	{"IN-M3-01", "image-lite", `{"inputs":{"referenceImages":[]}}`, "refuse body.inputs.referenceImages too_short"},
	{"IN-M3-01", "image-lite", `{"inputs":{"referenceImages":[` + u + `,` + u2 + `]}}`, "refuse body.inputs.referenceImages too_long"},
	{"IN-M3-02", "image-lite", `={}`, "refuse body.positivePrompt missing"},
	{"IN-M3-02", "image-lite", `{"positivePrompt":"@s1"}`, "refuse body.positivePrompt string_too_short"},
	{"IN-M3-02", "image-lite", `{"positivePrompt":"@s2"}`, "ok"},
	{"IN-M3-02", "image-lite", `{"positivePrompt":"@s32000"}`, "ok"},
	{"IN-M3-02", "image-lite", `{"positivePrompt":"@s32001"}`, "refuse body.positivePrompt string_too_long"},
	{"IN-M3-03", "image-lite", `{"negativePrompt":"@s1"}`, "refuse body.negativePrompt string_too_short"},
	{"IN-M3-03", "image-lite", `{"negativePrompt":"@s2"}`, "ok"},
	{"IN-M3-03", "image-lite", `{"negativePrompt":"@s3000"}`, "ok"},
	{"IN-M3-03", "image-lite", `{"negativePrompt":"@s3001"}`, "refuse body.negativePrompt string_too_long"},
	{"IN-M3-04", "image-lite", `{}`, "ok width=1024 height=1024"},
	{"IN-M3-04", "image-lite", `{"width":1024}`, "rule width_height_pair body.height"},
	{"IN-M3-04", "image-lite", `{"height":1024}`, "rule width_height_pair body.width"},
	{"IN-M3-05", "image-lite", `{"width":1024,"height":1024}`, "ok"},
	{"IN-M3-05", "image-lite", `{"width":640,"height":1408}`, "ok"},
	{"IN-M3-05", "image-lite", `{"width":1408,"height":640}`, "ok"},
	{"IN-M3-05", "image-lite", `{"width":768,"height":1280}`, "ok"},
	{"IN-M3-05", "image-lite", `{"width":1280,"height":768}`, "ok"},
	{"IN-M3-05", "image-lite", `{"width":896,"height":1152}`, "ok"},
	{"IN-M3-05", "image-lite", `{"width":1152,"height":896}`, "ok"},
	{"IN-M3-05", "image-lite", `{"width":1024,"height":768}`, "rule size_pair body.width"},
	{"IN-M3-05", "image-lite", `{"width":512,"height":512}`, "rule size_pair body.width"},
	{"IN-M3-05", "image-lite", `{"width":640,"height":1409}`, "rule size_pair body.width"},
	{"IN-M3-05", "image-lite", `{"width":640}`, "rule size_pair body.width"},
	{"IN-M3-05", "image-lite", `{"height":1408}`, "rule size_pair body.height"},
	{"IN-M3-06", "image-lite", `{}`, "ok steps=20"},
	{"IN-M3-06", "image-lite", `{"steps":10}`, "ok"},
	{"IN-M3-06", "image-lite", `{"steps":50}`, "ok"},
	{"IN-M3-06", "image-lite", `{"steps":9}`, "refuse body.steps greater_than_equal"},
	{"IN-M3-06", "image-lite", `{"steps":51}`, "refuse body.steps less_than_equal"},
	{"IN-M3-07", "image-lite", `{}`, "ok scheduler=-"},
	{"IN-M3-07", "image-lite", `{"scheduler":"Euler Trailing"}`, "ok"},
	{"IN-M3-07", "image-lite", `{"scheduler":"DDIMScheduler"}`, "refuse body.scheduler enum"},
	{"IN-M3-08", "image-lite", `{}`, "ok CFGScale=7"},
	{"IN-M3-08", "image-lite", `{"CFGScale":2}`, "ok"},
	{"IN-M3-08", "image-lite", `{"CFGScale":10}`, "ok"},
	{"IN-M3-08", "image-lite", `{"CFGScale":1.99}`, "refuse body.CFGScale greater_than_equal"},
	{"IN-M3-08", "image-lite", `{"CFGScale":10.01}`, "refuse body.CFGScale less_than_equal"},
	{"IN-M3-09", "image-lite", `{"outputFormat":"PNG","lora":[{"model":"a"}],"advancedFeatures":{"watermark":{"text":"ab"}},"acceleratorOptions":{"fbCache":true}}`, "ok acceleration=-"},
	{"IN-M3-09", "image-lite", `{"acceleration":"high"}`, "refuse body.acceleration extra_forbidden"},
	{"IN-M3-10", "image-lite", `{"acceleratorOptions":{"cacheStartStep":1,"cacheStartStepPercentage":10}}`, "rule cache_start_exclusive body.acceleratorOptions.cacheStartStepPercentage"},
	{"IN-M3-10", "image-lite", `{"acceleratorOptions":{"cacheEndStep":5,"cacheEndStepPercentage":10}}`, "rule cache_end_exclusive body.acceleratorOptions.cacheEndStepPercentage"},
	{"IN-M3-10", "image-lite", `{"acceleratorOptions":{"teaCache":true,"dbCache":true}}`, "rule cache_exclusive body.acceleratorOptions"},
	{"IN-M3-10", "image-lite", `{"acceleratorOptions":{"fbCache":true,"teaCache":true}}`, "rule cache_exclusive body.acceleratorOptions"},
	{"IN-M3-10", "image-lite", `{"acceleratorOptions":{"fbCache":true,"dbCache":true}}`, "rule cache_exclusive body.acceleratorOptions"},
	{"IN-M3-10", "image-lite", `{"acceleratorOptions":{"fbCache":true,"teaCache":false,"dbCache":false}}`, "ok"},
	{"IN-M3-11", "image-lite", `{"lora":[]}`, "rule lora_items body.lora"},
	{"IN-M3-11", "image-lite", `{"advancedFeatures":{"watermark":{"text":"ab","image":` + u + `}}}`, "rule watermark_source body.advancedFeatures.watermark"},

	// M4.
	{"IN-M4-01", "upscale", `={}`, "refuse body.inputs missing"},
	{"IN-M4-01", "upscale", `={"inputs":{}}`, "refuse body.inputs.image missing"},
	{"IN-M4-01", "upscale", `{"inputs":{"image":"a.png"}}`, "refuse body.inputs.image url_type"},
	{"IN-M4-02", "upscale", `{}`, "ok upscaleFactor=2"},
	{"IN-M4-02", "upscale", `{"upscaleFactor":1}`, "ok"},
	{"IN-M4-02", "upscale", `{"upscaleFactor":4}`, "ok"},
	{"IN-M4-02", "upscale", `{"upscaleFactor":2.5}`, "ok upscaleFactor=2.5"},
	{"IN-M4-02", "upscale", `{"upscaleFactor":0.99}`, "refuse body.upscaleFactor greater_than_equal"},
	{"IN-M4-02", "upscale", `{"upscaleFactor":4.01}`, "refuse body.upscaleFactor less_than_equal"},
	{"IN-M4-03", "upscale", `{"settings":{"positivePrompt":"sharp","negativePrompt":"noise"}}`, "ok settings.positivePrompt=\"sharp\" settings.negativePrompt=\"noise\""},
	{"IN-M4-03", "upscale", `{"settings":{"positivePrompt":1}}`, "refuse body.settings.positivePrompt string_type"},
	{"IN-M4-03", "upscale", `{"positivePrompt":"sharp"}`, "refuse body.positivePrompt extra_forbidden"},
	{"IN-M4-04", "upscale", `{}`, "ok settings.seed=4294967295"},
	{"IN-M4-04", "upscale", `{"settings":{"seed":7}}`, "ok settings.seed=7"},
	{"IN-M4-04", "upscale", `{"seed":7}`, "refuse body.seed extra_forbidden"},
	{"IN-M4-05", "upscale", `{"settings":{"steps":1}}`, "ok"},
	{"IN-M4-05", "upscale", `{"settings":{"steps":1000}}`, "ok"},
	{"IN-M4-05", "upscale", `{"settings":{"steps":0}}`, "refuse body.settings.steps greater_than_equal"},
	{"IN-M4-05", "upscale", `{}`, "ok settings.steps=-"},
	{"IN-M4-06", "upscale", `{"settings":{"scheduler":"DPM++ 2M Karras"}}`, "ok"},
	{"IN-M4-06", "upscale", `{"settings":{"scheduler":"Euler Trailing"}}`, "refuse body.settings.scheduler enum"},
	{"IN-M4-07", "upscale", `{"settings":{"CFGScale":0}}`, "ok"},
	{"IN-M4-07", "upscale", `{"settings":{"CFGScale":100}}`, "ok"},
	{"IN-M4-07", "upscale", `{"settings":{"CFGScale":-0.01}}`, "refuse body.settings.CFGScale greater_than_equal"},
	{"IN-M4-07", "upscale", `{}`, "ok settings.CFGScale=-"},
	{"IN-M4-08", "upscale", `{}`, "ok settings.strength=0.8"},
	{"IN-M4-08", "upscale", `{"settings":{"strength":0}}`, "ok settings.strength=0"},
	{"IN-M4-08", "upscale", `{"settings":{"strength":1}}`, "ok"},
	{"IN-M4-08", "upscale", `{"settings":{"strength":1.01}}`, "refuse body.settings.strength less_than_equal"},
	{"IN-M4-08", "upscale", `{"settings":{"strength":-0.01}}`, "refuse body.settings.strength greater_than_equal"},
	{"IN-M4-09", "upscale", `{}`, "ok settings.controlNetWeight=1"},
	{"IN-M4-09", "upscale", `{"settings":{"controlNetWeight":-4}}`, "ok"},
	{"IN-M4-09", "upscale", `{"settings":{"controlNetWeight":4}}`, "ok"},
	{"IN-M4-09", "upscale", `{"settings":{"controlNetWeight":-4.01}}`, "refuse body.settings.controlNetWeight greater_than_equal"},
	{"IN-M4-09", "upscale", `{"settings":{"controlNetWeight":4.01}}`, "refuse body.settings.controlNetWeight less_than_equal"},
	{"IN-M4-10", "upscale", `{}`, "ok outputQuality=95 outputType=\"URL\" outputFormat=\"JPG\""},
	{"IN-M4-10", "upscale", `{"outputQuality":20,"outputFormat":"PNG"}`, "ok"},
	{"IN-M4-10", "upscale", `{"outputQuality":99,"outputFormat":"WEBP","outputType":"URL"}`, "ok"},
	{"IN-M4-10", "upscale", `{"outputQuality":19}`, "refuse body.outputQuality greater_than_equal"},
	{"IN-M4-10", "upscale", `{"outputQuality":100}`, "refuse body.outputQuality less_than_equal"},
	{"IN-M4-10", "upscale", `{"outputType":"dataURI"}`, "refuse body.outputType enum"},
	{"IN-M4-10", "upscale", `{"outputFormat":"TIFF"}`, "refuse body.outputFormat enum"},

	// M5.
	{"IN-M5-01", "music-turbo", `={}`, "refuse body.positivePrompt missing"},
	{"IN-M5-01", "music-turbo", `{"positivePrompt":"@s1"}`, "refuse body.positivePrompt string_too_short"},
	{"IN-M5-01", "music-turbo", `{"positivePrompt":"@s2"}`, "ok"},
	{"IN-M5-01", "music-turbo", `{"positivePrompt":"@s3000"}`, "ok"},
	{"IN-M5-01", "music-turbo", `{"positivePrompt":"@s3001"}`, "refuse body.positivePrompt string_too_long"},
	{"IN-M5-02", "music-turbo", `{"inputs":{"audio":"https://h.example/a.mp3"}}`, "unpriced"},
	{"IN-M5-02", "music-turbo", `{"inputs":{"audio":"a.mp3"}}`, "refuse body.inputs.audio url_type"},
	{"IN-M5-03", "music-turbo", `{}`, "ok duration=60"},
	{"IN-M5-03", "music-turbo", `{"duration":30}`, "ok"},
	{"IN-M5-03", "music-turbo", `{"duration":120}`, "ok"},
	{"IN-M5-03", "music-turbo", `{"duration":45.5}`, "ok duration=45.5"},
	{"IN-M5-03", "music-turbo", `{"duration":29.99}`, "refuse body.duration greater_than_equal"},
	{"IN-M5-03", "music-turbo", `{"duration":120.01}`, "refuse body.duration less_than_equal"},
	{"IN-M5-03", "music-turbo", `{"duration":600}`, "refuse body.duration less_than_equal"},
	{"IN-M5-04", "music-turbo", `{"seed":0}`, "ok seed=0"},
	{"IN-M5-04", "music-turbo", `{"seed":2147483647}`, "ok"},
	{"IN-M5-04", "music-turbo", `{"seed":2147483648}`, "refuse body.seed less_than_equal"},
	{"IN-M5-04", "music-turbo", `{"seed":-1}`, "refuse body.seed greater_than_equal"},
	{"IN-M5-04", "music-turbo", `{}`, "ok seed=2147483647"},
	{"IN-M5-05", "music-turbo", `{}`, "ok steps=10"},
	{"IN-M5-05", "music-turbo", `{"steps":1}`, "ok"},
	{"IN-M5-05", "music-turbo", `{"steps":20}`, "ok"},
	{"IN-M5-05", "music-turbo", `{"steps":0}`, "refuse body.steps greater_than_equal"},
	{"IN-M5-05", "music-turbo", `{"steps":21}`, "refuse body.steps less_than_equal"},
	{"IN-M5-06", "music-turbo", `{"strength":1.01}`, "refuse body.strength less_than_equal"},
	{"IN-M5-06", "music-turbo", `{"strength":-0.01}`, "refuse body.strength greater_than_equal"},
	{"IN-M5-06", "music-turbo", `{"strength":0}`, "rule audio_required body.inputs.audio"},
	{"IN-M5-06", "music-turbo", `{"strength":1}`, "rule audio_required body.inputs.audio"},
	{"IN-M5-06", "music-turbo", `{}`, "ok strength=-"},
	{"IN-M5-07", "music-turbo", `{}`, "ok settings.bpm=-"},
	{"IN-M5-07", "music-turbo", `{"settings":{"bpm":30}}`, "ok"},
	{"IN-M5-07", "music-turbo", `{"settings":{"bpm":300}}`, "ok"},
	{"IN-M5-07", "music-turbo", `{"settings":{"bpm":29}}`, "refuse body.settings.bpm greater_than_equal"},
	{"IN-M5-07", "music-turbo", `{"settings":{"bpm":301}}`, "refuse body.settings.bpm less_than_equal"},
	{"IN-M5-07", "music-turbo", `{"settings":{"bpm":120.5}}`, "refuse body.settings.bpm int_from_float"},
	{"IN-M5-08", "music-turbo", `{"settings":{"keyScale":"C major"}}`, "ok"},
	{"IN-M5-08", "music-turbo", `{"settings":{"keyScale":"F# minor"}}`, "ok"},
	{"IN-M5-08", "music-turbo", `{"settings":{"keyScale":"Bb major"}}`, "ok"},
	{"IN-M5-08", "music-turbo", `{"settings":{"keyScale":"Cmajor"}}`, "refuse body.settings.keyScale string_pattern_mismatch"},
	{"IN-M5-08", "music-turbo", `{"settings":{"keyScale":"C  major"}}`, "refuse body.settings.keyScale string_pattern_mismatch"},
	{"IN-M5-08", "music-turbo", `{"settings":{"keyScale":"H major"}}`, "refuse body.settings.keyScale string_pattern_mismatch"},
	{"IN-M5-08", "music-turbo", `{"settings":{"keyScale":"C## major"}}`, "refuse body.settings.keyScale string_pattern_mismatch"},
	{"IN-M5-08", "music-turbo", `{"settings":{"keyScale":"C"}}`, "refuse body.settings.keyScale string_pattern_mismatch"},
	{"IN-M5-09", "music-turbo", `{"settings":{"lyrics":"@s9"}}`, "refuse body.settings.lyrics string_too_short"},
	{"IN-M5-09", "music-turbo", `{"settings":{"lyrics":"@s10"}}`, "ok"},
	{"IN-M5-09", "music-turbo", `{"settings":{"lyrics":"@s3000"}}`, "ok"},
	{"IN-M5-09", "music-turbo", `{"settings":{"lyrics":"@s3001"}}`, "refuse body.settings.lyrics string_too_long"},
	{"IN-M5-10", "music-turbo", `{"settings":{"repaintingStart":-300}}`, "rule audio_required body.inputs.audio"},
	{"IN-M5-10", "music-turbo", `{"settings":{"repaintingStart":300}}`, "rule audio_required body.inputs.audio"},
	{"IN-M5-10", "music-turbo", `{"settings":{"repaintingStart":-300.01}}`, "refuse body.settings.repaintingStart greater_than_equal"},
	{"IN-M5-10", "music-turbo", `{"settings":{"repaintingStart":300.01}}`, "refuse body.settings.repaintingStart less_than_equal"},
	{"IN-M5-10", "music-turbo", `{"settings":{"repaintingEnd":0}}`, "rule audio_required body.inputs.audio"},
	{"IN-M5-10", "music-turbo", `{"settings":{"repaintingEnd":300}}`, "rule audio_required body.inputs.audio"},
	{"IN-M5-10", "music-turbo", `{"settings":{"repaintingEnd":-0.01}}`, "refuse body.settings.repaintingEnd greater_than_equal"},
	{"IN-M5-10", "music-turbo", `{"settings":{"repaintingEnd":300.01}}`, "refuse body.settings.repaintingEnd less_than_equal"},
	{"IN-M5-11", "music-turbo", `{}`, "ok settings.timeSignature=-"},
	{"IN-M5-11", "music-turbo", `{"settings":{"timeSignature":2}}`, "ok"},
	{"IN-M5-11", "music-turbo", `{"settings":{"timeSignature":3}}`, "ok"},
	{"IN-M5-11", "music-turbo", `{"settings":{"timeSignature":4}}`, "ok"},
	{"IN-M5-11", "music-turbo", `{"settings":{"timeSignature":6}}`, "ok settings.timeSignature=6"},
	{"IN-M5-11", "music-turbo", `{"settings":{"timeSignature":5}}`, "refuse body.settings.timeSignature enum"},
	{"IN-M5-11", "music-turbo", `{"settings":{"timeSignature":1}}`, "refuse body.settings.timeSignature enum"},
	{"IN-M5-11", "music-turbo", `{"settings":{"timeSignature":8}}`, "refuse body.settings.timeSignature enum"},
	{"IN-M5-11", "music-turbo", `{"settings":{"timeSignature":"4"}}`, "refuse body.settings.timeSignature int_type"},
	{"IN-M5-12", "music-turbo", `{}`, "ok settings.vocalLanguage=\"en\""},
	{"IN-M5-12", "music-turbo", `{"settings":{"vocalLanguage":"EN"}}`, "refuse body.settings.vocalLanguage enum"},
	{"IN-M5-12", "music-turbo", `{"settings":{"vocalLanguage":"english"}}`, "refuse body.settings.vocalLanguage enum"},
	{"IN-M5-12", "music-turbo", `{"settings":{"vocalLanguage":"jp"}}`, "refuse body.settings.vocalLanguage enum"},
	{"IN-M5-12", "music-turbo", `{"settings":{"vocalLanguage":"instrumental"}}`, "refuse body.settings.vocalLanguage enum"},
	{"IN-M5-13", "music-turbo", `{}`, "ok outputType=\"URL\" outputFormat=\"MP3\""},
	{"IN-M5-13", "music-turbo", `{"outputFormat":"WAV"}`, "ok"},
	{"IN-M5-13", "music-turbo", `{"outputFormat":"FLAC"}`, "ok"},
	{"IN-M5-13", "music-turbo", `{"outputFormat":"OGG"}`, "ok"},
	{"IN-M5-13", "music-turbo", `{"outputFormat":"mp3"}`, "refuse body.outputFormat enum"},
	{"IN-M5-13", "music-turbo", `{"outputFormat":"OPUS"}`, "refuse body.outputFormat enum"},
	{"IN-M5-13", "music-turbo", `{"outputFormat":"JPG"}`, "refuse body.outputFormat enum"},
	{"IN-M5-13", "music-turbo", `{"outputType":"base64Data"}`, "refuse body.outputType enum"},
	{"IN-M5-13", "music-turbo", `{"outputQuality":95}`, "refuse body.outputQuality extra_forbidden"},
	{"IN-M5-14", "music-turbo", `{"audioSettings":{}}`, "ok audioSettings.channels=2"},
	{"IN-M5-14", "music-turbo", `{"audioSettings":{"sampleRate":8000,"bitrate":8,"channels":1}}`, "ok"},
	{"IN-M5-14", "music-turbo", `{"audioSettings":{"bitrate":7}}`, "refuse body.audioSettings.bitrate greater_than_equal"},
	{"IN-M5-14", "music-turbo", `{"audioSettings":{"bitrate":128.5}}`, "refuse body.audioSettings.bitrate int_from_float"},
	{"IN-M5-14", "music-turbo", `{"audioSettings":{"channels":3}}`, "refuse body.audioSettings.channels enum"},
	{"IN-M5-14", "music-turbo", `{"audioSettings":{"channels":0}}`, "refuse body.audioSettings.channels enum"},
	{"IN-M5-14", "music-turbo", `{"audioSettings":{"sampleRate":"44100"}}`, "refuse body.audioSettings.sampleRate int_type"},
	{"IN-M5-15", "music-turbo", `{"outputFormat":"WAV","audioSettings":{"channels":2}}`, "rule audio_settings_format body.audioSettings"},
	{"IN-M5-15", "music-turbo", `{"outputFormat":"FLAC","audioSettings":{}}`, "rule audio_settings_format body.audioSettings"},
	{"IN-M5-15", "music-turbo", `{"outputFormat":"MP3","audioSettings":{"channels":1}}`, "ok"},
	{"IN-M5-16", "music-turbo", `{"audioSettings":{"sampleRate":44000}}`, "rule audio_sample_rate body.audioSettings.sampleRate"},
	{"IN-M5-16", "music-turbo", `{"audioSettings":{"sampleRate":96000}}`, "rule audio_sample_rate body.audioSettings.sampleRate"},
	{"IN-M5-16", "music-turbo", `{"outputFormat":"MP3","audioSettings":{"sampleRate":16001}}`, "rule audio_sample_rate body.audioSettings.sampleRate"},
	{"IN-M5-17", "music-turbo", `{"audioSettings":{"bitrate":32}}`, "ok"},
	{"IN-M5-17", "music-turbo", `{"audioSettings":{"bitrate":320}}`, "ok"},
	{"IN-M5-17", "music-turbo", `{"audioSettings":{"bitrate":31}}`, "rule audio_bitrate body.audioSettings.bitrate"},
	{"IN-M5-18", "music-turbo", `{"outputFormat":"OGG","audioSettings":{"sampleRate":11025}}`, "rule audio_sample_rate body.audioSettings.sampleRate"},
	{"IN-M5-18", "music-turbo", `{"outputFormat":"OGG","audioSettings":{"sampleRate":22050}}`, "rule audio_sample_rate body.audioSettings.sampleRate"},
	{"IN-M5-18", "music-turbo", `{"outputFormat":"OGG","audioSettings":{"sampleRate":32000}}`, "rule audio_sample_rate body.audioSettings.sampleRate"},
	{"IN-M5-18", "music-turbo", `{"outputFormat":"OGG","audioSettings":{"sampleRate":44100}}`, "rule audio_sample_rate body.audioSettings.sampleRate"},
	{"IN-M5-20", "music-turbo", `{"inputs":{"audio":"https://h.example/a.mp3"},"duration":60}`, "unpriced"},
	{"IN-M5-21", "music-turbo", `{"strength":0.5}`, "rule audio_required body.inputs.audio"},
	{"IN-M5-21", "music-turbo", `{"settings":{"repaintingStart":-10}}`, "rule audio_required body.inputs.audio"},
	{"IN-M5-21", "music-turbo", `{"settings":{"repaintingEnd":10}}`, "rule audio_required body.inputs.audio"},
	{"IN-M5-21", "music-turbo", `{"strength":0.5,"inputs":{"audio":"https://h.example/a.mp3"}}`, "unpriced"},
	{"IN-M5-22", "music-turbo", `{"outputFormat":"OGG","audioSettings":{"bitrate":256}}`, "ok"},
	{"IN-M5-22", "music-turbo", `{"outputFormat":"OGG","audioSettings":{"bitrate":257}}`, "rule audio_bitrate body.audioSettings.bitrate"},
	{"IN-M5-22", "music-turbo", `{"outputFormat":"OGG","audioSettings":{"channels":1,"bitrate":224}}`, "ok"},
	{"IN-M5-22", "music-turbo", `{"outputFormat":"OGG","audioSettings":{"channels":1,"bitrate":225}}`, "rule audio_bitrate body.audioSettings.bitrate"},

	// M6.
	{"IN-M6-01", "eye-mask", `={}`, "refuse body.inputs missing"},
	{"IN-M6-01", "eye-mask", `={"inputs":{}}`, "refuse body.inputs.image missing"},
	{"IN-M6-01", "eye-mask", `{"inputs":{"image":"face.png"}}`, "refuse body.inputs.image url_type"},
	{"IN-M6-02", "eye-mask", `{}`, "ok settings.confidence=0.5"},
	{"IN-M6-02", "eye-mask", `{"settings":{"confidence":0}}`, "ok"},
	{"IN-M6-02", "eye-mask", `{"settings":{"confidence":1}}`, "ok"},
	{"IN-M6-02", "eye-mask", `{"settings":{"confidence":1.01}}`, "refuse body.settings.confidence less_than_equal"},
	{"IN-M6-02", "eye-mask", `{"settings":{"confidence":-0.01}}`, "refuse body.settings.confidence greater_than_equal"},
	{"IN-M6-03", "eye-mask", `{}`, "ok settings.maxDetections=6"},
	{"IN-M6-03", "eye-mask", `{"settings":{"maxDetections":1}}`, "ok"},
	{"IN-M6-03", "eye-mask", `{"settings":{"maxDetections":20}}`, "ok"},
	{"IN-M6-03", "eye-mask", `{"settings":{"maxDetections":0}}`, "refuse body.settings.maxDetections greater_than_equal"},
	{"IN-M6-03", "eye-mask", `{"settings":{"maxDetections":21}}`, "refuse body.settings.maxDetections less_than_equal"},
	{"IN-M6-04", "eye-mask", `{}`, "ok settings.maskPadding=10"},
	{"IN-M6-04", "eye-mask", `{"settings":{"maskPadding":0}}`, "ok"},
	{"IN-M6-04", "eye-mask", `{"settings":{"maskPadding":200}}`, "ok"},
	{"IN-M6-04", "eye-mask", `{"settings":{"maskPadding":201}}`, "refuse body.settings.maskPadding less_than_equal"},
	{"IN-M6-04", "eye-mask", `{"settings":{"maskPadding":-1}}`, "refuse body.settings.maskPadding greater_than_equal"},
	{"IN-M6-05", "eye-mask", `{}`, "ok settings.maskBlur=5"},
	{"IN-M6-05", "eye-mask", `{"settings":{"maskBlur":0}}`, "ok"},
	{"IN-M6-05", "eye-mask", `{"settings":{"maskBlur":100}}`, "ok"},
	{"IN-M6-05", "eye-mask", `{"settings":{"maskBlur":101}}`, "refuse body.settings.maskBlur less_than_equal"},
	{"IN-M6-05", "eye-mask", `{"settings":{"maskBlur":-1}}`, "refuse body.settings.maskBlur greater_than_equal"},
	{"IN-M6-06", "eye-mask", `{}`, "ok outputType=\"URL\" outputFormat=\"JPG\""},
	{"IN-M6-06", "eye-mask", `{"outputFormat":"PNG"}`, "ok"},
	{"IN-M6-06", "eye-mask", `{"outputFormat":"WEBP"}`, "ok"},
	{"IN-M6-06", "eye-mask", `{"outputFormat":"BMP"}`, "refuse body.outputFormat enum"},
	{"IN-M6-06", "eye-mask", `{"outputType":"base64Data"}`, "refuse body.outputType enum"},

	// M7.
	{"IN-M7-01", "image-edit", `={"positivePrompt":"a cat"}`, "refuse body.inputs missing"},
	{"IN-M7-01", "image-edit", `={"positivePrompt":"a cat","inputs":{}}`, "refuse body.inputs.referenceImages missing"},
	{"IN-M7-01", "image-edit", `{"inputs":{"referenceImages":[]}}`, "refuse body.inputs.referenceImages too_short"},
	{"IN-M7-01", "image-edit", `{"inputs":{"referenceImages":[` + u + `,` + u2 + `]}}`, "refuse body.inputs.referenceImages too_long"},
	{"IN-M7-02", "image-edit", `{"positivePrompt":""}`, "refuse body.positivePrompt string_too_short"},
	{"IN-M7-02", "image-edit", `{"positivePrompt":"@s1"}`, "ok"},
	{"IN-M7-02", "image-edit", `{"positivePrompt":"@s32000"}`, "ok"},
	{"IN-M7-02", "image-edit", `{"positivePrompt":"@s32001"}`, "refuse body.positivePrompt string_too_long"},
	{"IN-M7-02", "image-edit", `{"negativePrompt":""}`, "refuse body.negativePrompt string_too_short"},
	{"IN-M7-02", "image-edit", `{"negativePrompt":"@s1"}`, "ok"},
	{"IN-M7-02", "image-edit", `{"negativePrompt":"@s32000"}`, "ok"},
	{"IN-M7-02", "image-edit", `{"negativePrompt":"@s32001"}`, "refuse body.negativePrompt string_too_long"},
	{"IN-M7-03", "image-edit", `{}`, "ok width=1024 height=1024"},
	{"IN-M7-03", "image-edit", `{"width":128,"height":2048}`, "ok"},
	{"IN-M7-03", "image-edit", `{"width":127,"height":1024}`, "refuse body.width greater_than_equal"},
	{"IN-M7-03", "image-edit", `{"width":1024,"height":2049}`, "refuse body.height less_than_equal"},
	{"IN-M7-03", "image-edit", `{"height":512}`, "rule width_height_pair body.width"},
	{"IN-M7-04", "image-edit", `{}`, "ok steps=8"},
	{"IN-M7-04", "image-edit", `{"steps":1}`, "ok"},
	{"IN-M7-04", "image-edit", `{"steps":100}`, "ok"},
	{"IN-M7-04", "image-edit", `{"steps":0}`, "refuse body.steps greater_than_equal"},
	{"IN-M7-04", "image-edit", `{"steps":101}`, "refuse body.steps less_than_equal"},
	{"IN-M7-05", "image-edit", `{"scheduler":"Euler a"}`, "ok"},
	{"IN-M7-05", "image-edit", `{"scheduler":"Euler Trailing"}`, "refuse body.scheduler enum"},
	{"IN-M7-06", "image-edit", `{}`, "ok CFGScale=-"},
	{"IN-M7-06", "image-edit", `{"CFGScale":1}`, "ok"},
	{"IN-M7-06", "image-edit", `{"CFGScale":20}`, "ok"},
	{"IN-M7-06", "image-edit", `{"CFGScale":0.99}`, "refuse body.CFGScale greater_than_equal"},
	{"IN-M7-06", "image-edit", `{"CFGScale":20.01}`, "refuse body.CFGScale less_than_equal"},
	{"IN-M7-07", "image-edit", `{"settings":{"trueCFGScale":4.5}}`, "ok settings.trueCFGScale=4.5"},
	{"IN-M7-07", "image-edit", `{"settings":{"trueCFGScale":"4.5"}}`, "refuse body.settings.trueCFGScale float_type"},
	{"IN-M7-07", "image-edit", `{"trueCFGScale":4.5}`, "refuse body.trueCFGScale extra_forbidden"},
	{"IN-M7-08", "image-edit", `{"acceleratorOptions":{"fbCache":true},"ultralytics":{"steps":10},"lora":[{"model":"a"}],"outputFormat":"PNG"}`, "ok ultralytics.CFGScale=8"},
	{"IN-M7-08", "image-edit", `{"acceleration":"high"}`, "refuse body.acceleration extra_forbidden"},
	{"IN-M7-09", "image-edit", `{"acceleratorOptions":{"cacheStartStep":1,"cacheStartStepPercentage":10}}`, "rule cache_start_exclusive body.acceleratorOptions.cacheStartStepPercentage"},
	{"IN-M7-09", "image-edit", `{"acceleratorOptions":{"cacheEndStep":5,"cacheEndStepPercentage":10}}`, "rule cache_end_exclusive body.acceleratorOptions.cacheEndStepPercentage"},
	{"IN-M7-09", "image-edit", `{"acceleratorOptions":{"fbCache":true,"dbCache":true}}`, "rule cache_exclusive body.acceleratorOptions"},
	{"IN-M7-09", "image-edit", `{"acceleratorOptions":{"teaCache":true,"dbCache":true}}`, "rule cache_exclusive body.acceleratorOptions"},
	{"IN-M7-09", "image-edit", `{"acceleratorOptions":{"fbCache":true,"teaCache":true}}`, "rule cache_exclusive body.acceleratorOptions"},
	{"IN-M7-10", "image-edit", `{"lora":[{}]}`, "rule lora_items body.lora.0.model"},
	{"IN-M7-10", "image-edit", `{"advancedFeatures":{"watermark":{"opacity":1}}}`, "rule watermark_source body.advancedFeatures.watermark"},

	// M8.
	{"IN-M8-01", "image-dev", `={}`, "refuse body.positivePrompt missing"},
	{"IN-M8-01", "image-dev", `{"positivePrompt":"@s1"}`, "refuse body.positivePrompt string_too_short"},
	{"IN-M8-01", "image-dev", `{"positivePrompt":"@s2"}`, "ok"},
	{"IN-M8-01", "image-dev", `{"positivePrompt":"@s3000"}`, "ok"},
	{"IN-M8-01", "image-dev", `{"positivePrompt":"@s3001"}`, "refuse body.positivePrompt string_too_long"},
	{"IN-M8-01", "image-dev", `{"negativePrompt":"@s1"}`, "refuse body.negativePrompt string_too_short"},
	{"IN-M8-01", "image-dev", `{"negativePrompt":"@s3000"}`, "ok"},
	{"IN-M8-01", "image-dev", `{"negativePrompt":"@s3001"}`, "refuse body.negativePrompt string_too_long"},
	{"IN-M8-02", "image-dev", `{}`, "ok width=1024 height=1024"},
	{"IN-M8-02", "image-dev", `{"width":128,"height":2048}`, "ok"},
	{"IN-M8-02", "image-dev", `{"width":127,"height":1024}`, "refuse body.width greater_than_equal"},
	{"IN-M8-02", "image-dev", `{"width":1024,"height":2049}`, "refuse body.height less_than_equal"},
	{"IN-M8-02", "image-dev", `{"width":512}`, "rule width_height_pair body.height"},
	{"IN-M8-03", "image-dev", `{}`, "ok steps=28"},
	{"IN-M8-03", "image-dev", `{"steps":1}`, "ok"},
	{"IN-M8-03", "image-dev", `{"steps":100}`, "ok"},
	{"IN-M8-03", "image-dev", `{"steps":0}`, "refuse body.steps greater_than_equal"},
	{"IN-M8-03", "image-dev", `{"steps":101}`, "refuse body.steps less_than_equal"},
	{"IN-M8-04", "image-dev", `{"scheduler":"LCM"}`, "ok"},
	{"IN-M8-04", "image-dev", `{"scheduler":"Euler Trailing"}`, "refuse body.scheduler enum"},
	{"IN-M8-04", "image-dev", `{}`, "ok CFGScale=-"},
	{"IN-M8-04", "image-dev", `{"CFGScale":0}`, "ok"},
	{"IN-M8-04", "image-dev", `{"CFGScale":20}`, "ok"},
	{"IN-M8-04", "image-dev", `{"CFGScale":-0.01}`, "refuse body.CFGScale greater_than_equal"},
	{"IN-M8-04", "image-dev", `{"CFGScale":20.01}`, "refuse body.CFGScale less_than_equal"},
	{"IN-M8-05", "image-dev", `{"inputs":{"seedImage":` + u + `,"maskImage":` + u2 + `},"strength":0.6,"maskMargin":64,"outpaint":{"top":64,"blur":8}}`, "ok strength=0.6"},
	{"IN-M8-06", "image-dev", `{"promptWeighting":"sdEmbeds"}`, "ok promptWeighting=\"sdEmbeds\""},
	{"IN-M8-06", "image-dev", `{"promptWeighting":"compel"}`, "refuse body.promptWeighting enum"},
	{"IN-M8-06", "image-dev", `{"promptWeighting":"sdembeds"}`, "refuse body.promptWeighting enum"},
	{"IN-M8-06", "image-dev", `{}`, "ok promptWeighting=-"},
	{"IN-M8-07", "image-dev", `{"lora":[{"model":"a"}],"controlNet":[{"model":"svc-serverless:98@1","guideImage":` + u + `}],"ultralytics":{},"outputFormat":"WEBP","outputQuality":50,"safety":{"checkContent":false},"advancedFeatures":{"watermark":{"text":"ab"}}}`, "ok safety.checkContent=true ultralytics.steps=20"},
	{"IN-M8-08", "image-dev", `{"ipAdapters":[{"model":"svc-serverless:56@1","guideImages":[` + u + `]}]}`, "ok ipAdapters.0.weight=1"},
	{"IN-M8-08", "image-dev", `{"ipAdapters":[{"model":"svc-serverless:56@2","guideImages":[` + u + `]}]}`, "ok"},
	{"IN-M8-08", "image-dev", `{"ipAdapters":[{"model":"svc-serverless:56@3","guideImages":[` + u + `]}]}`, "ok"},
	{"IN-M8-08", "image-dev", `{"ipAdapters":[{"model":"svc-serverless:56@4","guideImages":[` + u + `]}]}`, "ok"},
	{"IN-M8-08", "image-dev", `{"ipAdapters":[{"model":"svc-serverless:56@5","guideImages":[` + u + `]}]}`, "refuse body.ipAdapters.0.model enum"},
	{"IN-M8-08", "image-dev", `{"ipAdapters":[{"model":"svc-serverless:55@1","guideImages":[` + u + `]}]}`, "refuse body.ipAdapters.0.model enum"},
	{"IN-M8-08", "image-turbo", `{"ipAdapters":[{"model":"svc-serverless:56@1","guideImages":[` + u + `]}]}`, "refuse body.ipAdapters extra_forbidden"},
	{"IN-M8-09", "image-dev", `{"ipAdapters":[{"model":"svc-serverless:56@1","guideImages":[` + u + `,` + u2 + `,` + u + `],"weight":-4}]}`, "ok"},
	{"IN-M8-09", "image-dev", `{"ipAdapters":[{"model":"svc-serverless:56@1","guideImages":[` + u + `],"weight":4}]}`, "ok"},
	{"IN-M8-09", "image-dev", `{"ipAdapters":[{"model":"svc-serverless:56@1","guideImages":[` + u + `],"weight":4.01}]}`, "refuse body.ipAdapters.0.weight less_than_equal"},
	{"IN-M8-09", "image-dev", `{"ipAdapters":[{"model":"svc-serverless:56@1","guideImages":[` + u + `],"weight":-4.01}]}`, "refuse body.ipAdapters.0.weight greater_than_equal"},
	{"IN-M8-09", "image-dev", `{"ipAdapters":[{"model":"svc-serverless:56@1","guideImages":[]}]}`, "refuse body.ipAdapters.0.guideImages too_short"},
	{"IN-M8-09", "image-dev", `{"ipAdapters":[{"model":"svc-serverless:56@1","guideImages":["g.png"]}]}`, "refuse body.ipAdapters.0.guideImages.0 url_type"},
	{"IN-M8-10", "image-dev", `{"ipAdapters":[]}`, "rule ip_adapter_items body.ipAdapters"},
	{"IN-M8-10", "image-dev", `{"ipAdapters":[{"guideImages":[` + u + `]}]}`, "rule ip_adapter_items body.ipAdapters.0.model"},
	{"IN-M8-10", "image-dev", `{"ipAdapters":[{"model":"svc-serverless:56@1"}]}`, "rule ip_adapter_items body.ipAdapters.0.guideImages"},
	{"IN-M8-11", "image-dev", `{"advancedFeatures":{"layerDiffuse":true},"outputFormat":"PNG"}`, "ok"},
	{"IN-M8-11", "image-dev", `{"advancedFeatures":{"layerDiffuse":false}}`, "ok"},
	{"IN-M8-11", "image-dev", `{"advancedFeatures":{"layerDiffuse":true}}`, "rule layer_diffuse_png body.outputFormat"},
	{"IN-M8-11", "image-dev", `{"advancedFeatures":{"layerDiffuse":true},"outputFormat":"WEBP"}`, "rule layer_diffuse_png body.outputFormat"},
	{"IN-M8-11", "image-dev", `{"advancedFeatures":{"layerDiffuse":"yes"}}`, "refuse body.advancedFeatures.layerDiffuse bool_type"},
	{"IN-M8-11", "image-turbo", `{"advancedFeatures":{"layerDiffuse":true},"outputFormat":"PNG"}`, "refuse body.advancedFeatures.layerDiffuse extra_forbidden"},
	{"IN-M8-12", "image-dev", `{"hiresFix":true}`, "ok hiresFix=true"},
	{"IN-M8-12", "image-dev", `{"hiresFix":{"model":"serverless:504@1","steps":10,"strength":0.5}}`, "ok"},
	{"IN-M8-12", "image-dev", `{"hiresFix":{"steps":10}}`, "refuse body.hiresFix.model missing"},
	{"IN-M8-12", "image-dev", `{"hiresFix":false}`, "refuse body.hiresFix true_or_object_type"},
	{"IN-M8-12", "image-dev", `{"hiresFix":"serverless:504@1"}`, "refuse body.hiresFix true_or_object_type"},
	{"IN-M8-13", "image-dev", `{"hiresFix":{"model":"serverless:504@1"}}`, "ok"},
	{"IN-M8-13", "image-dev", `{"hiresFix":{"model":"serverless:realesrgan@anime-6b"}}`, "ok"},
	{"IN-M8-13", "image-dev", `{"hiresFix":{"model":"serverless:esrgan@animesharp"}}`, "ok"},
	{"IN-M8-13", "image-dev", `{"hiresFix":{"model":"serverless:esrgan@ultrasharp"}}`, "ok"},
	{"IN-M8-13", "image-dev", `{"hiresFix":{"model":"svc-serverless:504@1"}}`, "refuse body.hiresFix.model enum"},
	{"IN-M8-13", "image-dev", `{"hiresFix":{"model":"serverless:esrgan@UltraSharp"}}`, "refuse body.hiresFix.model enum"},
	{"IN-M8-14", "image-dev", `{"pulid":{"images":[` + u + `],"CFGstartStep":0}}`, "ok"},
	{"IN-M8-14", "image-dev", `{"pulid":{"images":[` + u + `],"CFGstartStep":-1}}`, "refuse body.pulid.CFGstartStep greater_than_equal"},
	{"IN-M8-14", "image-dev", `{"pulid":{"images":[` + u + `],"CFGstartStepPercentage":0}}`, "ok"},
	{"IN-M8-14", "image-dev", `{"pulid":{"images":[` + u + `],"CFGstartStepPercentage":99}}`, "ok"},
	{"IN-M8-14", "image-dev", `{"pulid":{"images":[` + u + `],"CFGstartStepPercentage":100}}`, "refuse body.pulid.CFGstartStepPercentage less_than_equal"},
	{"IN-M8-14", "image-dev", `{"pulid":{"images":[` + u + `],"CFGstartStepPercentage":-1}}`, "refuse body.pulid.CFGstartStepPercentage greater_than_equal"},
	{"IN-M8-15", "image-dev", `{"pulid":{"images":[` + u + `]}}`, "ok pulid.idWeight=1 pulid.trueCFGScale=-"},
	{"IN-M8-15", "image-dev", `{"pulid":{"images":[` + u + `],"idWeight":0,"trueCFGScale":0}}`, "ok"},
	{"IN-M8-15", "image-dev", `{"pulid":{"images":[` + u + `],"idWeight":3,"trueCFGScale":10}}`, "ok"},
	{"IN-M8-15", "image-dev", `{"pulid":{"images":[` + u + `],"idWeight":3.01}}`, "refuse body.pulid.idWeight less_than_equal"},
	{"IN-M8-15", "image-dev", `{"pulid":{"images":[` + u + `],"idWeight":-0.01}}`, "refuse body.pulid.idWeight greater_than_equal"},
	{"IN-M8-15", "image-dev", `{"pulid":{"images":[` + u + `],"trueCFGScale":10.01}}`, "refuse body.pulid.trueCFGScale less_than_equal"},
	{"IN-M8-15", "image-dev", `{"pulid":{"images":[` + u + `],"trueCFGScale":-0.01}}`, "refuse body.pulid.trueCFGScale greater_than_equal"},
	{"IN-M8-16", "image-dev", `{"pulid":{"images":[]}}`, "refuse body.pulid.images too_short"},
	{"IN-M8-16", "image-dev", `{"pulid":{"images":[` + u + `,` + u2 + `]}}`, "refuse body.pulid.images too_long"},
	{"IN-M8-16", "image-dev", `{"pulid":{"images":["face.png"]}}`, "refuse body.pulid.images.0 url_type"},
	{"IN-M8-17", "image-dev", `{"pulid":{}}`, "rule pulid_fields body.pulid.images"},
	{"IN-M8-17", "image-dev", `{"pulid":{"images":[` + u + `],"CFGstartStep":1,"CFGstartStepPercentage":10}}`, "rule pulid_fields body.pulid.CFGstartStepPercentage"},
	{"IN-M8-18", "image-dev", `{"trueCFGScale":3.5}`, "ok trueCFGScale=3.5"},
	{"IN-M8-18", "image-dev", `{"trueCFGScale":"3.5"}`, "refuse body.trueCFGScale float_type"},
	{"IN-M8-19", "image-dev", `{"acceleratorOptions":{"teaCache":true,"dbCache":true}}`, "rule cache_exclusive body.acceleratorOptions"},
	{"IN-M8-19", "image-dev", `{"acceleratorOptions":{"teaCache":true,"dbCache":false}}`, "ok"},
	{"IN-M8-19", "image-dev", `{"acceleratorOptions":{"fbCacheThreshold":0.5}}`, "refuse body.acceleratorOptions.fbCacheThreshold extra_forbidden"},
	{"IN-M8-20", "image-dev", `{"height":1024}`, "rule width_height_pair body.width"},
	{"IN-M8-20", "image-dev", `{"inputs":{"maskImage":` + u + `}}`, "rule seed_image_required body.inputs.seedImage"},
	{"IN-M8-20", "image-dev", `{"outpaint":{"blur":2}}`, "rule outpaint_side body.outpaint"},
	{"IN-M8-20", "image-dev", `{"lora":[{"weight":1}]}`, "rule lora_items body.lora.0.model"},
	{"IN-M8-20", "image-dev", `{"controlNet":[{"model":"svc-serverless:26@1"}]}`, "rule controlnet_items body.controlNet.0.guideImage"},
	{"IN-M8-20", "image-dev", `{"advancedFeatures":{"watermark":{}}}`, "rule watermark_source body.advancedFeatures.watermark"},
	{"IN-M8-20", "image-dev", `{"acceleratorOptions":{"cacheStartStep":1,"cacheStartStepPercentage":10}}`, "rule cache_start_exclusive body.acceleratorOptions.cacheStartStepPercentage"},

	// M9.
	{"IN-M9-01", "image-turbo", `={}`, "refuse body.positivePrompt missing"},
	{"IN-M9-01", "image-turbo", `{"positivePrompt":"@s1"}`, "refuse body.positivePrompt string_too_short"},
	{"IN-M9-01", "image-turbo", `{"positivePrompt":"@s2"}`, "ok"},
	{"IN-M9-01", "image-turbo", `{"positivePrompt":"@s10000"}`, "ok"},
	{"IN-M9-01", "image-turbo", `{"positivePrompt":"@s10001"}`, "refuse body.positivePrompt string_too_long"},
	{"IN-M9-01", "image-turbo", `{"negativePrompt":"@s1"}`, "refuse body.negativePrompt string_too_short"},
	{"IN-M9-01", "image-turbo", `{"negativePrompt":"@s2"}`, "ok"},
	{"IN-M9-01", "image-turbo", `{"negativePrompt":"@s3000"}`, "ok"},
	{"IN-M9-01", "image-turbo", `{"negativePrompt":"@s3001"}`, "refuse body.negativePrompt string_too_long"},
	{"IN-M9-02", "image-turbo", `{}`, "ok width=1024 height=1024"},
	{"IN-M9-02", "image-turbo", `{"width":2048,"height":128}`, "ok"},
	{"IN-M9-02", "image-turbo", `{"width":1024,"height":127}`, "refuse body.height greater_than_equal"},
	{"IN-M9-02", "image-turbo", `{"width":2049,"height":1024}`, "refuse body.width less_than_equal"},
	{"IN-M9-02", "image-turbo", `{"width":768}`, "rule width_height_pair body.height"},
	{"IN-M9-03", "image-turbo", `{}`, "ok steps=8"},
	{"IN-M9-03", "image-turbo", `{"steps":1}`, "ok"},
	{"IN-M9-03", "image-turbo", `{"steps":50}`, "ok"},
	{"IN-M9-03", "image-turbo", `{"steps":0}`, "refuse body.steps greater_than_equal"},
	{"IN-M9-03", "image-turbo", `{"steps":51}`, "refuse body.steps less_than_equal"},
	{"IN-M9-04", "image-turbo", `{"scheduler":"UniPC"}`, "ok"},
	{"IN-M9-04", "image-turbo", `{"scheduler":"PNDM"}`, "refuse body.scheduler enum"},
	{"IN-M9-04", "image-turbo", `{}`, "ok CFGScale=-"},
	{"IN-M9-04", "image-turbo", `{"CFGScale":0}`, "ok"},
	{"IN-M9-04", "image-turbo", `{"CFGScale":20}`, "ok"},
	{"IN-M9-04", "image-turbo", `{"CFGScale":-0.01}`, "refuse body.CFGScale greater_than_equal"},
	{"IN-M9-04", "image-turbo", `{"CFGScale":20.01}`, "refuse body.CFGScale less_than_equal"},
	{"IN-M9-05", "image-turbo", `{"inputs":{"seedImage":` + u + `,"maskImage":` + u2 + `},"strength":0.6,"maskMargin":32,"outpaint":{"left":16,"right":16,"blur":0}}`, "ok strength=0.6"},
	{"IN-M9-06", "image-turbo", `{"lora":[{"model":"a"}],"controlNet":[{"model":"svc-serverless:z-image@turbo-controlnet","guideImage":` + u + `}],"ultralytics":{},"outputFormat":"PNG","safety":{"checkContent":false},"advancedFeatures":{"watermark":{"image":` + u + `}},"acceleratorOptions":{"fbCache":true}}`, "ok ultralytics.inpaintSize=1024 acceleratorOptions.fbCacheThreshold=0.25"},
	{"IN-M9-06", "image-turbo", `{"pulid":{"images":[` + u + `]}}`, "refuse body.pulid extra_forbidden"},
	{"IN-M9-06", "image-turbo", `{"hiresFix":true}`, "refuse body.hiresFix extra_forbidden"},
	{"IN-M9-06", "image-turbo", `{"promptWeighting":"sdEmbeds"}`, "refuse body.promptWeighting extra_forbidden"},
	{"IN-M9-06", "image-turbo", `{"acceleration":"high"}`, "refuse body.acceleration extra_forbidden"},
	{"IN-M9-07", "image-turbo", `{"acceleratorOptions":{"fbCache":true,"teaCache":true}}`, "rule cache_exclusive body.acceleratorOptions"},
	{"IN-M9-07", "image-turbo", `{"acceleratorOptions":{"fbCache":true,"dbCache":true}}`, "rule cache_exclusive body.acceleratorOptions"},
	{"IN-M9-07", "image-turbo", `{"acceleratorOptions":{"teaCache":true,"dbCache":true}}`, "rule cache_exclusive body.acceleratorOptions"},
	{"IN-M9-07", "image-turbo", `{"acceleratorOptions":{"cacheStartStep":1,"cacheStartStepPercentage":10}}`, "rule cache_start_exclusive body.acceleratorOptions.cacheStartStepPercentage"},
	{"IN-M9-07", "image-turbo", `{"acceleratorOptions":{"cacheEndStep":5,"cacheEndStepPercentage":10}}`, "rule cache_end_exclusive body.acceleratorOptions.cacheEndStepPercentage"},
	{"IN-M9-08", "image-turbo", `{"width":1024}`, "rule width_height_pair body.height"},
	{"IN-M9-08", "image-turbo", `{"strength":0.2}`, "rule seed_image_required body.inputs.seedImage"},
	{"IN-M9-08", "image-turbo", `{"outpaint":{}}`, "rule outpaint_side body.outpaint"},
	{"IN-M9-08", "image-turbo", `{"lora":[]}`, "rule lora_items body.lora"},
	{"IN-M9-08", "image-turbo", `{"controlNet":[]}`, "rule controlnet_items body.controlNet"},
	{"IN-M9-08", "image-turbo", `{"advancedFeatures":{"watermark":{"text":"ab","image":` + u + `}}}`, "rule watermark_source body.advancedFeatures.watermark"},
}

// The value sets exactly as spec 01 prints them, backticks included.
const (
	specSetA      = "`DDIM`, `DDIMScheduler`, `DDPMScheduler`, `DEISMultistepScheduler`, `Default`, `DPM++`, `DPM++ 2M`, `DPM++ 2M Beta`, `DPM++ 2M Exponential`, `DPM++ 2M Karras`, `DPM++ 2M SDE`, `DPM++ 2M SDE Beta`, `DPM++ 2M SDE Exponential`, `DPM++ 2M SDE Karras`, `DPM++ 2M SDE Uniform`, `DPM++ 2M Uniform`, `DPM++ 3M`, `DPM++ 3M Beta`, `DPM++ 3M Exponential`, `DPM++ 3M Karras`, `DPM++ 3M SDE Uniform`, `DPM++ 3M Uniform`, `DPM++ Beta`, `DPM++ Exponential`, `DPM++ Karras`, `DPM++ SDE`, `DPM++ SDE Beta`, `DPM++ SDE Exponential`, `DPM++ SDE Karras`, `DPM++ Uniform`, `DPM++ Uniform Beta`, `DPM++ Uniform Exponential`, `DPM++ Uniform Karras`, `DPMSolverMultistepInverse`, `DPMSolverMultistepScheduler`, `DPMSolverSinglestepScheduler`, `EDMDPMSolverMultistepScheduler`, `EDMEulerScheduler`, `Euler`, `Euler a`, `Euler Beta`, `Euler Exponential`, `Euler Karras`, `EulerAncestralDiscreteScheduler`, `EulerDiscreteScheduler`, `FlowMatchEulerDiscreteScheduler`, `Heun`, `HeunDiscreteScheduler`, `Heun Karras`, `IPNDMScheduler`, `IPNDM Uniform`, `IPNDM Uniform Beta`, `IPNDM Uniform Exponential`, `IPNDM Uniform Karras`, `KDPM2AncestralDiscreteScheduler`, `KDPM2DiscreteScheduler`, `LCM`, `LCMScheduler`, `LMS`, `LMSDiscreteScheduler`, `LMS Karras`, `PNDMScheduler`, `TCDScheduler`, `UniPC`, `UniPC 2M`, `UniPC 2M Karras`, `UniPC 2M Uniform`, `UniPC 3M`, `UniPC 3M Karras`, `UniPC 3M Uniform`, `UniPC Karras`, `UniPC Uniform`, `UniPC Uniform Beta`, `UniPC Uniform Exponential`, `UniPC Uniform Karras`."
	specSetB      = "`DPM++ 2M Karras`, `DPM++ SDE Karras`, `DPM++ 2M SDE Exponential`, `DPM++ 2M SDE Karras`, `Euler`, `Euler a`, `Euler Trailing`, `LCM`, `DDIM`, `DDPM`, `PNDM`, `UniPC`."
	specVocal     = "`unknown` (instrumental or auto-detect), `ar`, `az`, `bg`, `bn`, `ca`, `cs`, `da`, `de`, `el`, `en`, `es`, `fa`, `fi`, `fr`, `he`, `hi`, `hr`, `ht`, `hu`, `id`, `is`, `it`, `ja`, `ko`, `la`, `lt`, `ms`, `ne`, `nl`, `no`, `pa`, `pl`, `pt`, `ro`, `ru`, `sa`, `sk`, `sr`, `sv`, `sw`, `ta`, `te`, `th`, `tl`, `tr`, `uk`, `ur`, `vi`, `yue`, `zh`"
	specPositions = "`top-left`, `top-center`, `top-right`, `center-left`, `center-center`, `center-right`, `bottom-left`, `bottom-center`, `bottom-right`, `tiled`"
	specCNM8      = "`svc-serverless:25@1`, `svc-serverless:26@1`, `svc-serverless:27@1`, `svc-serverless:28@1`, `svc-serverless:29@1`, `svc-serverless:30@1`, `svc-serverless:31@1`, `svc-serverless:98@1`"
)

var backticked = regexp.MustCompile("`([^`]+)`")

func specValues(s string) []string {
	var out []string
	for _, m := range backticked.FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	return out
}

// generatedLetterCases are the cases of the spec's long lists: every member accepted where
// the spec lists it, bitrate bounds at every sample rate (accepted at each end, a cross-field
// violation one past it).
func generatedLetterCases() []letterCase {
	var out []letterCase
	str := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	for _, v := range specValues(specSetA) {
		for _, slug := range []string{"image-4b", "image-edit", "image-dev", "image-turbo"} {
			out = append(out, letterCase{"IN-SHARED-41", slug, `{"scheduler":` + str(v) + `}`, "ok scheduler=" + str(v)})
		}
		out = append(out, letterCase{"IN-SHARED-41", "image-9b-kv", `{"scheduler":` + str(v) + `}`, "ok"})
		out = append(out, letterCase{"IN-SHARED-41", "upscale", `{"settings":{"scheduler":` + str(v) + `}}`, "ok settings.scheduler=" + str(v)})
	}
	for _, v := range specValues(specSetB) {
		out = append(out, letterCase{"IN-SHARED-42", "image-lite", `{"scheduler":` + str(v) + `}`, "ok scheduler=" + str(v)})
	}
	for _, v := range specValues(specVocal) {
		out = append(out, letterCase{"IN-M5-12", "music-turbo", `{"settings":{"vocalLanguage":` + str(v) + `}}`, "ok settings.vocalLanguage=" + str(v)})
	}
	for _, v := range specValues(specPositions) {
		for _, slug := range []string{"image-9b-kv", "image-4b", "image-lite", "image-edit", "image-dev", "image-turbo"} {
			out = append(out, letterCase{"IN-SHARED-12", slug, `{"advancedFeatures":{"watermark":{"text":"ab","displayPosition":` + str(v) + `}}}`, "ok"})
		}
	}
	for _, v := range specValues(specCNM8) {
		out = append(out, letterCase{"IN-SHARED-39", "image-dev", `{"controlNet":[{"model":` + str(v) + `,"guideImage":` + u + `}]}`, "ok"})
	}
	out = append(out, letterCase{"IN-SHARED-39", "image-turbo", `{"controlNet":[{"model":"svc-serverless:z-image@turbo-controlnet","guideImage":` + u + `}]}`, "ok"})

	// MP3 (spec 01 M5 rule 2) and OGG (rule 3; Ogg Opus, DESIGN 8) bitrate bounds.
	type bounds struct {
		format   string
		rate     int64
		channels int64
		lo, hi   int64
	}
	var bs []bounds
	for _, r := range []int64{16000, 22050, 24000} {
		bs = append(bs, bounds{"MP3", r, 2, 8, 160})
	}
	for _, r := range []int64{32000, 44100, 48000} {
		bs = append(bs, bounds{"MP3", r, 2, 32, 320})
	}
	for _, r := range []int64{8000, 11025, 12000} {
		bs = append(bs, bounds{"MP3", r, 2, 8, 64})
	}
	for _, b := range [][5]int64{
		{8000, 8, 40, 16, 80}, {12000, 16, 48, 16, 96}, {16000, 16, 96, 24, 192},
		{24000, 16, 80, 32, 160}, {48000, 32, 224, 48, 256},
	} {
		bs = append(bs, bounds{"OGG", b[0], 1, b[1], b[2]}, bounds{"OGG", b[0], 2, b[3], b[4]})
	}
	for _, b := range bs {
		id, rid := "IN-M5-17", "IN-M5-16"
		if b.format == "OGG" {
			id, rid = "IN-M5-19", "IN-M5-18"
		}
		mk := func(br int64) string {
			return fmt.Sprintf(`{"outputFormat":%q,"audioSettings":{"sampleRate":%d,"channels":%d,"bitrate":%d}}`, b.format, b.rate, b.channels, br)
		}
		out = append(out,
			letterCase{rid, "music-turbo", fmt.Sprintf(`{"outputFormat":%q,"audioSettings":{"sampleRate":%d}}`, b.format, b.rate), "ok"},
			letterCase{id, "music-turbo", mk(b.lo), "ok"},
			letterCase{id, "music-turbo", mk(b.hi), "ok"},
			letterCase{id, "music-turbo", mk(b.hi + 1), "rule audio_bitrate body.audioSettings.bitrate"},
		)
		if b.lo > 8 {
			out = append(out, letterCase{id, "music-turbo", mk(b.lo - 1), "rule audio_bitrate body.audioSettings.bitrate"})
		}
	}
	return out
}

var (
	placeholder = regexp.MustCompile(`"@s(\d+)"`)
	// fillRE reads the path=json pairs of an ok case (a JSON string may hold spaces).
	fillRE = regexp.MustCompile(`(\S+?)=("(?:[^"\\]|\\.)*"|\S+)`)
)

// letterBody builds the request body of a case.
func letterBody(t *testing.T, tc letterCase) []byte {
	t.Helper()
	b := tc.body
	b = placeholder.ReplaceAllStringFunc(b, func(m string) string {
		n, _ := strconv.Atoi(placeholder.FindStringSubmatch(m)[1])
		return `"` + strings.Repeat("é", n) + `"` // characters, not bytes
	})
	if whole, ok := strings.CutPrefix(b, "="); ok {
		return []byte(whole)
	}
	return merged(t, tc.slug, b)
}

// pathValue reads a dotted path (array indexes as numbers) from a decoded tree.
func pathValue(tree any, path string) (any, bool) {
	cur := tree
	for _, p := range strings.Split(path, ".") {
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[p]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(p)
			if err != nil || i < 0 || i >= len(c) {
				return nil, false
			}
			cur = c[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

// TestIN_SpecLetter proves IN-SHARED-01..43, IN-M1-01..03, IN-M2-01..13, IN-M3-01..11,
// IN-M4-01..10, IN-M5-01..22, IN-M6-01..06, IN-M7-01..10, IN-M8-01..20 and IN-M9-01..08
// against the spec's letter, one hand-written request per case (letterCases) plus the spec's
// long lists copied verbatim (generatedLetterCases).
func TestIN_SpecLetter(t *testing.T) {
	c := mustDefault(t)
	max32 := func() uint32 { return 4294967295 }
	for _, tc := range append(slicesClone(letterCases), generatedLetterCases()...) {
		t.Run(tc.id, func(t *testing.T) {
			m := mustModel(t, c, tc.slug)
			body := letterBody(t, tc)
			in, warns, err := m.Validate(body, beforeEnforcement, max32)
			kind, rest, _ := strings.Cut(tc.want, " ")
			fail := func(format string, args ...any) {
				t.Helper()
				short := string(body)
				if len(short) > 300 {
					short = short[:300] + "..."
				}
				t.Errorf("%s %s: %s\nbody %s", tc.slug, tc.want, fmt.Sprintf(format, args...), short)
			}
			switch kind {
			case "ok":
				if err != nil || len(warns) > 0 {
					fail("refused or warned: %v %v", err, warns)
					return
				}
				tree := decodeMap(t, string(in.JSON))
				for _, kv := range fillRE.FindAllStringSubmatch(rest, -1) {
					path, want := kv[1], kv[2]
					got, ok := pathValue(tree, path)
					switch {
					case want == "-" && ok:
						fail("%s = %s, want absent", path, jsonString(got))
					case want != "-" && !ok:
						fail("%s absent, want %s", path, want)
					case want != "-" && jsonString(got) != want:
						fail("%s = %s, want %s", path, jsonString(got), want)
					}
				}
			case "refuse":
				loc, typ, _ := strings.Cut(rest, " ")
				if !hasViolation(err, loc, typ) {
					fail("want %s at %s, got %v (warnings %v)", typ, loc, err, warns)
				}
			case "rule":
				id, loc, _ := strings.Cut(rest, " ")
				if err != nil {
					fail("refused before the enforcement date: %v", err)
					return
				}
				found := false
				for _, w := range warns {
					found = found || (w.Rule == id && strings.Join(w.Loc, ".") == loc)
				}
				if !found {
					fail("no warning %s at %s: %v", id, loc, warns)
				}
				if _, _, err := m.Validate(body, afterEnforcement, max32); !hasViolation(err, loc, TypeCrossField) {
					fail("after the enforcement date: want cross_field at %s, got %v", loc, err)
				}
			case "unpriced":
				var np *NotPricedError
				if !errors.As(err, &np) || np.Message == "" {
					fail("want NotPricedError, got %v", err)
				}
				if _, _, err := m.Validate(body, afterEnforcement, max32); !errors.As(err, &np) {
					fail("after the enforcement date: want NotPricedError, got %v", err)
				}
			default:
				t.Fatalf("bad want %q", tc.want)
			}
		})
	}
}

func slicesClone(cs []letterCase) []letterCase { return append([]letterCase(nil), cs...) }

// TestIN_M5_20_AudioDurationRule proves IN-M5-20: the rule itself (inputs.audio with duration)
// is judged, although no request can reach it today because inputs.audio is refused as
// unpriced first (DESIGN 16; the table above shows that order).
func TestIN_M5_20_AudioDurationRule(t *testing.T) {
	m := mustModel(t, mustDefault(t), "music-turbo")
	var r *rule
	for i := range m.contract.rules {
		if m.contract.rules[i].id == "audio_duration_exclusive" {
			r = &m.contract.rules[i]
		}
	}
	if r == nil {
		t.Fatal("M5 has no audio_duration_exclusive rule")
	}
	both := decodeMap(t, `{"inputs":{"audio":"https://h.example/a.mp3"},"duration":60}`)
	if hs := r.check(both, both); len(hs) != 1 || strings.Join(hs[0].loc, ".") != "body.duration" {
		t.Errorf("audio with duration: %v", hs)
	}
	for _, s := range []string{`{"inputs":{"audio":"https://h.example/a.mp3"}}`, `{"duration":60}`} {
		if hs := r.check(decodeMap(t, s), decodeMap(t, s)); len(hs) != 0 {
			t.Errorf("%s: %v", s, hs)
		}
	}
}

// TestIN_IDsCovered checks every IN id of REQUIREMENTS.md has at least one case above.
func TestIN_IDsCovered(t *testing.T) {
	seen := map[string]bool{}
	for _, tc := range append(slicesClone(letterCases), generatedLetterCases()...) {
		seen[tc.id] = true
	}
	seen["IN-M5-20"] = true // and TestIN_M5_20_AudioDurationRule
	for group, n := range map[string]int{"SHARED": 43, "M1": 3, "M2": 13, "M3": 11, "M4": 10, "M5": 22, "M6": 6, "M7": 10, "M8": 20, "M9": 8} {
		for i := 1; i <= n; i++ {
			if id := fmt.Sprintf("IN-%s-%02d", group, i); !seen[id] {
				t.Errorf("%s has no case", id)
			}
		}
	}
}
