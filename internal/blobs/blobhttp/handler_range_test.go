package blobhttp_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/blobs"
	"github.com/modelexec/modelexec/internal/blobs/blobhttp"
)

// A file of the directory store answers a range request with 206 and those bytes only, as an
// audio player asks; the whole file is still answered to a plain GET.
func TestRangeRequestOnAStoredFile(t *testing.T) {
	now := func() time.Time { return time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC) }
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	signer, err := blobs.NewSigner([]byte("0123456789abcdef-deployment"), srv.URL+"/files", now)
	if err != nil {
		t.Fatal(err)
	}
	store, err := blobs.OpenDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	mux.Handle("/files/", blobhttp.New(store, signer, now, nil))
	data := bytes.Repeat([]byte("0123456789"), 1000)
	if _, err := store.Put(context.Background(), "outputs/acc_1/song.wav", "audio/wav", bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	link, _, err := signer.SignGet(context.Background(), "outputs/acc_1/song.wav")
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, link, nil)
	req.Header.Set("Range", "bytes=100-199")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	_, _ = got.ReadFrom(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusPartialContent || !bytes.Equal(got.Bytes(), data[100:200]) ||
		res.Header.Get("Content-Range") != "bytes 100-199/10000" || res.Header.Get("Content-Type") != "audio/wav" {
		t.Fatalf("range answered %d %q (%d bytes) %s", res.StatusCode, res.Header.Get("Content-Range"), got.Len(), res.Header.Get("Content-Type"))
	}
	res, err = http.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	got.Reset()
	_, _ = got.ReadFrom(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || !bytes.Equal(got.Bytes(), data) || res.Header.Get("Accept-Ranges") != "bytes" {
		t.Fatalf("plain GET answered %d with %d bytes, Accept-Ranges %q", res.StatusCode, got.Len(), res.Header.Get("Accept-Ranges"))
	}
	// A range past the end, or one that does not parse, is ignored: the whole file answers,
	// never a 416 of plain text.
	for _, rg := range []string{"bytes=20000-20100", "bytes=abc", "bytes=5-2"} {
		req, _ := http.NewRequest(http.MethodGet, link, nil)
		req.Header.Set("Range", rg)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		got.Reset()
		_, _ = got.ReadFrom(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK || !bytes.Equal(got.Bytes(), data) || res.Header.Get("Content-Type") != "audio/wav" || res.Header.Get("Content-Range") != "" {
			t.Fatalf("%s answered %d with %d bytes, %q %q", rg, res.StatusCode, got.Len(), res.Header.Get("Content-Type"), res.Header.Get("Content-Range"))
		}
	}
}
