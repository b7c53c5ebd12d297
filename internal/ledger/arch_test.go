package ledger_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The ledger owns every credit movement. These architecture checks walk the module's Go source
// (in the spirit of depaware-style tests) and fail when credits are written or the ledger's
// store is called from anywhere else.

// adapter is the store's ledger adapter: the one Go file allowed to write credit SQL.
const adapter = "internal/store/sqlstore/ledger_store.go"

// creditWrites are SQL statements that move credits or their records.
var creditWrites = []*regexp.Regexp{
	regexp.MustCompile(`(?is)\bUPDATE\s+accounts\s+SET\b[^;]*\bbalance\b`),
	regexp.MustCompile(`(?is)\bINSERT\s+INTO\s+accounts\b[^;]*\bbalance\b`),
	regexp.MustCompile(`(?is)\b(INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+ledger_entries\b`),
	regexp.MustCompile(`(?is)\b(INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+(usage_daily|usage_monthly|usage_daily_totals)\b`),
	regexp.MustCompile(`(?is)\bUPDATE\s+api_keys\s+SET\b[^;]*\bspent\b`),
	regexp.MustCompile(`(?is)\b(INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+passes\b`),
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the test's directory")
		}
		dir = parent
	}
}

// goFiles parses every Go file of the module (vendor and testdata left out).
func goFiles(t *testing.T, root string) map[string]*ast.File {
	t.Helper()
	out := map[string]*ast.File{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "vendor", "testdata", "node_modules", ".git":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		out[filepath.ToSlash(rel)] = f
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestArchCreditWritesOnlyInLedgerAdapter: no Go file but the ledger's store adapter holds SQL
// that writes balances, ledger entries, the usage rollup, key spend or passes.
func TestArchCreditWritesOnlyInLedgerAdapter(t *testing.T) {
	root := moduleRoot(t)
	files := goFiles(t, root)
	if _, ok := files[adapter]; !ok {
		t.Fatalf("the ledger adapter %s is missing", adapter)
	}
	found := 0
	for path, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				return true
			}
			for _, re := range creditWrites {
				if re.MatchString(s) {
					if path == adapter {
						found++
					} else {
						t.Errorf("%s writes credits outside the ledger adapter: %.80q", path, s)
					}
				}
			}
			return true
		})
	}
	if found == 0 {
		t.Fatal("the check found no credit write even in the adapter: its patterns no longer match the SQL")
	}
}

// TestArchLedgerStoreCalledOnlyByLedger: the methods of the ledger's Store and Tx ports are
// called only by package ledger (and by the store's own conformance suite, which tests the
// adapter that implements them).
func TestArchLedgerStoreCalledOnlyByLedger(t *testing.T) {
	root := moduleRoot(t)
	files := goFiles(t, root)
	port := files["internal/ledger/store.go"]
	if port == nil {
		t.Fatal("internal/ledger/store.go is missing")
	}
	methods := map[string]bool{}
	ast.Inspect(port, func(n ast.Node) bool {
		if it, ok := n.(*ast.InterfaceType); ok {
			for _, m := range it.Methods.List {
				for _, name := range m.Names {
					methods[name.Name] = true
				}
			}
		}
		return true
	})
	if len(methods) < 10 {
		t.Fatalf("read %d port methods from internal/ledger/store.go", len(methods))
	}
	for path, f := range files {
		if strings.HasPrefix(path, "internal/ledger/") || path == adapter || strings.HasPrefix(path, "internal/store/storetest/") {
			continue
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			if sel, ok := call.Fun.(*ast.SelectorExpr); ok && methods[sel.Sel.Name] {
				t.Errorf("%s calls the ledger's store (%s) directly: go through ledger.Service", path, sel.Sel.Name)
			}
			return true
		})
	}
}
