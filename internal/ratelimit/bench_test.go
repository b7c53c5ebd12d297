package ratelimit_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/ratelimit"
)

func keys(n int) []string {
	ks := make([]string, n)
	for i := range ks {
		ks[i] = "key" + strconv.Itoa(i) + "abcdefgh"
	}
	return ks
}

// BenchmarkAdmitMemory is the in-process limiter's cost per admission over 10,000 keys.
func BenchmarkAdmitMemory(b *testing.B) {
	m := ratelimit.NewMemory(ratelimit.MemoryOptions{})
	ctx, ks := context.Background(), keys(10_000)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		m.Admit(ctx, ratelimit.Request{Key: ks[i%len(ks)], Plan: "ultimate", Bucket: ratelimit.Read, Cost: 1})
		i++
	}
}

// BenchmarkAdmitMemoryParallel is the same from every core at once.
func BenchmarkAdmitMemoryParallel(b *testing.B) {
	m := ratelimit.NewMemory(ratelimit.MemoryOptions{})
	ctx, ks := context.Background(), keys(10_000)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			m.Admit(ctx, ratelimit.Request{Key: ks[i%len(ks)], Plan: "ultimate", Bucket: ratelimit.Read, Cost: 1})
			i++
		}
	})
}

// BenchmarkAdmitAdmissionMemory is a whole request's rate work: fuse (step 5), then the guard
// and the in-process limiter (step 6), then the six headers.
func BenchmarkAdmitAdmissionMemory(b *testing.B) {
	adm := ratelimit.NewAdmission(ratelimit.NewMemory(ratelimit.MemoryOptions{}), ratelimit.AdmissionOptions{})
	ctx, ks := context.Background(), keys(10_000)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		now := time.Now()
		k := ks[i%len(ks)]
		adm.CheckFuse(k, ratelimit.Read, now)
		d, _, _ := adm.Check(ctx, ratelimit.Request{Key: k, Plan: "ultimate", Bucket: ratelimit.Read, Cost: 1}, now)
		ratelimit.Headers(d, now)
		i++
	}
}
