package apierr

// Codes of spec 02 "Errors" (and the few DESIGN.md decision 13 adds). Each constant has exactly
// one row in catalogue; TestERR_CatalogueComplete checks both spec files against this table.
const (
	// Before the request is looked at.
	AccountBanned        Code = "account_banned"
	AccountLimited       Code = "account_limited"
	AccountSuspended     Code = "account_suspended"
	APIDisabled          Code = "api_disabled"
	BrowserOriginRefused Code = "browser_origin_refused"
	InsufficientScope    Code = "insufficient_scope"
	InvalidAPIKey        Code = "invalid_api_key"
	KeyExpired           Code = "key_expired"
	KeyRevoked           Code = "key_revoked"
	KeysNotConfigured    Code = "keys_not_configured"
	MissingAuthorization Code = "missing_authorization"

	// Rate limits, budgets, capacity.
	BodyTooLarge          Code = "body_too_large"
	ExportTooLarge        Code = "export_too_large"
	KeyCreditCeiling      Code = "key_credit_ceiling"
	LimiterUnavailable    Code = "limiter_unavailable"
	PlanHasNoAPIGenerate  Code = "plan_has_no_api_generate"
	QueueTooLong          Code = "queue_too_long"
	RateLimited           Code = "rate_limited"
	RequestTooLarge       Code = "request_too_large"
	StreamDeclined        Code = "stream_declined"
	UsageWindowTooLarge   Code = "usage_window_too_large"
	VendorBudgetExhausted Code = "vendor_budget_exhausted"
	WaitCapacity          Code = "wait_capacity"
	WebhookUnsupported    Code = "webhook_unsupported"

	// Queue and model state.
	ModelNotSynchronous Code = "model_not_synchronous"
	RunTimedOut         Code = "run_timed_out"
	ModelNotConnected   Code = "model_not_connected"
	ModelDisabled       Code = "model_disabled"
	VendorDisabled      Code = "vendor_disabled"
	QueueNotOffered     Code = "queue_not_offered"
	ConflictingOptions  Code = "conflicting_options"
	NotCovered          Code = "not_covered"
	ModelNotInPlan      Code = "model_not_in_plan"
	PassDoesNotCover    Code = "pass_does_not_cover"
	RequestTimeout      Code = "request_timeout"
	DispatchUnresolved  Code = "dispatch_unresolved"
	BandNotPriced       Code = "band_not_priced"
	TooManyJobs         Code = "too_many_jobs"
	ServiceBusy         Code = "service_busy"
	TierBusy            Code = "tier_busy"

	// The request itself.
	ConversationRequired  Code = "conversation_required"
	InputInvalid          Code = "input_invalid"
	InputRequired         Code = "input_required"
	InputTooLong          Code = "input_too_long"
	InputTooMany          Code = "input_too_many"
	InvalidBefore         Code = "invalid_before"
	InvalidBody           Code = "invalid_body"
	InvalidCategory       Code = "invalid_category"
	InvalidExpand         Code = "invalid_expand"
	InvalidIdempotencyKey Code = "invalid_idempotency_key"
	InvalidJSON           Code = "invalid_json"
	InvalidLimit          Code = "invalid_limit"
	InvalidProducts       Code = "invalid_products"
	InvalidTitle          Code = "invalid_title"
	InvalidURL            Code = "invalid_url"
	InvalidWait           Code = "invalid_wait"
	UnknownContentType    Code = "unknown_content_type"
	UnknownEffort         Code = "unknown_effort"
	UnknownModel          Code = "unknown_model"
	UnknownProduct        Code = "unknown_product"
	WaitUnsupported       Code = "wait_unsupported"
	// InvalidInput is the service's code for a model input field outside its contract
	// (the spec names no generic code; DESIGN.md leaves it to us). 422 with detail on queue hosts.
	InvalidInput Code = "invalid_input"

	// Product parser codes.
	ControlDataInvalid        Code = "control_data_invalid"
	ControlNotSupportedByTier Code = "control_not_supported_by_tier"
	ControlTypeRequired       Code = "control_type_required"
	DurationOutOfRange        Code = "duration_out_of_range"
	DurationRequired          Code = "duration_required"
	FbxNeedsARiggedTier       Code = "fbx_needs_a_rigged_tier"
	ImageRequired             Code = "image_required"
	ImageUnreadable           Code = "image_unreadable"
	LyricsTooLong             Code = "lyrics_too_long"
	NumImagesInvalid          Code = "num_images_invalid"
	PromptRequired            Code = "prompt_required"
	PromptTooLong             Code = "prompt_too_long"
	TextRequired              Code = "text_required"
	TextTooLong               Code = "text_too_long"
	UnknownAspect             Code = "unknown_aspect"
	UnknownResolution         Code = "unknown_resolution"
	UnknownStyle              Code = "unknown_style"
	UnknownTier               Code = "unknown_tier"
	ContentPolicy             Code = "content_policy"
	DurationNotInPlan         Code = "duration_not_in_plan"
	ImagesNotInPlan           Code = "images_not_in_plan"
	LyricsNotInPlan           Code = "lyrics_not_in_plan"
	PlanHasNoChat             Code = "plan_has_no_chat"
	PlanHasNoMusic            Code = "plan_has_no_music"
	PlanHasNoPhoto            Code = "plan_has_no_photo"
	PlanHasNoThreed           Code = "plan_has_no_threed"
	PlanHasNoVideo            Code = "plan_has_no_video"
	ResolutionNotInPlan       Code = "resolution_not_in_plan"
	TierNotInPlan             Code = "tier_not_in_plan"
	UpscaleNotInPlan          Code = "upscale_not_in_plan"
	RegionBlocked             Code = "region_blocked"
	RegionInvalid             Code = "region_invalid"
	RegionRequired            Code = "region_required"
	InsufficientCredits       Code = "insufficient_credits"
	Refunded                  Code = "refunded"
	CancelFailed              Code = "cancel_failed"
	CancelRaced               Code = "cancel_raced"
	CancelRefused             Code = "cancel_refused"
	CancelUnsupported         Code = "cancel_unsupported"
	ConversationNotFound      Code = "conversation_not_found"
	Expired                   Code = "expired"
	InFlight                  Code = "in_flight"
	KeySettled                Code = "key_settled"
	NotFound                  Code = "not_found"
	NotReady                  Code = "not_ready"
	ProductNotAvailable       Code = "product_not_available"
	SettleFailed              Code = "settle_failed"
	UpstreamLost              Code = "upstream_lost"
	TooManyWebhooks           Code = "too_many_webhooks"
	WebhookDeleteFailed       Code = "webhook_delete_failed"
	WebhookNotCreated         Code = "webhook_not_created"
	WebhookReadFailed         Code = "webhook_read_failed"
	ChatNotConfigured         Code = "chat_not_configured"
	ChatStartFailed           Code = "chat_start_failed"
	ConversationNotCreated    Code = "conversation_not_created"
	CreditReserveFailed       Code = "credit_reserve_failed"
	JobReadFailed             Code = "job_read_failed"
	JobRecordFailed           Code = "job_record_failed"
	MusicNotConfigured        Code = "music_not_configured"
	NoSigningCredential       Code = "no_signing_credential"
	NotConfigured             Code = "not_configured"
	PhotoNotConfigured        Code = "photo_not_configured"
	CeilingTooHigh            Code = "ceiling_too_high"
	CeilingHeld               Code = "ceiling_held"
	RevisionConflict          Code = "revision_conflict"
	OutputLimitReached        Code = "output_limit_reached"
	InsufficientQuota         Code = "insufficient_quota"
	MethodNotAllowed          Code = "method_not_allowed"
	RunFailed                 Code = "run_failed"
	Stalled                   Code = "stalled"
	Internal                  Code = "internal"
)

