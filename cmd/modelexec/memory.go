package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
)

// MemoryFlags set how the Go runtime holds the process's memory.
type MemoryFlags struct {
	GCPercent   string `name:"gc-percent" help:"How far the heap may grow over what is live before a collection, in percent (Go's GOGC; 'off' never collects). Default 100, or GOGC when it is set. A lower figure holds the heap nearer what is live for more of the CPU: at 50 a job costs about a sixth more CPU under load."`
	MemoryLimit string `help:"Soft memory limit of the Go runtime, e.g. 512MiB or 2GiB (Go's GOMEMLIMIT; 0 for none): near it the collector runs more often and gives free memory back. Default GOMEMLIMIT when it is set, else 90% of the process's cgroup memory limit when it has one, else none."`
}

// defaultGCPercent is the heap growth a collection waits for when neither --gc-percent nor
// GOGC says otherwise: Go's own. The collector's CPU grows as the figure falls (it runs twice
// as often at 50), and a gateway under load is bound by its CPU; where memory is what runs
// short, the soft memory limit (--memory-limit, by default 90% of the cgroup's) makes the
// collector run sooner near it.
const defaultGCPercent = 100

// cgroupMemoryMax reads the memory limit of the process's cgroup (v2): memory.max of the
// group /proc/self/cgroup names, "max" when the group has none, "" where there is no such
// file. A limit set only on a group above it is not looked for.
func cgroupMemoryMax() string {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return ""
	}
	for line := range strings.Lines(string(b)) {
		if group, ok := strings.CutPrefix(strings.TrimSpace(line), "0::"); ok {
			m, _ := os.ReadFile(filepath.Join("/sys/fs/cgroup", group, "memory.max"))
			return string(m)
		}
	}
	return ""
}

// memory is how the Go runtime holds the memory: the collector's percent (-1: off) and the
// soft memory limit in bytes (math.MaxInt64: none).
type memory struct {
	gcPercent int
	limit     int64
}

// memorySettings decides the runtime's memory settings from the flags, the environment, the
// cgroup's limit (cgroupMax as memory.max reads: "max" or a figure, "" when there is none) and
// the settings the runtime took from GOGC and GOMEMLIMIT at start (started).
func memorySettings(f MemoryFlags, getenv func(string) string, cgroupMax string, started memory) (memory, error) {
	gcPercent, limit, err := defaultGCPercent, int64(math.MaxInt64), error(nil)
	switch v := strings.TrimSpace(f.GCPercent); {
	case v == "" && getenv("GOGC") != "":
		gcPercent = started.gcPercent
	case strings.EqualFold(v, "off"):
		gcPercent = -1
	case v != "":
		if gcPercent, err = strconv.Atoi(v); err != nil || gcPercent < 1 {
			return memory{}, fmt.Errorf("--gc-percent %q: a whole percent above 0, or off", v)
		}
	}
	switch v := strings.TrimSpace(f.MemoryLimit); {
	case v == "" && getenv("GOMEMLIMIT") != "":
		limit = started.limit
	case v == "":
		if n, err := strconv.ParseInt(strings.TrimSpace(cgroupMax), 10, 64); err == nil && n > 0 {
			limit = n / 10 * 9
		}
	default:
		if limit, err = parseBytes(v); err != nil {
			return memory{}, fmt.Errorf("--memory-limit %q: %w", v, err)
		}
		if limit == 0 {
			limit = math.MaxInt64
		}
	}
	return memory{gcPercent: gcPercent, limit: limit}, nil
}

// parseBytes reads a size as GOMEMLIMIT writes one: a whole number of bytes with an optional
// unit B, KiB, MiB, GiB or TiB.
func parseBytes(s string) (int64, error) {
	units := []struct {
		suffix string
		shift  uint
	}{{"TiB", 40}, {"GiB", 30}, {"MiB", 20}, {"KiB", 10}, {"B", 0}}
	shift := uint(0)
	for _, u := range units {
		if rest, ok := strings.CutSuffix(s, u.suffix); ok {
			s, shift = strings.TrimSpace(rest), u.shift
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt64>>shift {
		return 0, fmt.Errorf("a size such as 512MiB or 2GiB")
	}
	return n << shift, nil
}

// applyMemory sets the collector's percent and the soft memory limit of this process.
func (f MemoryFlags) applyMemory(getenv func(string) string) error {
	started := memory{gcPercent: debug.SetGCPercent(-1), limit: debug.SetMemoryLimit(-1)}
	debug.SetGCPercent(started.gcPercent) // SetGCPercent answers the figure it replaced
	m, err := memorySettings(f, getenv, cgroupMemoryMax(), started)
	if err != nil {
		return err
	}
	debug.SetGCPercent(m.gcPercent)
	debug.SetMemoryLimit(m.limit)
	return nil
}
