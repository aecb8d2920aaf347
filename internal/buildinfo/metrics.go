package buildinfo

import "github.com/prometheus/client_golang/prometheus"

// Register registers lakewap_build_info on reg, always 1, whose labels say
// which build runs: join it to other series to see a version roll out, or
// alert on two versions at once.
func (b Build) Register(reg prometheus.Registerer) error {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "lakewap_build_info",
		Help: "The running build: version (module version, short VCS revision or dev), revision and Go version; always 1."},
		[]string{"version", "revision", "goversion"})
	if err := reg.Register(g); err != nil {
		return err
	}
	g.WithLabelValues(b.Version, b.Revision, b.GoVersion).Set(1)
	return nil
}