func row(code Code, status int, typ string, retry Retry, charged Charged, msg string, carries ...string) Entry {
	return Entry{Code: code, Status: status, Type: typ, Retry: retry, Charged: charged, Message: msg, Carries: carries}
}

// unreachable notes why a catalogued code is never answered by this service.
func unreachable(e Entry, why string) Entry { e.WhyUnreachable = why; return e }

// req marks a row as a refusal of what the request says (422 with detail on queue hosts).
func req(e Entry) Entry { e.Request = true; return e }

const (
	tValidation = "ValidationError"
	tConflict   = "ConflictError"
	tAuth       = "AuthenticationError"
	tPayment    = "PaymentError"
	tPermission = "PermissionError"
	tNotFound   = "NotFoundError"
	tCancel     = "CancellationError"
	tGone       = "GoneError"
	tTooLarge   = "PayloadTooLargeError"
	tContent    = "ContentPolicyError"
	tPrecond    = "PreconditionError"
	tCapacity   = "CapacityError"
	tRateLimit  = "RateLimitError"
	tRegion     = "RegionError"
	tConfig     = "ConfigurationError"
	tInternal   = "InternalError"
	tNotImpl    = "NotImplementedError"
	tUpstream   = "UpstreamError"
	tExecution  = "ExecutionError"
)

