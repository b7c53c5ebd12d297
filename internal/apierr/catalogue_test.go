package apierr

import (
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const (
	spec01 = "../../docs/spec/01-overview-resources-states-endpoints.md"
	spec02 = "../../docs/spec/02-auth-events-errors-limits-versioning.md"
)

func readSpec(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read spec: %v", err)
	}
	return string(b)
}

// section returns the text from the heading line `from` up to the next heading of the same or a
// higher level.
func section(t *testing.T, doc, from string) string {
	t.Helper()
	i := strings.Index(doc, "\n"+from+"\n")
	if i < 0 {
		t.Fatalf("spec has no heading %q", from)
	}
	rest := doc[i+1+len(from):]
	level := strings.Repeat("#", strings.Count(strings.Fields(from)[0], "#"))
	re := regexp.MustCompile(`(?m)^#{1,` + strconv.Itoa(len(level)) + `} `)
	if loc := re.FindStringIndex(rest); loc != nil {
		rest = rest[:loc[0]]
	}
	return rest
}

var (
	backticked = regexp.MustCompile("`([a-z][a-z0-9_]*)`")
	snakeToken = regexp.MustCompile("`([a-z][a-z0-9]*_[a-z0-9_]*)`")
	parens     = regexp.MustCompile(`\([^()]*\)`)
	statusNum  = regexp.MustCompile(`\b([1-5][0-9][0-9])\b`)
)

func tokens(s string) []string {
	var out []string
	for _, m := range backticked.FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	return out
}

func stripParens(s string) string {
	for {
		n := parens.ReplaceAllString(s, "")
		if n == s {
			return s
		}
		s = n
	}
}

// specCode is one code as the spec states it, with what the spec says of it (zero values where
// the spec says nothing).
type specCode struct {
	statuses []int    // every status the spec allows for the code
	retry    string   // explicit retry column
	carries  []string // fields named as carried
	where    string
}

// notCodes are the snake_case tokens of both spec files that are field names, values or
// parameters, never error codes. A token missing from here and from the catalogue fails the test.
var notCodes = map[string]bool{
	// error body fields and values
	"error_type": true, "request_id": true, "same_key": true, "after_retry_after": true, "new_key": true,
	"poll_first": true, "limit_bytes": true, "retry_after": true, "message_id": true, "aspect_ratios": true,
	"wait_declined": true, "expected_seconds": true, "wait_ceiling_seconds": true,
	// carried values
	"bucket_spent": true, "instance_fuse": true, "platform_busy": true, "product_busy": true, "account_busy": true,
	// webhook fields and reasons
	"alt_webhook": true, "webhook_id": true, "gateway_request_id": true, "too_many_failures": true,
	"endpoint_gone": true, "held_past_window": true, "nonce_not_echoed": true, "consecutive_failures": true,
	"disabled_reason": true, "last_failure_at": true, "last_status_code": true, "last_success_at": true,
	"signature_algorithm": true, "verified_at": true, "verify_keys": true,
	// price and options
	"credits_per_unit": true, "max_inputs": true, "max_units": true, "min_units": true, "max_queue_length": true,
	"alt_max_queue_length": true, "idempotency_key": true, "give_up_after_seconds": true,
	// key prefix
	"svc_sk_": true,
	// job, status document and resource fields
	"cancel_url": true, "crdt_ack": true, "created_at": true, "credits_charged": true, "credits_quoted": true,
	"credits_remaining": true, "credits_reserved": true, "error_code": true, "last_month": true, "next_before": true,
	"poll_after_seconds": true, "provider_job_id": true, "queue_position": true, "response_url": true,
	"state_vector": true, "status_url": true, "timed_out": true,
	// "Registry entries that follow `invalid_kind` in the newer listing ...: not shown." The spec
	// names the entry only to say what follows it is not shown; it gives no status, type or cause.
	"invalid_kind": true,
}

