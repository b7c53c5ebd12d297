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
)

// editedCatalogue writes the built-in catalogue with edit applied to model slug's lifecycle.
func editedCatalogue(t *testing.T, slug string, edit func(lifecycle map[string]any)) string {
	t.Helper()
	var f map[string]any
	if err := json.Unmarshal(catalog.DefaultData(), &f); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, m := range f["models"].([]any) {
		if m := m.(map[string]any); m["slug"] == slug {
			edit(m["lifecycle"].(map[string]any))
			found = true
		}
	}
	if !found {
		t.Fatalf("no model %s", slug)
	}
	b, _ := json.Marshal(f)
	path := filepath.Join(t.TempDir(), "catalogue.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestVER06_PublishedTimeLimitsNeverShortened proves VER-06: a catalogue file that shortens a
// model's published stall ceiling is refused at start and by `catalogue --check`,
// naming the model, the limit and both figures; one that lengthens them starts.
func TestVER06_PublishedTimeLimitsNeverShortened(t *testing.T) {
	published, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	m, _ := published.Model("image-lite")
	stall := m.Lifecycle.StallCeilingSeconds
	shorter := editedCatalogue(t, "image-lite", func(l map[string]any) { l["stall_ceiling_seconds"] = stall - 1 })
	var out, errOut bytes.Buffer
	err = run(context.Background(), []string{"catalogue", "--check", shorter}, func(string) string { return "" }, &out, &errOut)
	for _, want := range []string{"image-lite", "lifecycle.stall_ceiling_seconds", "never shortened"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("catalogue --check of a shortened stall ceiling: %v (want %q)", err, want)
		}
	}
	c := &ServeCmd{Roles: "api", APIAddr: "127.0.0.1:0", QueueAddr: "127.0.0.1:0", SyncAddr: "127.0.0.1:0", Catalogue: shorter}
	c.Data, c.Secret = migratedData(t), "a-20-byte-secret-xyz"
	if _, err := serveWith(t, c); err == nil || !strings.Contains(err.Error(), "stall_ceiling_seconds") {
		t.Fatalf("serve with a shortened stall ceiling: %v", err)
	}

	longer := editedCatalogue(t, "image-lite", func(l map[string]any) { l["stall_ceiling_seconds"] = stall * 2 })
	c.Catalogue, c.Data = longer, migratedData(t)
	if _, err := serveWith(t, c); err != nil {
		t.Fatalf("serve with a lengthened stall ceiling: %v", err)
	}
}
