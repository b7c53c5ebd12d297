package httpapi_test

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/httpapi"
)

// bodyEcho reads the body the way every JSON route does and answers its length.
func bodyEcho() http.Handler {
	return httpapi.Func(func(w http.ResponseWriter, r *http.Request) error {
		b, err := httpapi.ReadBody(r)
		if err != nil {
			return err
		}
		httpapi.WriteJSON(w, r, http.StatusOK, map[string]any{"bytes": len(b)})
		return nil
	})
}

// TestLIM01_SlowBodyIsCutOff proves the 1 MiB body limit (LIM-01) is bounded in time as well as
// size: a client that declares Content-Length: 100000 and sends 10 bytes is answered 400
// invalid_body (the error body of every route) once the body's deadline passes, and its
// connection is closed, instead of holding a goroutine and a socket forever. A body sent in
// full is read, and the request that follows on the same connection is not cut off by the
// first body's deadline.
func TestLIM01_SlowBodyIsCutOff(t *testing.T) {
	lim := httpapi.Limits{BodyTimeout: 300 * time.Millisecond}
	srv := httptest.NewServer(httpapi.WrapLimits(httpapi.QueueSurface, slog.New(slog.DiscardHandler), lim, bodyEcho()))
	defer srv.Close()

	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	fmt.Fprintf(conn, "POST /x HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{\"a\":\"1234")
	// The bound under test is 300 ms; 10 s only keeps a broken build from hanging the run.
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(conn)
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no answer to a slow body: %v", err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	took := time.Since(start)
	if res.StatusCode != http.StatusUnprocessableEntity && res.StatusCode != http.StatusBadRequest {
		t.Fatalf("status %d %s", res.StatusCode, body)
	}
	for _, want := range []string{`"error":"invalid_body"`, `"error_type":`, `"request_id":`, `"docs":`, "did not arrive in time"} {
		if !strings.Contains(string(body), want) {
			t.Fatalf("body lacks %s: %s", want, body)
		}
	}
	if took > 5*time.Second {
		t.Fatalf("answered after %v", took)
	}
	if _, err := br.ReadByte(); err != io.EOF {
		t.Fatalf("connection still open after the refusal: %v", err)
	}
	t.Logf("slow body refused after %v", took.Round(time.Millisecond))

	// A body sent in full is read; a second request on the same connection, sent after the
	// first body's deadline would have passed, is served too.
	conn2, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn2.Close()
	_ = conn2.SetReadDeadline(time.Now().Add(10 * time.Second))
	br2 := bufio.NewReader(conn2)
	for i := range 2 {
		fmt.Fprintf(conn2, "POST /x HTTP/1.1\r\nHost: test\r\nContent-Length: 9\r\n\r\n{\"a\":123}")
		res, err := http.ReadResponse(br2, nil)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 || !strings.Contains(string(b), `"bytes":9`) {
			t.Fatalf("request %d: %d %s", i, res.StatusCode, b)
		}
		if i == 0 {
			time.Sleep(2 * lim.BodyTimeout) // outlast the first body's deadline on purpose
		}
	}
}

// Issue 30 (item 3): LimitBodies bounds the bodies of a listener that Wrap does not serve (the
// operator listener): a declared body that never comes is cut off and its connection closed.
func TestLIM01_LimitBodiesCutsASlowBody(t *testing.T) {
	lim := httpapi.Limits{BodyTimeout: 300 * time.Millisecond}
	srv := httptest.NewServer(httpapi.LimitBodies(lim, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			http.Error(w, "slow body", http.StatusBadRequest)
		}
	})))
	defer srv.Close()
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /debug/pprof/symbol HTTP/1.1\r\nHost: test\r\nContent-Length: 100000\r\n\r\n0x1234")
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second)) // only keeps a broken build from hanging
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to a slow body: %v", err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusBadRequest {
		t.Fatalf("status %d", res.StatusCode)
	}
}

