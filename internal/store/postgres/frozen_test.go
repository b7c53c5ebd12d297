package postgres_test

import (
	"context"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/store/postgres"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
	"github.com/modelexec/modelexec/internal/store/storetest"
)

// freezer is a TCP proxy to a database server that can stop passing bytes without closing
// anything: a server that stopped answering (frozen, overloaded, or cut off with no reset).
type freezer struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	thawed chan struct{} // closed while bytes pass
}

func newFreezer(t *testing.T, target string) *freezer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &freezer{ln: ln, target: target, thawed: make(chan struct{})}
	close(f.thawed)
	t.Cleanup(func() { ln.Close(); f.thaw() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			go f.pipe(c, s)
			go f.pipe(s, c)
		}
	}()
	return f
}

func (f *freezer) pipe(dst, src net.Conn) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			f.mu.Lock()
			gate := f.thawed
			f.mu.Unlock()
			<-gate
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (f *freezer) freeze() {
	f.mu.Lock()
	defer f.mu.Unlock()
	select {
	case <-f.thawed:
		f.thawed = make(chan struct{})
	default:
	}
}

func (f *freezer) thaw() {
	f.mu.Lock()
	defer f.mu.Unlock()
	select {
	case <-f.thawed:
	default:
		close(f.thawed)
	}
}

// TestStatementsEndWhenTheServerStopsAnswering: with the server no longer answering, a read,
// a write and a transaction each fail once the store's bound passes (OpTimeout; shortened
// here), so the request that made them is answered instead of held for as long as the server
// is silent; once it answers again, so does the store, without a restart.
func TestStatementsEndWhenTheServerStopsAnswering(t *testing.T) {
	u, err := url.Parse(storetest.PostgresSchemaDSN(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	f := newFreezer(t, u.Host)
	u.Host = f.ln.Addr().String()
	ctx := context.Background()
	db, err := postgres.Open(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	postgres.SetOpTimeout(db, 300*time.Millisecond)
	storetest.NewAccount(t, db, "acct_frozen", auth.Pro, 100)

	f.freeze()
	for _, op := range []struct {
		name string
		run  func() error
	}{
		{"a read", func() error { _, err := db.Account(ctx, "acct_frozen"); return err }},
		{"a write", func() error { _, err := db.Grant(ctx, "acct_frozen", 1, time.Now()); return err }},
		{"a transaction", func() error {
			return db.InTx(ctx, func(tx *sqlstore.Tx) error { _, err := tx.Account(ctx, "acct_frozen"); return err })
		}},
	} {
		start := time.Now()
		err := op.run()
		if err == nil {
			t.Fatalf("%s answered while the server was silent", op.name)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%s held its caller %s", op.name, d)
		}
	}
	f.thaw()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := db.Account(ctx, "acct_frozen")
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the store did not recover once the server answered: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
