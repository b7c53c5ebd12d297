package console_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestLIM01_ConsoleFormDeclaringTooMuchIs413AtOnce: a form that declares more than the console
// takes (256 KiB) and sends nothing after its headers was held open for as long as its
// declared length earned (a terabyte: months), so a few thousand such connections stopped every
// listener. It is now answered 413 before any of it is read, and its connection is closed: the
// sign-in form (no session) and a signed-in form alike.
func TestLIM01_ConsoleFormDeclaringTooMuchIs413AtOnce(t *testing.T) {
	s := newSite(t)
	p := s.signIn(t, "acct_declared", 1000)
	base, _ := url.Parse(s.url)
	var cookies []string
	for _, c := range p.c.Jar.Cookies(&url.URL{Scheme: base.Scheme, Host: base.Host, Path: "/console/"}) {
		cookies = append(cookies, c.Name+"="+c.Value)
	}
	for _, c := range []struct{ name, path, cookie string }{
		{"sign-in", "/console/sign-in", ""},
		{"signed-in form", "/console/keys", strings.Join(cookies, "; ")},
	} {
		t.Run(c.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", base.Host)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			head := "POST " + c.path + " HTTP/1.1\r\nHost: " + base.Host + "\r\nOrigin: " + s.url + "\r\nContent-Length: 1000000000000\r\n" +
				"Content-Type: application/x-www-form-urlencoded\r\n"
			if c.cookie != "" {
				head += "Cookie: " + c.cookie + "\r\n"
			}
			start := time.Now()
			fmt.Fprint(conn, head+"\r\n")
			// The answer comes before any body is sent; 10 s only keeps a broken build from
			// hanging the run (the body's own deadline would be months).
			_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			br := bufio.NewReader(conn)
			res, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("no answer to a form declaring a terabyte: %v", err)
			}
			page, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(page), "larger than the console takes (256 KiB)") {
				t.Fatalf("answered %d after %v:\n%.2000s", res.StatusCode, time.Since(start), page)
			}
			if took := time.Since(start); took > 5*time.Second {
				t.Fatalf("answered after %v", took)
			}
			if _, err := br.ReadByte(); err != io.EOF {
				t.Fatalf("connection still open after the refusal: %v", err)
			}
		})
	}
	if n := p.liveKeys("acct_declared"); n != 0 {
		t.Errorf("%d keys minted", n)
	}
}