// A client that stops reading used to hold its socket and the handler's goroutine for good (a
// pipelined request for a large document, a stream): nothing bounded a write. Each write now
// has Limits.WriteStall to be taken; past it the write fails and the connection closes. A
// client that reads, however slowly, is served to the end, and a request on a kept-alive
// connection is not cut off by the deadline an earlier one left.
func TestWriteStallCutsOffAClientThatStopsReading(t *testing.T) {
	lim := httpapi.Limits{WriteStall: 300 * time.Millisecond}
	failed := make(chan error, 1)
	big := strings.Repeat("x", 64<<10)
	srv := httptest.NewServer(httpapi.WrapLimits(httpapi.AccountSurface, slog.New(slog.DiscardHandler), lim,
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/small" {
				_, _ = io.WriteString(w, "ok")
				return
			}
			for range 1024 { // 64 MiB, far more than the socket buffers hold
				if _, err := io.WriteString(w, big); err != nil {
					failed <- err
					return
				}
			}
			failed <- nil
		})))
	defer srv.Close()

	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.(*net.TCPConn).SetReadBuffer(4096)
	fmt.Fprintf(conn, "GET /big HTTP/1.1\r\nHost: test\r\n\r\n")
	select { // never read: the writes stall
	case err := <-failed:
		if err == nil {
			t.Fatal("64 MiB written to a client that read nothing")
		}
	case <-time.After(10 * time.Second): // the bound under test is 300 ms; this only keeps a broken build from hanging
		t.Fatal("the handler still writes to a client that stopped reading")
	}

	// A kept-alive connection: the second request comes after the first's write deadline passed.
	conn2, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn2.Close()
	_ = conn2.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(conn2)
	for i := range 2 {
		fmt.Fprintf(conn2, "GET /small HTTP/1.1\r\nHost: test\r\n\r\n")
		res, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 || string(b) != "ok" {
			t.Fatalf("request %d: %d %s", i, res.StatusCode, b)
		}
		if i == 0 {
			time.Sleep(2 * lim.WriteStall) // outlast the first answer's write deadline on purpose
		}
	}
}

// unwrapping is a middleware's writer (the metrics' status recorder): it offers Unwrap only.
type unwrapping struct{ http.ResponseWriter }

func (u unwrapping) Unwrap() http.ResponseWriter { return u.ResponseWriter }

// The stall bound holds behind a middleware whose writer only unwraps (the metrics listener's,
// on in production), and whatever Upgrade header a plain request carries; an answer written
// in one large write reaches a client that reads it steadily, however long that takes.
func TestWriteStallHoldsBehindWrappersAndSparesSteadyReaders(t *testing.T) {
	lim := httpapi.Limits{WriteStall: 300 * time.Millisecond}
	failed := make(chan error, 4)
	big := strings.Repeat("x", 64<<10)
	whole := strings.Repeat("y", 2<<20)
	inner := httpapi.WrapLimits(httpapi.AccountSurface, slog.New(slog.DiscardHandler), lim,
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/whole" {
				_, err := io.WriteString(w, whole) // one write of 2 MiB
				failed <- err
				return
			}
			for range 1024 {
				if _, err := io.WriteString(w, big); err != nil {
					failed <- err
					return
				}
			}
			failed <- nil
		}))
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inner.ServeHTTP(unwrapping{w}, r)
	}))
	srv.Listener = smallSendBuffers{srv.Listener} // so that a large answer waits on its reader
	srv.Start()
	defer srv.Close()

	for _, extra := range []string{"", "Upgrade: nothing\r\n"} {
		conn, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_ = conn.(*net.TCPConn).SetReadBuffer(4096)
		fmt.Fprintf(conn, "GET /big HTTP/1.1\r\nHost: test\r\n%s\r\n", extra)
		select {
		case err := <-failed:
			if err == nil {
				t.Fatalf("%q: 64 MiB written to a client that read nothing", extra)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%q: the handler still writes to a client that stopped reading", extra)
		}
	}

	// A steady reader: 64 KiB each 50 ms, so the 2 MiB take about 1.6 s, five stalls' worth.
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.(*net.TCPConn).SetReadBuffer(128 << 10)
	fmt.Fprintf(conn, "GET /whole HTTP/1.1\r\nHost: test\r\n\r\n")
	_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	res, err := http.ReadResponse(bufio.NewReaderSize(conn, 4096), nil)
	if err != nil {
		t.Fatal(err)
	}
	got, buf := 0, make([]byte, 64<<10)
	for {
		n, err := io.ReadFull(res.Body, buf)
		got += n
		if err != nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := <-failed; err != nil || got != len(whole) {
		t.Fatalf("a steady reader got %d of %d bytes (%v)", got, len(whole), err)
	}
}

// smallSendBuffers gives each accepted connection a 64 KiB send buffer.
type smallSendBuffers struct{ net.Listener }

func (l smallSendBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(64 << 10)
	}
	return c, err
}

