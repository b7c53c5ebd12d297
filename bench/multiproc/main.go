// Command multiproc measures what one process of a deployment sees of another's work, on
// loopback: a front process (serve --roles api,queue,sync) and a worker process (serve
// --roles worker,webhooks), the built binary, over one fresh PostgreSQL database, telling each
// other through PostgreSQL's LISTEN/NOTIFY or Redis pub/sub (-notices). For each of -n jobs,
// one after another: the job is submitted to the front, which hands it off (IN_QUEUE); a
// status stream is opened on the front at once; the worker starts the job and settles it.
//
//   - hand-off start: the job's started_at (the worker's clock) less its created_at (the
//     front's), both written by the processes themselves;
//   - settled → stream: the moment the stream on the front delivers COMPLETED less the job's
//     finished_at (the worker's clock). A job already settled when its stream opened is not
//     counted.
//
// Both processes share this machine's clock. It is a benchmark, not a test: nothing here
// decides a pass.
//
//	go run ./bench/multiproc [-n 300] [-notices postgres,redis] [-postgres URL] [-redis URL]
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/redis/go-redis/v9"

	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/catalog"
	"github.com/modelexec/modelexec/internal/plans"
	"github.com/modelexec/modelexec/internal/server"
)

// input is about 20 ms of work on the built-in runner: the stream opens while the job runs.
const input = `{"positivePrompt":"a lighthouse at dusk","width":512,"height":512,"steps":4}`

func main() {
	n := flag.Int("n", 300, "jobs per notices mode")
	modes := flag.String("notices", "postgres,redis", "how the processes tell each other: postgres (LISTEN/NOTIFY), redis (pub/sub)")
	pg := flag.String("postgres", envOr("MODELEXEC_TEST_POSTGRES", "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"), "PostgreSQL server (a database is created on it and dropped)")
	rd := flag.String("redis", envOr("MODELEXEC_TEST_REDIS", "redis://127.0.0.1:6379/0"), "Redis for -notices redis")
	flag.Parse()
	dir, err := os.MkdirTemp("", "modelexec-multiproc")
	check(err)
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "modelexec")
	build := exec.Command("go", "build", "-o", bin, "./cmd/modelexec")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	check(build.Run())
	fmt.Printf("%d jobs per mode, one at a time; front and worker are two serve processes on loopback\n\n", *n)
	fmt.Printf("%-9s | %-34s | %-34s\n", "notices", "hand-off start ms p50 / p90 / p99", "settled → stream ms p50 / p90 / p99")
	for _, mode := range strings.Split(*modes, ",") {
		redisURL := ""
		if mode == "redis" {
			redisURL = *rd
		}
		handoff, stream := measure(dir, bin, *pg, redisURL, *n)
		fmt.Printf("%-9s | %-34s | %-34s (%d of %d)\n", mode, quantiles(handoff), quantiles(stream), len(stream), len(handoff))
	}
}

// measure runs n jobs through a fresh deployment and answers the two latencies of each.
func measure(dir, bin, pgURL, redisURL string, n int) (handoff, stream []time.Duration) {
	ctx := context.Background()
	admin, err := sql.Open("pgx", pgURL)
	check(err)
	defer admin.Close()
	name := "multiproc_" + randomHex(5)
	_, err = admin.ExecContext(ctx, "CREATE DATABASE "+name)
	check(err)
	defer func() { _, _ = admin.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)") }()
	u, err := url.Parse(pgURL)
	check(err)
	u.Path = "/" + name
	dsn := u.String()
	db, err := sql.Open("pgx", dsn)
	check(err)
	defer db.Close()

	data := filepath.Join(dir, name)
	secret := randomHex(32)
	env := append(os.Environ(), "MODELEXEC_DATABASE="+dsn, "MODELEXEC_SECRET="+secret, "MODELEXEC_DATA="+data)
	catFile, plansFile := writeFigures(dir)
	cli := func(args ...string) []byte {
		c := exec.Command(bin, args...)
		c.Env, c.Stderr = env, os.Stderr
		out, err := c.Output()
		check(err)
		return out
	}
	cli("migrate")
	var acct struct{ ID string }
	check(json.Unmarshal(cli("accounts", "create", "--plan", "pro", "--credits", "100000000", "--created-at", "2020-01-01T00:00:00Z", "--json"), &acct))
	var key struct{ Key string }
	check(json.Unmarshal(cli("keys", "mint", "--account", acct.ID, "--json"), &key))

	api, queue, syncAddr := freeAddr(), freeAddr(), freeAddr()
	common := []string{"serve", "--catalogue", catFile, "--plans", plansFile, "--blobs", filepath.Join(dir, "blobs"),
		"--api-addr", api, "--queue-addr", queue, "--sync-addr", syncAddr, "--log-level", "warn",
		"--public-url-api", "http://" + api, "--public-url-queue", "http://" + queue, "--public-url-sync", "http://" + syncAddr}
	if redisURL != "" {
		common = append(common, "--redis", redisURL)
	}
	for _, roles := range []string{"api,queue,sync", "worker,webhooks"} {
		c := exec.Command(bin, append(common, "--roles", roles)...)
		c.Env, c.Stdout, c.Stderr = env, os.Stderr, os.Stderr
		check(c.Start())
		defer func() { _ = c.Process.Signal(os.Interrupt); _ = c.Wait() }()
	}
	waitHealthy("http://" + queue + "/healthz")
	waitHealthy("http://" + api + "/readyz")
	waitListening(db, redisURL, secret)

	for i := 0; i < n+20; i++ {
		id, got, opened := runOne("http://"+queue, key.Key)
		if i < 20 {
			continue // warm-up: connections, caches, the database's plans
		}
		var created, started, finished int64
		check(db.QueryRowContext(ctx, `SELECT created_at, started_at, finished_at FROM jobs WHERE request_id = $1`, id).Scan(&created, &started, &finished))
		handoff = append(handoff, time.Duration(started-created)*time.Microsecond)
		if opened {
			stream = append(stream, got.Sub(time.UnixMicro(finished)))
		}
	}
	return handoff, stream
}

