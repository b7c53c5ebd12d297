package console

import (
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/modelexec/modelexec/internal/ledger"
)

//go:embed templates/*.html
var templateFiles embed.FS

//go:embed static
var staticDir embed.FS

// dateLayout is the one way the console writes a time: to the second, in UTC.
const dateLayout = "2006-01-02 15:04:05 UTC"

// funcs are the helpers templates may call.
var funcs = template.FuncMap{
	"date": func(t time.Time) string {
		if t.IsZero() {
			return "—"
		}
		return t.UTC().Format(dateLayout)
	},
	// stamp writes an RFC 3339 time the way date does ("—" when there is none).
	"stamp": func(v any) string {
		var s string
		switch x := v.(type) {
		case string:
			s = x
		case *string:
			if x != nil {
				s = *x
			}
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return "—"
		}
		return t.UTC().Format(dateLayout)
	},
	"day":      func(t time.Time) string { return t.UTC().Format("2006-01-02") },
	"credits":  func(v any) string { return groupDigits(intOf(v)) },
	"ncredits": func(v any) string { return creditsText(intOf(v)) },
	"join":     strings.Join,
}

// intOf reads a figure a template holds.
func intOf(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case int:
		return int64(x)
	case ledger.Credits:
		return int64(x)
	}
	panic(fmt.Sprintf("console: credits of a %T", v)) // a template bug, caught by the page tests
}

// creditsText writes an amount with its unit: "1 credit", "1,500 credits".
func creditsText(n int64) string {
	if n == 1 || n == -1 {
		return groupDigits(n) + " credit"
	}
	return groupDigits(n) + " credits"
}

// groupDigits writes n with thin grouping: 1,234,567.
func groupDigits(n int64) string {
	neg := n < 0
	if neg {
		n = -n
	}
	s := fmt.Sprint(n)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// parsePages parses every page with the layout: page "keys" is templates/keys.html.
func parsePages() map[string]*template.Template {
	base := template.Must(template.New("layout.html").Funcs(funcs).ParseFS(templateFiles, "templates/layout.html"))
	names, err := fs.Glob(templateFiles, "templates/*.html")
	if err != nil {
		panic(err)
	}
	out := map[string]*template.Template{}
	for _, n := range names {
		name := strings.TrimSuffix(path.Base(n), ".html")
		if name == "layout" {
			continue
		}
		out[name] = template.Must(template.Must(base.Clone()).ParseFS(templateFiles, n))
	}
	return out
}

func staticFiles() http.Handler {
	sub, err := fs.Sub(staticDir, "static")
	if err != nil {
		panic(err)
	}
	fsrv := http.FileServerFS(sub)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=3600")
		fsrv.ServeHTTP(w, r)
	})
}
