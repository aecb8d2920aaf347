package audit

import (
	"testing"
	"time"
)

// SuitesDigest changes with the dataset's suite and with any other suite
// of its repository and target (a neighbor's check tightened, a dataset
// added there), and with the paths the dataset allows besides its tables
// (the tables-only rule), and not with a suite of another target.
func TestSuitesDigestNamesTheSuitesOfTheTarget(t *testing.T) {
	digest := func(change func(map[string]Dataset)) map[string]string {
		ds := shopDatasets()
		change(ds)
		s, err := NewService(ServiceOptions{Engine: &scriptedRunner{}, Datasets: ds, Concurrency: 1, Budget: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for name := range ds {
			out[name] = s.SuitesDigest(name)
		}
		return out
	}
	base := digest(func(map[string]Dataset) {})
	for name, d := range base {
		if len(d) != 32 {
			t.Errorf("%s: digest %q, want 32 hex digits", name, d)
		}
	}
	for _, tt := range []struct {
		name    string
		change  func(map[string]Dataset)
		changed []string // datasets whose digest changes
	}{
		{"a check of customers tightened", func(ds map[string]Dataset) {
			d := ds["customers"]
			d.Suite.Checks = append(d.Suite.Checks, Check{Name: "names", Kind: KindNotNull, Table: "customers", Column: "name"})
			ds["customers"] = d
		}, []string{"billing", "customers", "orders"}},
		{"a dataset added to main", func(ds map[string]Dataset) {
			ds["guard"] = Dataset{Repository: "lake", Target: "main", Suite: Suite{Tables: []Table{{Name: "customers", Path: "gold/customers/"}},
				Checks: []Check{{Name: "some", Kind: KindRowCount, Table: "customers"}}}}
		}, []string{"billing", "customers", "orders"}},
		{"an allowed path added to customers", func(ds map[string]Dataset) {
			d := ds["customers"]
			d.AllowedPaths = []string{"zzzz/customers/"}
			ds["customers"] = d
		}, []string{"customers"}},
		{"a check of another target's dataset", func(ds map[string]Dataset) {
			d := ds["audit"]
			d.Suite.Checks = nil
			ds["audit"] = d
		}, []string{"audit"}},
	} {
		got := digest(tt.change)
		for _, name := range []string{"billing", "customers", "orders", "audit"} {
			want := false
			for _, c := range tt.changed {
				want = want || c == name
			}
			if changed := got[name] != base[name]; changed != want {
				t.Errorf("%s: digest of %s changed %v, want %v", tt.name, name, changed, want)
			}
		}
	}
	if s, _ := NewService(ServiceOptions{Engine: &scriptedRunner{}, Datasets: shopDatasets(), Concurrency: 1, Budget: time.Minute}); s.SuitesDigest("nope") != "" {
		t.Error("a dataset not in the config has a digest")
	}
}

// The excuse of a check failing on the target already compares sample
// rows when all of them fit in audit.sample_rows, whole (neither clipped
// to audit.max_sample_value_bytes nor dropped for audit.max_report_bytes),
// and counts only beyond: a batch audited under other such settings may
// get another verdict, as under another suite, so the digest names them;
// the same settings give the same digest.
func TestSuitesDigestNamesTheSettingsTheVerdictDependsOn(t *testing.T) {
	digest := func(o Options) string {
		o.Source, o.WorkDir, o.MemoryLimit, o.Threads = newDirSource(t), t.TempDir(), "512MB", 1
		e, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		s, err := NewService(ServiceOptions{Engine: e, Datasets: shopDatasets(), Concurrency: 1, Budget: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		return s.SuitesDigest("customers")
	}
	base := digest(Options{})
	if got := digest(Options{SampleRows: 5, MaxSampleValueBytes: DefaultMaxSampleValueBytes}); got != base {
		t.Errorf("the defaults set explicitly digest to %s, unset to %s", got, base)
	}
	for name, o := range map[string]Options{
		"sample_rows":            {SampleRows: 500},
		"max_sample_value_bytes": {MaxSampleValueBytes: 64},
		"max_report_bytes":       {MaxReportBytes: 4 << 10},
		"clock_skew (freshness)": {ClockSkew: DefaultClockSkew + time.Minute},
	} {
		if digest(o) == base {
			t.Errorf("%s changed: the digest stays %s", name, base)
		}
	}
}
