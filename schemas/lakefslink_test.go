package schemas

import (
	"strings"
	"testing"
	"time"
)

// TestAttributeLakeFSOpensIsAnHTTPURL: a BatchLanded's attributes become
// the metadata of lakewap's publish commit on the target, and lakeFS's UI
// turns a commit metadata key like "::lakefs::<name>::url[url:ui]" (its
// pattern /::lakefs::(.*)::url\[ur[il]:ui\]$/, anywhere in the key) into a
// button "Open <name> UI" on that commit, which sets window.location to the
// value, whatever its scheme (lakeFS webui, commits/commit/metadata.tsx). A
// producer's attribute "::lakefs::Audit report::url[url:ui]":
// "javascript:..." put a button on lakewap's publish commit that ran the
// producer's script in lakeFS's UI, with the session of whoever clicked it
// (an operator, an admin). Such an attribute must be an http(s) URL: an
// upstream's link to its own run stays possible.
func TestAttributeLakeFSOpensIsAnHTTPURL(t *testing.T) {
	now := time.Now()
	landed := func(key, value string) BatchLanded {
		return BatchLanded{BatchID: "b1", Dataset: "d", ExpectedWrites: []string{"a"}, OccurredAt: now,
			Attributes: map[string]string{key: value}}
	}
	for _, tc := range []struct {
		key, value string
		ok         bool
	}{
		{"::lakefs::Audit report::url[url:ui]", "javascript:fetch('/api/v1/auth/users')", false},
		{"::lakefs::Audit report::url[uri:ui]", "JavaScript:alert(1)", false},
		{"x::lakefs::Audit::url[url:ui]", "javascript:alert(1)", false},  // lakeFS's pattern is not anchored at the start
		{"::lakefs::Audit::url[url:ui]", "java\tscript:alert(1)", false}, // browsers drop tabs and newlines from URLs
		{"::lakefs::Audit::url[url:ui]", " javascript:alert(1)", false},
		{"::lakefs::Audit::url[url:ui]", "data:text/html,<script>alert(1)</script>", false},
		{"::lakefs::Audit::url[url:ui]", "//evil.example/login", false},
		{"::lakefs::Audit::url[url:ui]", "https://airflow.example/dags/load/runs/1", true},
		{"::lakefs::Airflow::url[url:ui]", "http://airflow.internal:8080/x?y=1", true},
		{"run_url", "javascript:alert(1)", true}, // lakeFS shows it as text
	} {
		err := Validate(landed(tc.key, tc.value), nil, now)
		if tc.ok && err != nil {
			t.Errorf("%q = %q: %v; want it accepted", tc.key, tc.value, err)
		}
		if !tc.ok && (err == nil || !strings.Contains(err.Error(), "attributes."+tc.key) || !strings.Contains(err.Error(), "http")) {
			t.Errorf("%q = %q: %v; want it refused, naming the attribute and saying it must be an http(s) URL", tc.key, tc.value, err)
		}
	}
}