// specCodes reads every error code of spec 02 §Errors (tables, "Codes:" lists, the error body
// prose) and of the rest of both files.
func specCodes(t *testing.T) map[string]*specCode {
	t.Helper()
	doc02, doc01 := readSpec(t, spec02), readSpec(t, spec01)
	errs := section(t, doc02, "## Errors")
	codes := map[string]*specCode{}
	add := func(code, where string) *specCode {
		c, ok := codes[code]
		if !ok {
			c = &specCode{where: where}
			codes[code] = c
		}
		return c
	}
	heading := ""
	for _, line := range strings.Split(errs, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "### "):
			heading = line
		case strings.HasPrefix(line, "`error` (code;"), strings.HasPrefix(line, "`error_type` values"):
			// The field list and the type list: no codes.
		case strings.HasPrefix(line, "| `"):
			cells := strings.Split(strings.Trim(line, "|"), "|")
			for _, code := range tokens(cells[0]) {
				c := add(code, heading)
				for _, m := range statusNum.FindAllString(stripParens(cells[1]), -1) {
					n, _ := strconv.Atoi(m)
					c.statuses = append(c.statuses, n)
				}
				// queue-host style 422 (model_not_synchronous) and "400 / 422"
				for _, m := range statusNum.FindAllString(cells[1], -1) {
					if n, _ := strconv.Atoi(m); !slices.Contains(c.statuses, n) && n == 422 {
						c.statuses = append(c.statuses, n)
					}
				}
				if strings.Contains(heading, "rate limits") {
					c.carries = append(c.carries, tokens(stripParens(cells[2]))...)
					c.retry = strings.TrimSpace(cells[3])
					if i := strings.IndexByte(c.retry, ' '); i > 0 {
						c.retry = c.retry[:i]
					}
				}
				if strings.Contains(heading, "before the request") {
					c.carries = append(c.carries, tokens(stripParens(cells[2]))...)
				}
				if strings.Contains(heading, "queue and model state") {
					cause := cells[2]
					if i := strings.Index(cause, "carries "); i >= 0 {
						c.carries = append(c.carries, tokens(strings.SplitN(cause[i:], ";", 2)[0])...)
					}
					if i := strings.Index(cause, "body has "); i >= 0 {
						c.carries = append(c.carries, tokens(strings.SplitN(cause[i:], ";", 2)[0])...)
					}
				}
			}
		case strings.HasPrefix(line, "|"), line == "":
		case strings.HasSuffix(line, "not shown."):
			// "... `invalid_kind` ...: not shown." names no code of its own.
		default:
			// Prose and "Codes:" lists: a backticked token outside parentheses is a code; inside, the
			// fields it carries and its values.
			defStatus := 0
			if m := regexp.MustCompile(`^[A-Za-z ]+\(([0-9]{3})`).FindStringSubmatch(line); m != nil {
				defStatus, _ = strconv.Atoi(m[1])
			}
			if strings.HasPrefix(line, "`conversation_required`") {
				defStatus = 400
			}
			body := line
			if i := strings.Index(body, ":"); i >= 0 && !strings.HasPrefix(body, "`") && i < 40 {
				body = body[i+1:]
			}
			if heading == "### Error body" {
				// Prose: only snake_case tokens are codes here (`detail`, `loc` are fields).
				for _, m := range snakeToken.FindAllStringSubmatch(body, -1) {
					add(m[1], heading)
				}
				continue
			}
			for _, item := range splitItems(body) {
				outer := stripParens(item)
				toks := tokens(outer)
				if len(toks) != 1 {
					continue
				}
				c := add(toks[0], heading)
				paren := ""
				if i := strings.Index(item, "("); i >= 0 {
					paren = item[i:]
				}
				switch {
				case statusNum.MatchString(outer):
					n, _ := strconv.Atoi(statusNum.FindString(outer))
					c.statuses = append(c.statuses, n)
				case regexp.MustCompile(`^\([0-9]{3}\b`).MatchString(paren) && !strings.HasPrefix(paren[4:], " on queue hosts"):
					n, _ := strconv.Atoi(paren[1:4])
					c.statuses = append(c.statuses, n)
				case defStatus != 0:
					c.statuses = append(c.statuses, defStatus)
				}
				if strings.Contains(item, "422 on queue hosts") {
					c.statuses = append(c.statuses, 422)
				}
				switch {
				case strings.Contains(paren, "carries "):
					c.carries = append(c.carries, tokens(strings.SplitN(paren[strings.Index(paren, "carries "):], ";", 2)[0])...)
				case regexp.MustCompile("^\\((`[a-zA-Z_]+`(, )?)+\\)$").MatchString(paren) &&
					(strings.HasPrefix(line, "Plan gates") || strings.HasPrefix(line, "Region") ||
						strings.HasPrefix(line, "Jobs") || strings.HasPrefix(line, "Webhooks")):
					// "`expired` 410 (`reason`)": the parenthesis names what the code carries.
					c.carries = append(c.carries, tokens(paren)...)
				}
				if strings.HasPrefix(line, "Plan gates") {
					c.carries = append(c.carries, "plan")
				}
			}
		}
	}
	// Codes named anywhere else in either file (spec 01 states, routes and options; spec 02
	// authentication and ceilings): every snake_case token not known to be a field or value.
	for _, doc := range []struct{ name, text string }{{"spec 01", doc01}, {"spec 02", doc02}} {
		for _, m := range snakeToken.FindAllStringSubmatch(doc.text, -1) {
			if !notCodes[m[1]] {
				add(m[1], doc.name)
			}
		}
	}
	return codes
}

