package audit

import "testing"

// TestDeltaTypeWithin: a struct field added by a schema evolution reads
// the same values at the versions before it; another type, or a field in
// another case, does not.
func TestDeltaTypeWithin(t *testing.T) {
	s := func(fields string) string { return `{"type":"struct","fields":[` + fields + `]}` }
	f := func(name, typ string) string {
		return `{"name":"` + name + `","type":` + typ + `,"nullable":true,"metadata":{}}`
	}
	for _, c := range []struct {
		old, new string
		want     bool
	}{
		{`"long"`, `"long"`, true},
		{`"integer"`, `"long"`, false},
		{s(f("a", `"long"`)), s(f("a", `"long"`) + "," + f("b", `"string"`)), true},
		{s(f("a", `"long"`)), s(f("A", `"long"`)), false},
		{s(f("a", `"integer"`)), s(f("a", `"long"`)), false},
		{`{"type":"array","elementType":` + s(f("a", `"long"`)) + `,"containsNull":true}`, `{"type":"array","elementType":` + s(f("a", `"long"`)+","+f("b", `"long"`)) + `,"containsNull":true}`, true},
		{`{"type":"array","elementType":"long","containsNull":true}`, `{"type":"array","elementType":"string","containsNull":true}`, false},
	} {
		if got := deltaTypeWithin([]byte(c.old), []byte(c.new)); got != c.want {
			t.Errorf("%s within %s: %v, want %v", c.old, c.new, got, c.want)
		}
	}
}
