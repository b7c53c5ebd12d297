package chat

import (
	"slices"
	"testing"
)

// A runner gets a writer only for a job some request streams: without one it asks its model
// for the whole answer. A subscriber sees every piece written while it is subscribed.
func TestHubWriterOnlyForStreamedJobs(t *testing.T) {
	h := NewHub()
	if h.Writer("chat_k1") != nil {
		t.Fatal("a job nobody streams got a writer")
	}
	sub := h.Subscribe("chat_k1")
	write := h.Writer("chat_k1")
	if write == nil {
		t.Fatal("a streamed job got no writer")
	}
	write("Hel")
	write("lo")
	<-sub.Ready()
	if got := sub.Drain(); !slices.Equal(got, []string{"Hel", "lo"}) {
		t.Fatalf("pieces %q", got)
	}
	sub.Close()
	write("!") // the request went away: nobody collects it
	if h.Writer("chat_k1") != nil || len(h.subs) != 0 {
		t.Fatal("a closed subscription still counts")
	}
}
