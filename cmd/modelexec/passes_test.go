package main

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelexec/modelexec/internal/ledger"
	"github.com/modelexec/modelexec/internal/store"
)

// TestPassesGrantModelsFromTheCatalogue: passes grant --models refuses a slug the catalogue does
// not have (a pass that would cover nothing), naming the valid slugs, and writes nothing; the
// address form svc-serverless/<slug> is taken as its slug.
func TestPassesGrantModelsFromTheCatalogue(t *testing.T) {
	c := newConsole(t)
	var a struct{ ID string }
	c.ok(&a, "accounts", "create", "--json")
	for _, bad := range []string{"imageturbo", "image-4b,imageturbo", "svc-serverless/nope"} {
		_, err := c.run("passes", "grant", "--account", a.ID, "--name", "p", "--models", bad)
		if err == nil || !strings.Contains(err.Error(), "the catalogue has no model") || !strings.Contains(err.Error(), "image-turbo") {
			t.Fatalf("--models %s: modelexec: %v", bad, err)
		}
	}
	c.ok(nil, "passes", "grant", "--account", a.ID, "--name", "turbo", "--models", "svc-serverless/image-turbo,image-4b")

	db, err := store.OpenChecked(context.Background(), filepath.Join(c.data, "modelexec.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ps, err := ledger.New(db, utcNow).Passes(context.Background(), a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 1 || !slices.Equal(ps[0].Models, []string{"image-turbo", "image-4b"}) {
		t.Fatalf("passes %+v, want one covering image-turbo and image-4b", ps)
	}
}
