package main

import "testing"

// The batch-scope listing is confined to the folder that holds every
// changed file, never wider than the table's prefix.
func TestCommonFolder(t *testing.T) {
	for _, tc := range []struct {
		prefix string
		paths  []string
		want   string
	}{
		{"gold/t/", []string{"gold/t/batch=1/part-0.parquet"}, "gold/t/batch=1/"},
		{"gold/t/", []string{"gold/t/batch=1/part-0.parquet", "gold/t/batch=1/part-1.parquet"}, "gold/t/batch=1/"},
		{"gold/t/", []string{"gold/t/batch=1/a/x.parquet", "gold/t/batch=1/b/y.parquet"}, "gold/t/batch=1/"},
		{"gold/t/", []string{"gold/t/batch=1/x.parquet", "gold/t/batch=2/y.parquet"}, "gold/t/"},
		{"gold/t/", []string{"gold/t/x.parquet"}, "gold/t/"},
		{"gold/t/b", []string{"gold/t/batch=1/x.parquet", "gold/t/bx/y.parquet"}, "gold/t/b"},
		{"", []string{"a/x", "b/y"}, ""},
		{"", []string{"x"}, ""},
	} {
		if got := commonFolder(tc.prefix, tc.paths); got != tc.want {
			t.Errorf("commonFolder(%q, %v) = %q, want %q", tc.prefix, tc.paths, got, tc.want)
		}
	}
}
