package server_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/blobs"
	"github.com/modelexec/modelexec/internal/server"
	"github.com/modelexec/modelexec/internal/store/storetest"
)

// --disable-product takes the products of the catalogue's models: a name of none (a typo, a
// scope's word such as "image") would pause nothing, so the process refuses it at start and
// names the products there are.
func TestDisableProductRefusesANameThatPausesNothing(t *testing.T) {
	db := storetest.OpenSQLite(t)
	as := auth.NewService(db, auth.Format{Prefix: "svc_sk_"}, auth.NewHasher(secret), func() time.Time { return time.Now().UTC() }, slog.New(slog.DiscardHandler))
	build := func(products ...string) error {
		srv, err := server.New(context.Background(), server.Config{Secret: secret, NoRateLimits: true, DisableProduct: products},
			server.Deps{DB: db, Auth: as, Bucket: blobs.NewMemory(), Log: slog.New(slog.DiscardHandler)})
		if err == nil {
			srv.Close()
		}
		return err
	}
	if err := build("music", "photo"); err != nil {
		t.Fatalf("--disable-product music,photo: %v", err)
	}
	err := build("image", "music")
	if err == nil || !strings.Contains(err.Error(), `"image"`) || !strings.Contains(err.Error(), "photo") || !strings.Contains(err.Error(), "music") {
		t.Fatalf("--disable-product image: %v", err)
	}
}
