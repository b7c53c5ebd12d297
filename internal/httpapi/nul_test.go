package httpapi

import (
	"fmt"
	"strings"
	"testing"

	"github.com/modelexec/modelexec/internal/apierr"
)

// Issue 28 (item 1): a NUL character in any string of a JSON body is refused invalid_body,
// naming the field; an escaped backslash followed by "u0000" is ordinary text.
func TestNULRefusedWithItsField(t *testing.T) {
	for body, want := range map[string]struct{ param, loc string }{
		`{"title":"a\u0000b"}`: {"title", "body/title"},
		`{"messages":[{"role":"user","content":"ok"},{"role":"user","content":"x\u0000"}]}`: {"messages[1].content", "body/messages/1/content"},
		`{"input":{"a":[1,{"b":"\u0000"}]}}`:                                                {"input.a[1].b", "body/input/a/1/b"},
		`{"k\u0000":"v"}`:                                                                   {"body", "body"}, // a key: its object is named
		`{"a":{"k\u0000":1}}`:                                                               {"a", "body/a"},
		`{"deep":[[["\u0000"]]]}`:                                                           {"deep[0][0][0]", "body/deep/0/0/0"},
		`{"a":{"b":1},"c":[true,null,"\u0000"]}`:                                            {"c[2]", "body/c/2"},
	} {
		err := CheckObject([]byte(body))
		e, ok := apierr.As(err)
		if !ok || e.Code != apierr.InvalidBody || e.Fields["param"] != want.param {
			t.Errorf("%s: %v (param %v), want invalid_body naming %q", body, err, e.Fields["param"], want.param)
			continue
		}
		if len(e.Detail) != 1 {
			t.Errorf("%s: detail %v, want one naming %s", body, e.Detail, want.loc)
			continue
		}
		var loc []string
		for _, p := range e.Detail[0].Loc {
			loc = append(loc, fmt.Sprint(p))
		}
		if strings.Join(loc, "/") != want.loc {
			t.Errorf("%s: detail %v, want one naming %s", body, e.Detail, want.loc)
		}
		if _, err := DecodeObject([]byte(body)); err == nil {
			t.Errorf("%s: DecodeObject let it through", body)
		}
	}
	for _, body := range []string{`{"text":"a\\u0000b"}`, `{"text":"plain"}`, `{}`} {
		if err := CheckObject([]byte(body)); err != nil {
			t.Errorf("%s: %v", body, err)
		}
	}
}
