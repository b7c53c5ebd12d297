package sqlstore_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	y "github.com/skyterra/y-crdt"

	"github.com/modelexec/modelexec/internal/store/sqlstore"
	"github.com/modelexec/modelexec/internal/store/storetest"
	"github.com/modelexec/modelexec/internal/studio"
)

// BenchmarkStudioMerge measures small updates (one typed word each) merged into a brief of
// about 1 MiB: the whole path of the state route below HTTP — validate, merge, encode, compare
// and swap the stored document. It reports merges/s and the 99th percentile of one merge.
//
//	go test -run '^$' -bench StudioMerge -benchtime 200x ./internal/store/sqlstore
func BenchmarkStudioMerge(b *testing.B) {
	stores := map[string]func(b *testing.B) studio.Store{
		"memory": func(*testing.B) studio.Store { return studio.NewMemStore() },
		"sqlite": func(b *testing.B) studio.Store { return sqlstore.Studio{DB: storetest.OpenSQLite(b)} },
	}
	for _, name := range []string{"memory", "sqlite"} {
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			svc := studio.NewService(studio.Config{Store: stores[name](b), Now: time.Now})
			key := studio.Key{Account: "acct_bench", Project: "bench", Doc: studio.Brief}

			// A document of about 1 MiB: 2,100 paragraphs of 500 characters, typed in turn.
			w := y.NewDoc("", true, func(*y.Item) bool { return true }, nil, false)
			text := w.GetText("body")
			para := strings.Repeat("lorem ipsum ", 42)[:499] + "\n"
			w.Transact(func(*y.Transaction) {
				for range 2100 {
					text.Insert(text.Length(), para, nil)
				}
			}, nil)
			ack, err := svc.Apply(ctx, studio.ApplyParams{Key: key, Update: y.EncodeStateAsUpdate(w, nil)})
			if err != nil {
				b.Fatal(err)
			}
			if ack.Bytes < 1<<20 {
				b.Fatalf("document is %d bytes, want about 1 MiB", ack.Bytes)
			}
			updates := make([][]byte, b.N)
			for i := range updates {
				sv := y.EncodeStateVector(w, nil, y.NewUpdateEncoderV1())
				w.Transact(func(*y.Transaction) { text.Insert((i*7919)%text.Length(), "word ", nil) }, nil)
				updates[i] = y.EncodeStateAsUpdate(w, sv)
			}
			took := make([]time.Duration, b.N)
			b.ResetTimer()
			start := time.Now()
			for i := range b.N {
				t0 := time.Now()
				if _, err := svc.Apply(ctx, studio.ApplyParams{Key: key, Update: updates[i]}); err != nil {
					b.Fatal(err)
				}
				took[i] = time.Since(t0)
			}
			elapsed := time.Since(start)
			b.StopTimer()
			slices.Sort(took)
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "merges/s")
			b.ReportMetric(float64(took[(len(took)*99)/100].Microseconds())/1000, "p99-ms")
			b.ReportMetric(float64(ack.Bytes), "doc-bytes")
			if testing.Verbose() {
				fmt.Printf("%s: %d merges, p50 %v, p99 %v\n", name, b.N, took[len(took)/2], took[(len(took)*99)/100])
			}
		})
	}
}
