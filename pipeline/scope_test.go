package pipeline

import (
	"slices"
	"testing"
)

func TestDatasetSpecScope(t *testing.T) {
	s := DatasetSpec{Target: "main", Source: "ingest", TablePaths: []string{"gold/fact/"}, AllowedPaths: []string{"manifests/"}}
	got := s.OutsideTables([]string{"gold/fact/a.parquet", "gold/fact_other/b.parquet", "manifests/m.json", "_lakefs_actions/lakewap.yaml"})
	if want := []string{"gold/fact_other/b.parquet", "_lakefs_actions/lakewap.yaml"}; !slices.Equal(got, want) {
		t.Errorf("OutsideTables = %v, want %v", got, want)
	}
	for ref, want := range map[string]bool{"main": true, "ingest": true, "dev": false, "": false} {
		if s.AllowsSource(ref) != want {
			t.Errorf("AllowsSource(%q) = %v", ref, !want)
		}
	}
	s.SourceRefs = []string{"dev"}
	if !s.AllowsSource("dev") || s.AllowsSource("main") {
		t.Errorf("source_refs [dev]: dev %v, main %v", s.AllowsSource("dev"), s.AllowsSource("main"))
	}
}