// formish reads a body the way a route with a limit of its own does (a console form: at most
// 256 KiB) and answers how much it read, or 400 when the body did not arrive in time.
func formish() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(io.LimitReader(r.Body, 256<<10))
		if err != nil {
			http.Error(w, "slow body", http.StatusBadRequest)
			return
		}
		fmt.Fprintf(w, "%d", len(b))
	})
}

// TestLIM01_AHugeDeclaredLengthEarnsNoTime: a client that declares Content-Length:
// 1000000000000 and sends a few bytes was given the declared length's time (a second per
// 64 KiB: about 176 days), so such connections piled up until the process ran out of file
// descriptors. The time now grows with what arrives: the stalled body is cut within the base
// bound, on Wrap's surfaces and on the operator listener (LimitBodies) alike, and its
// connection is closed.
func TestLIM01_AHugeDeclaredLengthEarnsNoTime(t *testing.T) {
	lim := httpapi.Limits{BodyTimeout: 300 * time.Millisecond, BodyMinRate: 64 << 10}
	for name, h := range map[string]http.Handler{
		"Wrap":        httpapi.WrapLimits(httpapi.ConsoleSurface, slog.New(slog.DiscardHandler), lim, formish()),
		"LimitBodies": httpapi.LimitBodies(lim, formish()),
	} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(h)
			defer srv.Close()
			conn, err := net.Dial("tcp", srv.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			start := time.Now()
			fmt.Fprintf(conn, "POST /console/sign-in HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000000000\r\n"+
				"Content-Type: application/x-www-form-urlencoded\r\n\r\nemail=a")
			// The bound under test is 300 ms; 10 s only keeps a broken build from hanging the run.
			_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			br := bufio.NewReader(conn)
			res, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("no answer to a stalled body declaring a terabyte: %v", err)
			}
			_, _ = io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != http.StatusBadRequest {
				t.Fatalf("status %d", res.StatusCode)
			}
			if took := time.Since(start); took > 5*time.Second {
				t.Fatalf("answered after %v", took)
			}
			if _, err := br.ReadByte(); err != io.EOF {
				t.Fatalf("connection still open after the refusal: %v", err)
			}
		})
	}
}

// TestLIM01_ASteadyBodyEarnsItsTime: a long body that keeps arriving at BodyMinRate or faster
// is read to its end although it takes several times BodyTimeout, as an upload through a
// signed link does.
func TestLIM01_ASteadyBodyEarnsItsTime(t *testing.T) {
	lim := httpapi.Limits{BodyTimeout: 300 * time.Millisecond, BodyMinRate: 64 << 10}
	srv := httptest.NewServer(httpapi.WrapLimits(httpapi.AccountSurface, slog.New(slog.DiscardHandler), lim, formish()))
	defer srv.Close()
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	const chunk, chunks = 16 << 10, 12 // 192 KiB at about 160 KiB/s: about 1.2 s, four base bounds
	fmt.Fprintf(conn, "PUT /files/x HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", chunk*chunks)
	piece := strings.Repeat("x", chunk)
	for range chunks {
		if _, err := io.WriteString(conn, piece); err != nil {
			t.Fatalf("the body was cut off while it kept arriving: %v", err)
		}
		time.Sleep(100 * time.Millisecond) // paces the body; the bound it must stay ahead of is 250 ms per chunk
	}
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || string(b) != fmt.Sprint(chunk*chunks) {
		t.Fatalf("a steady body answered %d %s", res.StatusCode, b)
	}
}
