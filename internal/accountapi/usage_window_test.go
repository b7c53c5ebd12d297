package accountapi_test

import (
	"testing"

	"github.com/modelexec/modelexec/internal/store/sqlstore"
	"github.com/modelexec/modelexec/internal/store/storetest"
)

// TestACC14_WindowPastTheIntegerRange: a window of the "<N>m" form past twelve months is
// usage_window_too_large however many digits N has, on GET /v1/usage and its export alike
// (9223372036854775808m overflowed the parse and answered 400 invalid_input).
func TestACC14_WindowPastTheIntegerRange(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *sqlstore.DB) {
		e := newAccEnv(t, db)
		key := e.account("acct_win")
		for _, w := range []string{"100m", "9223372036854775807m", "9223372036854775808m", "184467440737095516160m"} {
			for _, path := range []string{"/v1/usage?window=", "/v1/usage/export?window="} {
				e.exportRefused(path+w, key, 413, "usage_window_too_large", w)
			}
		}
		e.want(e.get("/v1/usage?window=0009223372036854775808m", key), 400, "invalid_input")
	})
}
