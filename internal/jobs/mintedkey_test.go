package jobs

import "testing"

// JOB-29: a minted key gives back the request id it was minted from; a key of another shape
// (one a caller chose, a chat turn's minted key) gives none, so a read by it looks up no
// request id.
func TestJOB29_MintedRequestID(t *testing.T) {
	id := newRequestID()
	if got, ok := MintedRequestID(MintedKey(id)); !ok || got != id {
		t.Fatalf("MintedRequestID(MintedKey(%q)) = %q, %v", id, got, ok)
	}
	for _, key := range []string{"", "k", "order-1", id, "k0190f5c2a0b1c2d3e4f5a6b7c8d9", "x" + id, "k" + id + "0", "k" + id[:8] + "x" + id[9:]} {
		if got, ok := MintedRequestID(key); ok {
			t.Errorf("MintedRequestID(%q) = %q, want none", key, got)
		}
	}
}