// splitItems splits a "Codes:" list on top-level ';' and ',' (not inside parentheses).
func splitItems(s string) []string {
	var out []string
	depth, start := 0, 0
	for i, r := range s {
		switch r {
		case '(':
			depth++
		case ')':
			depth--
		case ';', ',':
			if depth == 0 {
				out = append(out, strings.TrimSpace(s[start:i]))
				start = i + 1
			}
		}
	}
	out = append(out, strings.TrimSpace(strings.TrimSuffix(s[start:], ".")))
	return out
}

// typesByStatus is spec 02 "error_type values and the statuses they appear on" (off the
// synchronous host; there 500 is ExecutionError or InternalError).
var typesByStatus = map[int][]string{
	400: {"ConflictError", "ValidationError"},
	401: {"AuthenticationError"},
	402: {"PaymentError"},
	403: {"PermissionError"},
	404: {"NotFoundError"},
	405: {"ValidationError"},
	409: {"CancellationError", "ConflictError"},
	410: {"GoneError", "NotFoundError"},
	413: {"PayloadTooLargeError"},
	422: {"ContentPolicyError", "ValidationError"},
	428: {"PreconditionError"},
	429: {"CapacityError", "RateLimitError"},
	451: {"RegionError"},
	500: {"ConfigurationError", "InternalError"},
	501: {"NotImplementedError"},
	502: {"ContentPolicyError", "UpstreamError"},
	503: {"CapacityError", "ConfigurationError", "InternalError", "UpstreamError"},
}

// syncTypes500 is the synchronous host's 500 list.
var syncTypes500 = []string{"ExecutionError", "InternalError"}

// unlistedStatus are the catalogue statuses the type list does not cover, each because the spec
// gives the code that status and no type for it: dispatch_unresolved 202 (not an error answer),
// run_timed_out 504. request_timeout is a job's failure, answered by its result read: 503
// CapacityError, a pair the spec lists (it waited past its timeout for a seat).
var unlistedStatus = map[Code]int{DispatchUnresolved: 202, RunTimedOut: 504}

func specTypes(t *testing.T) map[string]bool {
	doc := section(t, readSpec(t, spec02), "## Errors")
	i := strings.Index(doc, "`error_type` values")
	line := doc[i : i+strings.Index(doc[i:], "\n")]
	out := map[string]bool{}
	for _, m := range regexp.MustCompile("`([A-Z][A-Za-z]+Error)`").FindAllStringSubmatch(line, -1) {
		out[m[1]] = true
	}
	return out
}

