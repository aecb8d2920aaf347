package lakefs

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// instrumented registers the client's metrics on reg and returns rt timing
// every call by method and status code.
func instrumented(reg prometheus.Registerer, rt http.RoundTripper) (http.RoundTripper, error) {
	calls := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "lakewap_lakefs_request_duration_seconds",
		Help: "lakeFS API calls by HTTP method and status code.", Buckets: prometheus.ExponentialBuckets(0.002, 2, 16)},
		[]string{"method", "code"})
	if err := reg.Register(calls); err != nil {
		return nil, err
	}
	return promhttp.InstrumentRoundTripperDuration(calls, rt), nil
}
