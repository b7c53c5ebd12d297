package jobs

import (
	"strings"
	"testing"
)

// The notices of one moment go in as few payloads as fit the size, one a line, in order; a
// notice longer than a payload is dropped; what a payload carries reads back as sent.
func TestNoticeQueuePacksPayloads(t *testing.T) {
	q := NewNoticeQueue(40)
	sent := []Notice{{Kind: HandOff, Key: "image-4b"}, {Kind: Changed, Key: "req-1"}, {Kind: Changed, Key: strings.Repeat("x", 50)},
		{Kind: CancelAsked, Key: "req-2"}}
	for _, n := range sent {
		q.Add(n)
	}
	var payloads []string
	for p := q.take(); p != ""; p = q.take() {
		payloads = append(payloads, p)
	}
	var got []Notice
	for _, p := range payloads {
		if len(p) > 40 {
			t.Fatalf("payload of %d bytes, over 40", len(p))
		}
		ReadNotices(p, func(n Notice) { got = append(got, n) })
	}
	if want := []Notice{sent[0], sent[1], sent[3]}; len(payloads) != 2 || len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("payloads %q read back as %v, want %v in two payloads (the long notice dropped)", payloads, got, want)
	}
}
