package buildinfo

import (
	"maps"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestBuildInfo(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	if err := (Build{Version: "v1.2.3", Revision: "0123abc", GoVersion: "go1.26.8"}).Register(reg); err != nil {
		t.Fatal(err)
	}
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if len(fams) != 1 || fams[0].GetName() != "lakewap_build_info" || len(fams[0].Metric) != 1 {
		t.Fatalf("gathered %v, want lakewap_build_info alone", fams)
	}
	m := fams[0].Metric[0]
	got := map[string]string{}
	for _, l := range m.Label {
		got[l.GetName()] = l.GetValue()
	}
	want := map[string]string{"version": "v1.2.3", "revision": "0123abc", "goversion": "go1.26.8"}
	if !maps.Equal(got, want) || m.GetGauge().GetValue() != 1 {
		t.Errorf("lakewap_build_info labels %v value %v, want %v and 1", got, m.GetGauge().GetValue(), want)
	}
}
