package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelexec/modelexec/internal/catalog"
	"github.com/modelexec/modelexec/internal/server"
)

// TestCAT04_OperatorReplacesCatalogue: `modelexec catalogue` prints the built-in catalogue;
// an operator's edited copy passed to `serve --catalogue` (or MODELEXEC_CATALOGUE) is the
// catalogue the service serves; a broken file is refused at start and by `catalogue --check`.
// Proves CAT-04 (embedded, replaceable by the operator).
func TestCAT04_OperatorReplacesCatalogue(t *testing.T) {
	ctx := context.Background()
	var out, errOut bytes.Buffer
	if err := run(ctx, []string{"catalogue"}, func(string) string { return "" }, &out, &errOut); err != nil {
		t.Fatal(err, errOut.String())
	}
	if !bytes.Equal(out.Bytes(), catalog.DefaultData()) {
		t.Fatal("`modelexec catalogue` is not the built-in catalogue")
	}
	var f map[string]any
	if err := json.Unmarshal(out.Bytes(), &f); err != nil {
		t.Fatal(err)
	}
	// The operator pauses image-4b in their copy.
	for _, m := range f["models"].([]any) {
		if m := m.(map[string]any); m["slug"] == "image-4b" {
			m["state"] = "paused"
		}
	}
	edited, _ := json.Marshal(f)
	dir := t.TempDir()
	path := filepath.Join(dir, "catalogue.json")
	if err := os.WriteFile(path, edited, 0o600); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := run(ctx, []string{"catalogue", "--check", path}, func(string) string { return "" }, &out, &errOut); err != nil || !strings.Contains(out.String(), "9 models") {
		t.Fatalf("check: %v %q", err, out.String())
	}

	c := &ServeCmd{Roles: "api", APIAddr: "127.0.0.1:0", QueueAddr: "127.0.0.1:0", SyncAddr: "127.0.0.1:0", Catalogue: path}
	c.Data, c.Secret = migratedData(t), "a-20-byte-secret-xyz"
	a, err := serveWith(t, c)
	if err != nil {
		t.Fatal(err)
	}
	rec := get(a.Handler(server.RoleAPI), "GET", "/v1/catalogue")
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"paused"`) {
		t.Fatalf("served catalogue does not reflect the operator's file: %d %s", rec.Code, rec.Body)
	}

	// A broken file: refused by --check and at start, naming the file.
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, bytes.Replace(edited, []byte(`"paused"`), []byte(`"asleep"`), 1), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := run(ctx, []string{"catalogue", "--check", bad}, func(string) string { return "" }, &out, &errOut); err == nil {
		t.Fatal("catalogue --check accepted a broken file")
	}
	c.Catalogue = bad
	if _, err := serveWith(t, c); err == nil || !strings.Contains(err.Error(), "bad.json") {
		t.Fatalf("serve with a broken catalogue: %v", err)
	}
}

// TestCAT04_ModelWithoutARunnerRefusedAtStart: a catalogue model that nothing runs on a
// worker (no "runner", no --cog, not "described") stops `serve` at start, naming the model and
// the ways to give it one; a process without the worker role starts, as its models run
// elsewhere. Before, such a model took every submit and failed it, charged and refunded.
func TestCAT04_ModelWithoutARunnerRefusedAtStart(t *testing.T) {
	var f map[string]any
	if err := json.Unmarshal(catalog.DefaultData(), &f); err != nil {
		t.Fatal(err)
	}
	var copied map[string]any
	for _, m := range f["models"].([]any) {
		if m := m.(map[string]any); m["slug"] == "image-4b" {
			copied = map[string]any{}
			for k, v := range m {
				copied[k] = v
			}
		}
	}
	copied["slug"] = "c-4b"
	delete(copied, "runner")
	f["models"] = append(f["models"].([]any), copied)
	edited, _ := json.Marshal(f)
	path := filepath.Join(t.TempDir(), "catalogue.json")
	if err := os.WriteFile(path, edited, 0o600); err != nil {
		t.Fatal(err)
	}
	c := &ServeCmd{Roles: "api,queue,sync,worker", APIAddr: "127.0.0.1:0", QueueAddr: "127.0.0.1:0", SyncAddr: "127.0.0.1:0", Catalogue: path}
	c.Data, c.Secret = migratedData(t), "a-20-byte-secret-xyz"
	if _, err := serveWith(t, c); err == nil || !strings.Contains(err.Error(), "c-4b has no runner") || !strings.Contains(err.Error(), "--cog c-4b=URL") {
		t.Fatalf("serve with a model nothing runs: %v", err)
	}
	c.Roles = "api,queue,sync"
	if _, err := serveWith(t, c); err != nil {
		t.Fatalf("a front without the worker role: %v", err)
	}
}