// runOne submits a job to the front, holds its status stream and answers the job's request
// id, when the stream delivered COMPLETED, and whether the stream opened before the job
// settled.
func runOne(queue, key string) (string, time.Time, bool) {
	req, _ := http.NewRequest(http.MethodPost, queue+"/svc-serverless/image-4b", strings.NewReader(input))
	req.Header.Set("Authorization", "Key "+key)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	check(err)
	var sub struct {
		RequestID string `json:"request_id"`
		StatusURL string `json:"status_url"`
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || json.Unmarshal(b, &sub) != nil {
		fail(fmt.Errorf("submit: %d %s", res.StatusCode, b))
	}
	req, _ = http.NewRequest(http.MethodGet, sub.StatusURL+"/stream", nil)
	req.Header.Set("Authorization", "Key "+key)
	res, err = http.DefaultClient.Do(req)
	check(err)
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for first := true; sc.Scan(); {
		data, ok := bytes.CutPrefix(sc.Bytes(), []byte("data: "))
		if !ok {
			continue
		}
		if bytes.Contains(data, []byte(`"COMPLETED"`)) {
			return sub.RequestID, time.Now(), !first
		}
		first = false
	}
	fail(fmt.Errorf("stream of %s ended before COMPLETED", sub.RequestID))
	return "", time.Time{}, false
}

// writeFigures writes a catalogue where image-4b offers a queue (a front hands every job off
// without refusing one as busy) and plan figures that do not pace the benchmark.
func writeFigures(dir string) (string, string) {
	var f catalog.File
	check(json.Unmarshal(catalog.DefaultData(), &f))
	for i := range f.Models {
		if f.Models[i].Slug == "image-4b" {
			f.Models[i].Lifecycle.Queue, f.Models[i].Lifecycle.MaxWaitSeconds = catalog.QueueOffers, 600
		}
	}
	catFile := filepath.Join(dir, "catalogue.json")
	b, err := json.Marshal(f)
	check(err)
	check(os.WriteFile(catFile, b, 0o600))
	p := plans.Default().Unpaced(auth.Pro, 1000, 100000)
	plansFile := filepath.Join(dir, "plans.json")
	check(os.WriteFile(plansFile, p.JSON(), 0o600))
	return catFile, plansFile
}

// waitListening waits until both processes hear notices: two LISTEN sessions on the
// database, or two subscribers on the deployment's Redis channel.
func waitListening(db *sql.DB, redisURL, secret string) {
	var rdb *redis.Client
	if redisURL != "" {
		opt, err := redis.ParseURL(redisURL)
		check(err)
		rdb = redis.NewClient(opt)
		defer rdb.Close()
	}
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		var listening int64
		if rdb != nil {
			counts, err := rdb.PubSubNumSub(context.Background(), server.NoticeChannel(secret)).Result()
			check(err)
			listening = counts[server.NoticeChannel(secret)]
		} else {
			check(db.QueryRow(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN %'`).Scan(&listening))
		}
		if listening >= 2 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	fail(fmt.Errorf("the processes do not listen for notices"))
}

func waitHealthy(u string) {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if res, err := http.Get(u); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	fail(fmt.Errorf("%s not healthy within 30 s", u))
}

func quantiles(ds []time.Duration) string {
	if len(ds) == 0 {
		return "-"
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	q := func(p float64) float64 { return float64(s[int(p*float64(len(s)-1))]) / float64(time.Millisecond) }
	return fmt.Sprintf("%.2f / %.2f / %.2f", q(0.5), q(0.9), q(0.99))
}

func freeAddr() string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	check(err)
	defer ln.Close()
	return ln.Addr().String()
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func check(err error) {
	if err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "multiproc:", err)
	os.Exit(1)
}
