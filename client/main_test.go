package client_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/modelexec/modelexec/client"
)

// The examples run against a real server: TestMain builds the modelexec binary, starts
// `serve --dev` on free ports over a temporary folder, and reads the key it prints.
var (
	apiURL, queueURL, apiKey string
	bin, dataDir, accountID  string // for freshClient
)

func TestMain(m *testing.M) {
	os.Exit(runWithServer(m))
}

func runWithServer(m *testing.M) int {
	dir, err := os.MkdirTemp("", "modelexec-sdk-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	bin = filepath.Join(dir, "modelexec")
	dataDir = filepath.Join(dir, "data")
	// go test puts its own toolchain's bin first on the PATH the test runs with.
	build := exec.Command("go", "build", "-o", bin, "../cmd/modelexec")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building modelexec:", err)
		return 1
	}
	addrs := make([]string, 3)
	for i := range addrs {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		addrs[i] = ln.Addr().String()
		ln.Close()
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	serve := exec.CommandContext(ctx, bin, "serve", "--dev", "--data", dataDir, "--api-addr", addrs[0],
		"--queue-addr", addrs[1], "--sync-addr", addrs[2], "--log-level", "error")
	serve.Env = append(os.Environ(), "MODELEXEC_SECRET=")
	out, err := serve.StdoutPipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	serve.Stderr = os.Stderr
	if err := serve.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "starting modelexec serve:", err)
		return 1
	}
	defer func() { cancel(); _ = serve.Wait() }()
	keyLine := regexp.MustCompile(`API key \(shown once\): (\S+)`)
	accountLine := regexp.MustCompile(`^Development account (\S+)`)
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if m := accountLine.FindStringSubmatch(sc.Text()); m != nil {
			accountID = m[1]
		}
		if m := keyLine.FindStringSubmatch(sc.Text()); m != nil {
			apiKey = m[1]
			break
		}
	}
	go func() { // keep draining so the server never blocks on a full pipe
		for sc.Scan() {
		}
	}()
	if apiKey == "" {
		fmt.Fprintln(os.Stderr, "serve --dev printed no key")
		return 1
	}
	apiURL, queueURL = "http://"+addrs[0], "http://"+addrs[1]
	deadline := time.Now().Add(30 * time.Second)
	for {
		res, err := http.Get(queueURL + "/healthz")
		if err == nil {
			res.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			fmt.Fprintln(os.Stderr, "modelexec serve did not answer:", err)
			return 1
		}
		time.Sleep(50 * time.Millisecond)
	}
	return m.Run()
}

// freshClient is a client with a key of its own, minted for the test: rate-limit buckets are
// per key, so a test that submits does not spend the examples' generate bucket.
func freshClient(t *testing.T) *client.Client {
	t.Helper()
	mint := exec.Command(bin, "keys", "mint", "--data", dataDir, "--account", accountID, "--json")
	mint.Env = append(os.Environ(), "MODELEXEC_SECRET=")
	out, err := mint.Output()
	if err != nil {
		t.Fatalf("keys mint: %v", err)
	}
	var k struct{ Key string }
	if err := json.Unmarshal(out, &k); err != nil || k.Key == "" {
		t.Fatalf("keys mint printed %s (%v)", out, err)
	}
	return client.New(k.Key, client.WithAPIURL(apiURL), client.WithQueueURL(queueURL))
}