// TestERR_CatalogueComplete proves ERR-01..ERR-03 (row shape), ERR-07..ERR-13 (status/type pairs),
// ERR-25 (before-the-request table: never/no unless noted), ERR-26..ERR-93 (each code's status,
// retry column and carried fields as the spec states them): every error code of both spec files
// has a catalogue row that agrees with the spec.
func TestERR_CatalogueComplete(t *testing.T) {
	codes := specCodes(t)
	if len(codes) < 120 {
		t.Fatalf("parsed only %d codes from the spec: the parser is broken", len(codes))
	}
	for _, must := range []string{"model_not_connected", "queue_not_offered", "revision_conflict", "expired", "refunded",
		"insufficient_quota", "output_limit_reached", "ceiling_too_high", "ceiling_held", "dispatch_unresolved",
		"key_credit_ceiling", "invalid_api_key", "upscale_not_in_plan", "region_required", "photo_not_configured"} {
		if codes[must] == nil {
			t.Errorf("parser missed %s", must)
		}
	}
	for _, not := range []string{"limit_bytes", "retry_after", "same_key", "bucket_spent", "platform_busy", "message_id", "qwen", "generate", "min", "max", "plan"} {
		if codes[not] != nil {
			t.Errorf("parser took the field/value %s for a code (%s)", not, codes[not].where)
		}
	}
	// The parser reads what the spec says of a code, not just its name.
	for code, want := range map[string]specCode{
		"rate_limited":         {statuses: []int{429}, retry: "after_retry_after", carries: []string{"bucket", "retry_after", "reason"}},
		"invalid_url":          {statuses: []int{409}, carries: []string{"reason"}},
		"invalid_json":         {statuses: []int{400, 422}},
		"expired":              {statuses: []int{410}, carries: []string{"reason"}},
		"unknown_product":      {statuses: []int{400}, carries: []string{"allowed", "products"}},
		"duration_not_in_plan": {statuses: []int{403}, carries: []string{"max", "plan"}},
		"region_blocked":       {statuses: []int{451}, carries: []string{"region"}},
		"account_limited":      {statuses: []int{403}, carries: []string{"bucket"}},
		"too_many_jobs":        {statuses: []int{429}, carries: []string{"limit", "plan", "tier"}},
		"service_busy":         {statuses: []int{429, 503}},
	} {
		got := codes[code]
		if got == nil || !slices.Equal(got.statuses, want.statuses) || got.retry != want.retry || !slices.Equal(got.carries, want.carries) {
			t.Errorf("parser read %s as %+v, want %+v", code, got, want)
		}
	}
	types := specTypes(t)
	if len(types) != 19 {
		t.Fatalf("spec lists %d error types, parsed %v", len(types), types)
	}
	for code, sc := range codes {
		if !Known(Code(code)) {
			t.Errorf("%s (%s) has no catalogue row", code, sc.where)
			continue
		}
		en := Lookup(Code(code))
		if len(sc.statuses) > 0 && !slices.Contains(sc.statuses, en.Status) {
			t.Errorf("%s: catalogue status %d, spec says %v", code, en.Status, sc.statuses)
		}
		if sc.retry != "" && string(en.Retry) != sc.retry {
			t.Errorf("%s: catalogue retry %s, spec's Retry column %s", code, en.Retry, sc.retry)
		}
		for _, f := range sc.carries {
			if f == "charged" || f == "message" {
				continue // common body fields
			}
			if !slices.Contains(en.Carries, f) {
				t.Errorf("%s: spec says it carries %s, catalogue carries %v", code, f, en.Carries)
			}
		}
		if strings.Contains(sc.where, "before the request") && code != string(APIDisabled) {
			// ERR-25: retry never, charged no unless noted (api_disabled's "resend later" is the note;
			// DESIGN decision 13 gives it same_key).
			if en.Retry != RetryNever || en.Charged != ChargedNo {
				t.Errorf("%s: retry %s charged %s, the table says never/no", code, en.Retry, en.Charged)
			}
		}
	}
	if Lookup(APIDisabled).Retry != RetrySameKey {
		t.Errorf("api_disabled retry %s, DESIGN decision 13 says same_key", Lookup(APIDisabled).Retry)
	}
	retries := []Retry{RetrySameKey, RetryAfterRetryAfter, RetryNewKey, RetryPollFirst, RetryNever}
	charges := []Charged{ChargedNo, ChargedRefunded, ChargedStands, ChargedUnknown, ChargedBool}
	for _, code := range Codes() {
		en := Lookup(code)
		if en.Code != code || en.Status == 0 || en.Message == "" {
			t.Errorf("%s: incomplete row %+v", code, en)
		}
		if !types[en.Type] {
			t.Errorf("%s: error_type %q is not one of the spec's types", code, en.Type)
		}
		if !slices.Contains(retries, en.Retry) {
			t.Errorf("%s: retry %q not among %v", code, en.Retry, retries)
		}
		if !slices.Contains(charges, en.Charged) {
			t.Errorf("%s: charged %q not among %v", code, en.Charged, charges)
		}
		if st, ok := unlistedStatus[code]; ok {
			if en.Status != st {
				t.Errorf("%s: status %d, want %d", code, en.Status, st)
			}
			continue
		}
		allowed := typesByStatus[en.Status]
		if en.Status == 500 && en.Type == "ExecutionError" {
			allowed = syncTypes500 // rendered InternalError off the synchronous host (httpapi)
		}
		if !slices.Contains(allowed, en.Type) {
			t.Errorf("%s: %d %s is not a pair of spec 02's list (%v)", code, en.Status, en.Type, allowed)
		}
		if _, listed := codes[string(code)]; !listed && !slices.Contains([]Code{InvalidInput, MethodNotAllowed, RunFailed, Stalled, Internal, ContentPolicy}, code) {
			t.Errorf("%s has a row but no mention in either spec file and is not one of the service's own codes", code)
		}
	}
	// ERR-42: wait_capacity and run_timed_out give a boolean charged (DESIGN decision 13).
	for _, c := range []Code{WaitCapacity, RunTimedOut} {
		if Lookup(c).Charged != ChargedBool {
			t.Errorf("%s charged %s, want bool", c, Lookup(c).Charged)
		}
	}
	// ERR-35, ERR-38, ERR-40, ERR-42: after_retry_after codes.
	for _, c := range []Code{LimiterUnavailable, RateLimited, StreamDeclined, WaitCapacity} {
		if Lookup(c).Retry != RetryAfterRetryAfter {
			t.Errorf("%s retry %s", c, Lookup(c).Retry)
		}
	}
}

