package english

import "testing"

func TestJoin(t *testing.T) {
	for _, c := range []struct {
		ws      []string
		or, and string
	}{
		{nil, "", ""},
		{[]string{"a"}, "a", "a"},
		{[]string{"a", "b"}, "a or b", "a and b"},
		{[]string{"a", "b", "c"}, "a, b or c", "a, b and c"},
	} {
		if got := Or(c.ws...); got != c.or {
			t.Errorf("Or(%q) = %q; want %q", c.ws, got, c.or)
		}
		if got := And(c.ws...); got != c.and {
			t.Errorf("And(%q) = %q; want %q", c.ws, got, c.and)
		}
	}
}
