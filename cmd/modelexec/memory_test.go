package main

import (
	"math"
	"testing"
)

// TestMemorySettings: the collector's percent and the soft memory limit serve runs with, from
// its flags, GOGC and GOMEMLIMIT, and the cgroup's memory limit.
func TestMemorySettings(t *testing.T) {
	none := int64(math.MaxInt64)
	started := memory{gcPercent: 80, limit: 300 << 20} // as the runtime took them from the environment
	for _, c := range []struct {
		name      string
		flags     MemoryFlags
		env       map[string]string
		cgroupMax string
		want      memory
		fails     bool
	}{
		{name: "defaults: Go's own percent, no limit", want: memory{100, none}},
		{name: "a cgroup without a limit", cgroupMax: "max\n", want: memory{defaultGCPercent, none}},
		{name: "90% of the cgroup's limit", cgroupMax: "1073741824\n", want: memory{defaultGCPercent, 1073741824 / 10 * 9}},
		{name: "GOGC and GOMEMLIMIT kept", env: map[string]string{"GOGC": "80", "GOMEMLIMIT": "300MiB"}, cgroupMax: "1073741824", want: started},
		{name: "flags win", flags: MemoryFlags{GCPercent: "200", MemoryLimit: "2GiB"}, env: map[string]string{"GOGC": "80", "GOMEMLIMIT": "300MiB"}, want: memory{200, 2 << 30}},
		{name: "off and none", flags: MemoryFlags{GCPercent: "off", MemoryLimit: "0"}, cgroupMax: "1073741824", want: memory{-1, none}},
		{name: "bytes", flags: MemoryFlags{MemoryLimit: "123456789"}, want: memory{defaultGCPercent, 123456789}},
		{name: "KiB", flags: MemoryFlags{MemoryLimit: "512 KiB"}, want: memory{defaultGCPercent, 512 << 10}},
		{name: "zero percent", flags: MemoryFlags{GCPercent: "0"}, fails: true},
		{name: "not a percent", flags: MemoryFlags{GCPercent: "half"}, fails: true},
		{name: "not a size", flags: MemoryFlags{MemoryLimit: "1.5GiB"}, fails: true},
		{name: "an unknown unit", flags: MemoryFlags{MemoryLimit: "2GB"}, fails: true},
		{name: "too large", flags: MemoryFlags{MemoryLimit: "9000000TiB"}, fails: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := memorySettings(c.flags, func(k string) string { return c.env[k] }, c.cgroupMax, started)
			if c.fails {
				if err == nil {
					t.Fatalf("accepted: %+v", got)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, c.want)
			}
		})
	}
}
