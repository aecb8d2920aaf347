package daemon

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lakewap/lakewap/internal/status"
	"github.com/lakewap/lakewap/pipeline"
)

// blockingCollector is a metric whose gathering waits for gate: a costly
// /metrics answer.
type blockingCollector struct {
	desc     *prometheus.Desc
	gate     chan struct{}
	building *atomic.Int32
}

func (c blockingCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c blockingCollector) Collect(ch chan<- prometheus.Metric) {
	c.building.Add(1)
	<-c.gate
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, 1)
}

// TestReadEndpointsAreServedFewAtATime: /runs and /metrics had no bound of
// their own on the calls answered at once, and each builds its whole
// answer (a /runs page is up to 4 MiB): 64 callers reading /runs over and
// over took the heap to 586 MiB and hook calls to 1.6 s (3 s at most); 500
// callers that sent the request and read nothing, 4 GiB and 16 s. Each is
// answered a few at a time; a call past that is answered 503 with
// Retry-After at once, and the hook answers meanwhile.
func TestReadEndpointsAreServedFewAtATime(t *testing.T) {
	const callers = 16
	for _, path := range []string{status.Path, "/metrics"} {
		t.Run(path, func(t *testing.T) {
			gate := make(chan struct{})
			var building atomic.Int32
			reg := prometheus.NewRegistry()
			reg.MustRegister(blockingCollector{desc: prometheus.NewDesc("lakewap_test", "a costly metric", nil, nil),
				gate: gate, building: &building})
			runs := func() []pipeline.Run {
				building.Add(1)
				<-gate
				return nil
			}
			mux := http.NewServeMux()
			mux.Handle(status.Path, runsHandler(status.Options{Runs: runs}))
			mux.Handle("/metrics", metricsHandler(reg))
			mux.HandleFunc(PreMergePath, func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") })
			srv := newHTTPServer(mux, time.Minute)
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			stopped := make(chan struct{})
			go func() { _ = srv.Serve(serveLimited(srv, ln, maxConns)); close(stopped) }()
			defer func() { _ = srv.Close(); <-stopped }()
			base := "http://" + ln.Addr().String()
			get := func(path string) (*http.Response, error) {
				resp, err := http.Get(base + path)
				if err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				return resp, err
			}

			var (
				mu      sync.Mutex
				refused int
				errs    []error
				wg      sync.WaitGroup
			)
			for range callers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					resp, err := get(path)
					mu.Lock()
					defer mu.Unlock()
					switch {
					case err != nil:
						errs = append(errs, err)
					case resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") != "":
						refused++
					case resp.StatusCode != http.StatusOK:
						errs = append(errs, fmt.Errorf("status %d", resp.StatusCode))
					}
				}()
			}
			// Every call is being built, or has been answered.
			waitUntil(t, func() bool {
				mu.Lock()
				defer mu.Unlock()
				return int(building.Load())+refused+len(errs) == callers
			})
			if n := building.Load(); n > maxReadCalls {
				t.Errorf("%d calls of %s were being answered at once, want at most %d", n, path, maxReadCalls)
			}
			resp, err := get(PreMergePath)
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Errorf("the hook while %s is flooded: %v %v", path, resp, err)
			}
			close(gate)
			wg.Wait()
			if len(errs) > 0 {
				t.Errorf("calls of %s failed otherwise than 503 with Retry-After: %v", path, errs)
			}
			if want := callers - int(building.Load()); refused != want {
				t.Errorf("%d calls of %s refused with 503 and Retry-After, want %d", refused, path, want)
			}
		})
	}
}
