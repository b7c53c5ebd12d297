package accountapi_test

import (
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/server"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
	"github.com/modelexec/modelexec/internal/store/storetest"
)

// TestCHAT03_ConversationPagesNeitherSkipNorRepeat: GET /v1/chat/conversations pages newest
// first through next_before. Conversations touched in the same microsecond (opened at once)
// are moved whole to the next page instead of straddling the cut, where `before` would skip
// those left behind; a page made of one microsecond's conversations answers them all; the last
// page says so with next_before null. SQLite and PostgreSQL.
func TestCHAT03_ConversationPagesNeitherSkipNorRepeat(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *sqlstore.DB) {
		e := newAccEnvConfig(t, db, func(c *server.Config) { c.ReferenceModels = true })
		key := e.account("acct_pages", auth.TextWrite, auth.ChatRead)
		opened := map[string]bool{}
		open := func(n int) {
			for i := range n {
				a := e.call("POST", "/v1/chat/conversations", key, fmt.Appendf(nil, `{"title":"c%d"}`, len(opened)+i), "Content-Type", "application/json")
				e.want(a, 201, "")
				opened[a.body["id"].(string)] = true
			}
		}
		open(1)
		e.clock.Add(time.Second)
		open(3) // three in one microsecond
		e.clock.Add(time.Second)
		open(2)
		for _, limit := range []int{1, 2, 3, 4} {
			seen := map[string]int{}
			path := fmt.Sprintf("/v1/chat/conversations?limit=%d", limit)
			for pages := 0; ; pages++ {
				if pages > 10 {
					t.Fatalf("limit %d: paging does not end", limit)
				}
				a := e.get(path, key)
				e.want(a, 200, "")
				for _, c := range a.body["data"].([]any) {
					seen[c.(map[string]any)["id"].(string)]++
				}
				next, ok := a.body["next_before"].(string)
				if !ok {
					break
				}
				path = fmt.Sprintf("/v1/chat/conversations?limit=%d&before=%s", limit, url.QueryEscape(next))
			}
			for id := range opened {
				if seen[id] != 1 {
					t.Errorf("limit %d: conversation %s listed %d times over the pages (%v)", limit, id, seen[id], seen)
				}
			}
			if len(seen) != len(opened) {
				t.Errorf("limit %d: %d conversations listed, %d opened", limit, len(seen), len(opened))
			}
		}
	})
}

// TestCHAT03_IdempotencyKeyOnTwoLines: a turn's Idempotency-Key sent on two lines that
// disagree is refused conflicting_options before any charge (only its first line was read,
// so a resend with the second line alone ran and was charged again); lines that agree are
// one key. SQLite.
func TestCHAT03_IdempotencyKeyOnTwoLines(t *testing.T) {
	e := newAccEnvConfig(t, storetest.OpenSQLite(t), func(c *server.Config) { c.ReferenceModels = true })
	key := e.account("acct_lines", auth.TextWrite, auth.ChatRead)
	c := e.call("POST", "/v1/chat/conversations", key, []byte(`{"title":"lines"}`), "Content-Type", "application/json")
	e.want(c, 201, "")
	turn := []byte(`{"conversation_id":"` + c.body["id"].(string) + `","model":"qwen","message":"hi"}`)
	a := e.call("POST", "/v1/chat", key, turn, "Content-Type", "application/json", "Idempotency-Key", "first", "Idempotency-Key", "second")
	e.want(a, 400, "conflicting_options")
	if a.body["option"] != "Idempotency-Key" {
		t.Errorf("refusal names %v: %s", a.body["option"], a.raw)
	}
	b := e.call("POST", "/v1/chat", key, turn, "Content-Type", "application/json", "Idempotency-Key", "same", "Idempotency-Key", "same")
	e.want(b, 200, "")
	r := e.call("POST", "/v1/chat", key, turn, "Content-Type", "application/json", "Idempotency-Key", "same")
	e.want(r, 409, "key_settled") // the same key, whose turn settled
	if r.body["job_id"] != b.body["job_id"] {
		t.Errorf("lines that agree are one key: jobs %v %v", b.body["job_id"], r.body["job_id"])
	}
}