var catalogue = func() map[Code]Entry {
	rows := []Entry{
		row(AccountBanned, 403, tPermission, RetryNever, ChargedNo, "This account is banned; its keys are revoked."),
		row(AccountLimited, 403, tPermission, RetryNever, ChargedNo, "This account may read but not spend or write on this bucket.", "bucket"),
		row(AccountSuspended, 403, tPermission, RetryNever, ChargedNo, "This account is suspended."),
		row(APIDisabled, 503, tConfig, RetrySameKey, ChargedNo, "The API or this product is paused; resend later."),
		row(BrowserOriginRefused, 403, tPermission, RetryNever, ChargedNo, "The API accepts no browser calls: remove the Origin header."),
		row(InsufficientScope, 403, tPermission, RetryNever, ChargedNo, "This key lacks the scope this route needs.", "required", "accepted", "scopes"),
		row(InvalidAPIKey, 401, tAuth, RetryNever, ChargedNo, "The API key is malformed or unknown."),
		row(KeyExpired, 401, tAuth, RetryNever, ChargedNo, "This API key has expired."),
		row(KeyRevoked, 401, tAuth, RetryNever, ChargedNo, "This API key has been revoked."),
		row(KeysNotConfigured, 503, tConfig, RetryNever, ChargedNo, "This deployment has no key verification secret."),
		row(MissingAuthorization, 401, tAuth, RetryNever, ChargedNo, "Send Authorization: Bearer <API_KEY>."),

		row(BodyTooLarge, 413, tTooLarge, RetryNever, ChargedNo, "The request body is over 1 MiB; send files through uploads.", "limit_bytes"),
		row(ExportTooLarge, 413, tTooLarge, RetryNever, ChargedNo, "The usage export would exceed one file.", "window", "rows", "max_rows"),
		row(KeyCreditCeiling, 403, tPermission, RetryNever, ChargedNo, "This key's monthly credit ceiling would be exceeded.", "ceiling", "spent", "required"),
		row(LimiterUnavailable, 503, tInternal, RetryAfterRetryAfter, ChargedNo, "The rate limiter cannot be reached."),
		row(PlanHasNoAPIGenerate, 403, tPermission, RetryNever, ChargedNo, "This plan has no capacity on this bucket.", "plan", "bucket"),
		row(QueueTooLong, 429, tCapacity, RetrySameKey, ChargedNo, "More requests are waiting than max_queue_length allows.", "waiting", "max"),
		row(RateLimited, 429, tRateLimit, RetryAfterRetryAfter, ChargedNo, "Rate limit reached; retry after Retry-After seconds.", "bucket", "retry_after", "reason"),
		row(RequestTooLarge, 413, tTooLarge, RetryNever, ChargedNo, "This request costs more than the bucket can ever hold.", "plan", "bucket", "limit"),
		row(StreamDeclined, 503, tCapacity, RetryAfterRetryAfter, ChargedNo, "No seat is free for a status stream.", "declined"),
		row(UsageWindowTooLarge, 413, tTooLarge, RetryNever, ChargedNo, "The usage window is too big to read.", "window", "allowed", "max_months"),
		row(VendorBudgetExhausted, 503, tCapacity, RetrySameKey, ChargedNo, "The model is at capacity."),
		row(WaitCapacity, 429, tCapacity, RetryAfterRetryAfter, ChargedBool, "No seat is free to hold this connection; nothing was charged.", "wait_declined"),
		req(row(WebhookUnsupported, 400, tValidation, RetryNever, ChargedNo, "This address does not deliver per-request webhooks.")),

		row(ModelNotSynchronous, 400, tValidation, RetryNever, ChargedNo, "This model usually runs longer than a held connection; use the queue host.", "expected_seconds", "wait_ceiling_seconds"),
		row(RunTimedOut, 504, tUpstream, RetryPollFirst, ChargedBool, "The synchronous deadline passed; the job continues: poll status_url or resend with the same idempotency_key.", "status_url", "response_url", "idempotency_key"),
		row(ModelNotConnected, 501, tNotImpl, RetryNever, ChargedNo, "This address is described but not connected."),
		row(ModelDisabled, 503, tUpstream, RetrySameKey, ChargedNo, "This address is paused."),
		row(VendorDisabled, 503, tUpstream, RetrySameKey, ChargedNo, "This model family is paused."),
		req(row(QueueNotOffered, 422, tValidation, RetryNever, ChargedNo, "This model does not queue: queue options are refused.", "option")),
		req(row(ConflictingOptions, 400, tConflict, RetryNever, ChargedNo, "Two spellings of one option disagree.", "options", "option")),
		row(NotCovered, 409, tConflict, RetryNever, ChargedNo, "X-Svc-Covered-Only was sent and no pass or promotion pays for this job."),
		row(ModelNotInPlan, 403, tPermission, RetryNever, ChargedNo, "This pass-only plan does not include this model.", "plan"),
		row(PassDoesNotCover, 409, tConflict, RetryNever, ChargedNo, "The pass held does not cover this job.", "pass", "why"),
		row(RequestTimeout, 503, tCapacity, RetryNewKey, ChargedRefunded, "The job waited longer than its request timeout for a seat; refunded. Its key replays this failure: resend under a new one."),
		row(DispatchUnresolved, 202, tUpstream, RetryPollFirst, ChargedStands, "Dispatch could not be confirmed; the charge stands: poll, never resend under a new key."),
		req(row(BandNotPriced, 422, tValidation, RetryNever, ChargedNo, "This combination is outside every priced band.")),
		row(TooManyJobs, 429, tCapacity, RetrySameKey, ChargedNo, "The account already has its limit of jobs in flight.", "limit", "plan", "tier"),
		row(ServiceBusy, 429, tCapacity, RetrySameKey, ChargedNo, "No runner is free to start this job now; nothing was charged."),
		unreachable(row(TierBusy, 429, tCapacity, RetrySameKey, ChargedNo, "This tier is full.", "tier", "limit"),
			"A tier's seats are full only on video models, which are served per tier; the catalogue this service runs has no video model and no model with tiers, so too_many_jobs (per account) and service_busy (per model) are the capacity refusals that arise."),

		row(ConversationRequired, 400, tValidation, RetryNever, ChargedNo, "A conversation is required."),
		row(InputInvalid, 400, tValidation, RetryNever, ChargedNo, "An element of input is not a string.", "index"),
		row(InputRequired, 400, tValidation, RetryNever, ChargedNo, "input is required."),
		row(InputTooLong, 400, tValidation, RetryNever, ChargedNo, "A string is over the embedding context window.", "index", "context_window"),
		row(InputTooMany, 400, tValidation, RetryNever, ChargedNo, "Too many inputs.", "max"),
		row(InvalidBefore, 400, tValidation, RetryNever, ChargedNo, "before must be an ISO 8601 timestamp."),
		req(row(InvalidBody, 400, tValidation, RetryNever, ChargedNo, "The body must be a JSON object.")),
		row(InvalidCategory, 400, tValidation, RetryNever, ChargedNo, "Unknown category.", "category", "categories"),
		row(InvalidExpand, 400, tValidation, RetryNever, ChargedNo, "expand takes only openapi.", "expand"),
		req(row(InvalidIdempotencyKey, 400, tValidation, RetryNever, ChargedNo, "idempotency_key must match [A-Za-z0-9._-]{1,64}.")),
		req(row(InvalidJSON, 400, tValidation, RetryNever, ChargedNo, "The body is not valid JSON.")),
		row(InvalidLimit, 400, tValidation, RetryNever, ChargedNo, "limit is out of range.", "max"),
		row(InvalidProducts, 400, tValidation, RetryNever, ChargedNo, "Unknown product name in products.", "allowed"),
		row(InvalidTitle, 400, tValidation, RetryNever, ChargedNo, "The title is over 200 characters.", "max"),
		req(row(InvalidURL, 409, tConflict, RetryNever, ChargedNo, "The URL is not an acceptable webhook address: 400 when it is sent to POST /v1/webhooks, 409 when a re-challenge finds the stored URL no longer passes.", "reason")),
		req(row(InvalidWait, 400, tValidation, RetryNever, ChargedNo, "wait must be an integer from 1 to 300.", "max")),
		row(UnknownContentType, 400, tValidation, RetryNever, ChargedNo, "Unsupported content type.", "accepted", "content_type"),
		row(UnknownEffort, 400, tValidation, RetryNever, ChargedNo, "effort is one of light, balanced, deep.", "allowed"),
		row(UnknownModel, 400, tValidation, RetryNever, ChargedNo, "Unknown model.", "allowed"),
		row(UnknownProduct, 400, tValidation, RetryNever, ChargedNo, "Unknown product.", "allowed", "products"),
		row(WaitUnsupported, 400, tValidation, RetryNever, ChargedNo, "This product refuses wait.", "product"),
		req(row(InvalidInput, 400, tValidation, RetryNever, ChargedNo, "The input does not match the model's contract.")),

		row(ControlDataInvalid, 400, tValidation, RetryNever, ChargedNo, "Control data is invalid."),
		row(ControlNotSupportedByTier, 400, tValidation, RetryNever, ChargedNo, "This tier does not support control."),
		row(ControlTypeRequired, 400, tValidation, RetryNever, ChargedNo, "A control type is required."),
		row(DurationOutOfRange, 400, tValidation, RetryNever, ChargedNo, "duration is out of range.", "min", "max"),
		row(DurationRequired, 400, tValidation, RetryNever, ChargedNo, "duration is required."),
		row(FbxNeedsARiggedTier, 400, tValidation, RetryNever, ChargedNo, "FBX output needs a rigged tier."),
		row(ImageRequired, 400, tValidation, RetryNever, ChargedNo, "An image is required."),
		row(ImageUnreadable, 400, tValidation, RetryNever, ChargedRefunded, "The image could not be read."),
		row(LyricsTooLong, 400, tValidation, RetryNever, ChargedNo, "The lyrics are too long."),
		row(NumImagesInvalid, 400, tValidation, RetryNever, ChargedNo, "num_images must be 1 to 4."),
		row(PromptRequired, 400, tValidation, RetryNever, ChargedNo, "A prompt is required."),
		row(PromptTooLong, 400, tValidation, RetryNever, ChargedNo, "The prompt is too long."),
		row(TextRequired, 400, tValidation, RetryNever, ChargedNo, "text is required."),
		row(TextTooLong, 400, tValidation, RetryNever, ChargedNo, "text is over 24,000 characters.", "max"),
		row(UnknownAspect, 400, tValidation, RetryNever, ChargedNo, "Unknown aspect ratio.", "aspect_ratios"),
		row(UnknownResolution, 400, tValidation, RetryNever, ChargedNo, "resolution is 1024 or 2048."),
		row(UnknownStyle, 400, tValidation, RetryNever, ChargedNo, "Unknown style."),
		row(UnknownTier, 400, tValidation, RetryNever, ChargedNo, "Unknown tier.", "tiers"),
		row(ContentPolicy, 422, tContent, RetryNever, ChargedRefunded, "The model refused the request as written."),
		row(DurationNotInPlan, 403, tPermission, RetryNever, ChargedNo, "This duration is not in the plan.", "plan", "max"),
		row(ImagesNotInPlan, 403, tPermission, RetryNever, ChargedNo, "This many images is not in the plan.", "plan", "max"),
		row(LyricsNotInPlan, 403, tPermission, RetryNever, ChargedNo, "Lyrics are not in the plan.", "plan"),
		row(PlanHasNoChat, 403, tPermission, RetryNever, ChargedNo, "The plan has no chat.", "plan"),
		row(PlanHasNoMusic, 403, tPermission, RetryNever, ChargedNo, "The plan has no music.", "plan"),
		row(PlanHasNoPhoto, 403, tPermission, RetryNever, ChargedNo, "The plan has no photo.", "plan"),
		row(PlanHasNoThreed, 403, tPermission, RetryNever, ChargedNo, "The plan has no 3D.", "plan"),
		row(PlanHasNoVideo, 403, tPermission, RetryNever, ChargedNo, "The plan has no video.", "plan", "upgradeTo"),
		row(ResolutionNotInPlan, 403, tPermission, RetryNever, ChargedNo, "This resolution is not in the plan.", "plan", "max"),
		row(TierNotInPlan, 403, tPermission, RetryNever, ChargedNo, "This tier is not in the plan.", "plan", "tier"),
		row(UpscaleNotInPlan, 403, tPermission, RetryNever, ChargedNo, "Upscaling is not in the plan.", "plan"),
		row(RegionBlocked, 451, tRegion, RetryNever, ChargedNo, "The service is not offered in this region.", "region"),
		row(RegionInvalid, 428, tPrecond, RetryNever, ChargedNo, "The region is invalid.", "region"),
		row(RegionRequired, 428, tPrecond, RetryNever, ChargedNo, "A region is required."),
		row(InsufficientCredits, 402, tPayment, RetryNever, ChargedNo, "The balance does not cover this request's quote.", "required", "balance"),
		row(Refunded, 402, tPayment, RetryNever, ChargedRefunded, "The credits were given back; the assets are not fetchable."),
		row(CancelFailed, 502, tUpstream, RetrySameKey, ChargedUnknown, "The cancellation could not be passed on."),
		row(CancelRaced, 409, tCancel, RetryNever, ChargedStands, "The job settled while the cancellation was on its way."),
		row(CancelRefused, 409, tCancel, RetryNever, ChargedStands, "The job is already settled.", "status"),
		row(CancelUnsupported, 400, tValidation, RetryNever, ChargedNo, "This product cannot be cancelled.", "product"),
		row(ConversationNotFound, 404, tNotFound, RetryNever, ChargedNo, "No such conversation."),
		row(Expired, 410, tGone, RetryNever, ChargedNo, "This resource has expired.", "reason"),
		row(InFlight, 409, tConflict, RetrySameKey, ChargedNo, "A turn with this key is still running.", "message_id", "job_id"),
		row(KeySettled, 409, tConflict, RetryNewKey, ChargedStands, "This key's turn already settled.", "message_id", "job_id"),
		row(NotFound, 404, tNotFound, RetryNever, ChargedNo, "Not found."),
		row(NotReady, 409, tConflict, RetrySameKey, ChargedNo, "The job has not reached a terminal status.", "status"),
		unreachable(row(ProductNotAvailable, 404, tNotFound, RetryNever, ChargedNo, "This product is not available."),
			"No product exists here without being offered: models are reached by address (an address this service does not serve answers not_found) and a product named in a body is checked against the products served (unknown_product, invalid_products)."),
		row(SettleFailed, 500, tInternal, RetryPollFirst, ChargedUnknown, "The job could not be settled."),
		row(UpstreamLost, 410, tNotFound, RetryNever, ChargedRefunded, "The model lost this job; refunded."),
		row(TooManyWebhooks, 409, tConflict, RetryNever, ChargedNo, "The account already has its limit of webhook endpoints.", "limit"),
		row(WebhookDeleteFailed, 500, tInternal, RetrySameKey, ChargedNo, "The webhook endpoint could not be deleted."),
		row(WebhookNotCreated, 500, tInternal, RetrySameKey, ChargedNo, "The webhook endpoint could not be created."),
		row(WebhookReadFailed, 500, tInternal, RetrySameKey, ChargedNo, "The webhook endpoints could not be read."),
		row(ChatNotConfigured, 503, tConfig, RetryNever, ChargedNo, "No chat upstream is configured."),
		row(ChatStartFailed, 500, tInternal, RetryNewKey, ChargedRefunded, "The chat turn could not start; the charge was reversed."),
		row(ConversationNotCreated, 500, tInternal, RetrySameKey, ChargedNo, "The conversation could not be created."),
		row(CreditReserveFailed, 500, tInternal, RetrySameKey, ChargedNo, "Credits could not be reserved; nothing was charged."),
		row(JobReadFailed, 500, tInternal, RetrySameKey, ChargedUnknown, "The job could not be read."),
		row(JobRecordFailed, 500, tInternal, RetrySameKey, ChargedRefunded, "The job could not be recorded; the charge was reversed. Retry with the same idempotency key."),
		row(MusicNotConfigured, 503, tConfig, RetryNever, ChargedNo, "Music is not configured."),
		row(NoSigningCredential, 503, tConfig, RetryNever, ChargedNo, "No signing credential is configured."),
		row(NotConfigured, 503, tConfig, RetryNever, ChargedNo, "This feature is not configured."),
		row(PhotoNotConfigured, 503, tConfig, RetryNever, ChargedNo, "Photo is not configured."),
		row(CeilingTooHigh, 400, tValidation, RetryNever, ChargedNo, "The ceiling is above what the plan allows.", "ceiling"),
		row(CeilingHeld, 409, tConflict, RetryNever, ChargedNo, "A ceiling set by support binds this key.", "ceiling"),
		row(RevisionConflict, 409, tConflict, RetryNever, ChargedNo, "The document changed; load it again.", "doc", "rev", "generation", "state_vector", "bytes", "update"),
		row(OutputLimitReached, 400, tValidation, RetryNever, ChargedNo, "The output limit was reached.", "max"),
		row(InsufficientQuota, 429, tRateLimit, RetryNever, ChargedNo, "The wallet or the key's ceiling is spent."),
		row(MethodNotAllowed, 405, tValidation, RetryNever, ChargedNo, "This method is not allowed on this route."),
		row(RunFailed, 500, tExecution, RetryNewKey, ChargedRefunded, "The model failed to run this job; refunded."),
		row(Stalled, 500, tExecution, RetryNewKey, ChargedRefunded, "The run passed the model's stall ceiling and was stopped; refunded."),
		row(Internal, 500, tInternal, RetrySameKey, ChargedUnknown, "Something went wrong on our side."),
	}
	m := make(map[Code]Entry, len(rows))
	for _, r := range rows {
		if _, dup := m[r.Code]; dup {
			panic("apierr: duplicate row " + r.Code)
		}
		m[r.Code] = r
	}
	return m
}()