// TestERR04_ShouldNotRetry proves ERR-04 with DESIGN decision 13: x-should-retry: false goes with
// never, new_key and poll_first, and only with them.
func TestERR04_ShouldNotRetry(t *testing.T) {
	for r, want := range map[Retry]bool{RetryNever: true, RetryNewKey: true, RetryPollFirst: true, RetrySameKey: false, RetryAfterRetryAfter: false} {
		if got := ShouldNotRetry(r); got != want {
			t.Errorf("ShouldNotRetry(%s) = %v, want %v", r, got, want)
		}
	}
	// A code that may pay twice (dispatch_unresolved, run_timed_out, key_settled) must say so.
	for _, c := range []Code{DispatchUnresolved, RunTimedOut, KeySettled, SettleFailed} {
		if !ShouldNotRetry(Lookup(c).Retry) {
			t.Errorf("%s: retry %s would invite a paying retry", c, Lookup(c).Retry)
		}
	}
}

func TestErrorValue(t *testing.T) {
	e := New(InsufficientScope, "required", "image:write")
	if e.Fields["required"] != "image:write" || e.Entry().Status != 403 {
		t.Fatalf("%+v", e)
	}
	if !Is(e.Wrap(os.ErrNotExist), InsufficientScope) || Is(e, NotFound) {
		t.Fatal("Is")
	}
	if Lookup("no_such_code").Code != Internal {
		t.Fatal("unknown code must read as internal")
	}
	if DocsURL(KeyRevoked) != "/docs/errors/key_revoked" {
		t.Fatal(DocsURL(KeyRevoked))
	}
	SetDocsBase("https://api.example.com/")
	defer docsBase.Store(nil)
	if DocsURL(KeyRevoked) != "https://api.example.com/docs/errors/key_revoked" {
		t.Fatal(DocsURL(KeyRevoked))
	}
	if got := Newf(NotFound, "job %s", "x").Error(); got != "not_found: job x" {
		t.Fatal(got)
	}
}
