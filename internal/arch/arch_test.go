package arch

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/modelexec/modelexec/"

// domain packages hold the rules of the service; HTTP and SQL stay at the edge. webhooks is
// left out on purpose: delivering a webhook is an HTTP call, which its engine makes itself.
var domain = []string{"apierr", "auth", "catalog", "chat", "jobs", "ledger", "plans", "ratelimit", "studio", "tokens"}

// transports each serve one surface; what two of them share lives in httpapi or jobview.
var transports = []string{"accountapi", "modelhost", "compatapi", "console"}

// imports lists the imports of the non-test Go files of one package directory.
func imports(t *testing.T, dir string) map[string]bool {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	fset := token.NewFileSet()
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			out[p] = true
		}
	}
	return out
}

func TestDomainImportsNoHTTPNorSQL(t *testing.T) {
	for _, pkg := range domain {
		for im := range imports(t, filepath.Join("..", pkg)) {
			bad := im == "net/http" || im == "database/sql" || strings.HasPrefix(im, "github.com/jackc/") ||
				strings.HasPrefix(im, "modernc.org/") || strings.HasPrefix(im, module+"internal/store") ||
				strings.HasPrefix(im, module+"internal/httpapi")
			for _, tr := range transports {
				bad = bad || im == module+"internal/"+tr
			}
			if bad {
				t.Errorf("domain package internal/%s imports %s: HTTP, SQL and transports belong at the edge", pkg, im)
			}
		}
	}
}

func TestTransportsDoNotImportEachOther(t *testing.T) {
	for _, pkg := range transports {
		for im := range imports(t, filepath.Join("..", pkg)) {
			for _, other := range transports {
				if other != pkg && im == module+"internal/"+other {
					t.Errorf("transport internal/%s imports internal/%s: share through httpapi, jobview or a domain package", pkg, other)
				}
			}
		}
	}
}
