package status

import (
	"context"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// chromium returns Debian's Chromium, or skips the test where it is not
// installed (CI installs it: .ci/run).
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no chromium on PATH (apt-get install chromium): the status page is not checked in a browser")
	return ""
}

// headless loads url in a headless Chromium and returns the DOM it built;
// with shot set it also saves a screenshot there.
func headless(t *testing.T, bin, url, shot string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	args := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
		"--user-data-dir=" + t.TempDir(), "--window-size=1500,900"}
	if shot != "" {
		args = append(args, "--screenshot="+shot)
	} else {
		args = append(args, "--dump-dom")
	}
	cmd := exec.CommandContext(ctx, bin, append(args, url)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium %s: %v\n%s", url, err, stderr.String())
	}
	return string(out)
}

// TestRunsPageInChromium loads /runs, as a browser does, with runs in four
// states and hostile text in one, and checks what the browser made of it:
// one row per run with its state, the deadline passed, the failed check,
// the links and commands; the hostile batch id and error as text, no
// element of theirs; and the state filter.
func TestRunsPageInChromium(t *testing.T) {
	bin := chromium(t)
	srv := httptest.NewServer(Handler(Options{Runs: sampleRuns, Now: func() time.Time { return now }, LakeFSUI: "http://lakefs.test:8000"}))
	defer srv.Close()

	dom := headless(t, bin, srv.URL+"/runs", "")
	rows := regexp.MustCompile(`<tr class="run" data-batch="([^"]*)" data-state="([^"]*)"`).FindAllStringSubmatch(dom, -1)
	var got []string
	for _, r := range rows {
		got = append(got, r[2]+":"+r[1])
	}
	want := []string{"failed:b-&lt;script&gt;alert(1)&lt;/script&gt;", "awaiting_writes:b-waiting", "aborted:b-aborted", "published:b-published"}
	if !slices.Equal(got, want) {
		t.Errorf("rows in the browser's DOM: %v, want %v", got, want)
	}
	for _, s := range []string{
		`<span class="past">past deadline</span>`,
		`<td class="check-fail">fail</td><td>billing_id_not_null</td><td>40 / 0</td>`,
		`<a href="http://lakefs.test:8000/repositories/lake/commits/abc123">merge commit</a>`,
		`<a href="http://lakefs.test:8000/repositories/lake/objects?ref=wap-billing-b-aborted">branch</a>`,
		`<code>lakewap revert -config F -batch b-published -reason 'why'</code>`,
		`<code>lakewap cancel -config F -batch b-waiting</code>`,
		`lakefs: 503 &lt;img src=x onerror=alert(2)&gt;`,
		`<span id="count">4 run(s)</span>`,
	} {
		if !strings.Contains(dom, s) {
			t.Errorf("the browser's DOM lacks %s", s)
		}
	}
	if strings.Contains(dom, "<script") || strings.Contains(dom, "<img") || strings.Contains(dom, "secret_col") {
		t.Errorf("the browser's DOM has an element from the data, or a sample row")
	}

	dom = headless(t, bin, srv.URL+"/runs?state=aborted", "")
	if n := strings.Count(dom, `<tr class="run"`); n != 1 || !strings.Contains(dom, `data-batch="b-aborted"`) ||
		!strings.Contains(dom, `<option selected="">aborted</option>`) {
		t.Errorf("filtered by state aborted: %d rows; want b-aborted alone and the filter selected", n)
	}

	if dir := os.Getenv("LAKEWAP_SCREENSHOT_DIR"); dir != "" {
		shot := filepath.Join(dir, "runs.png")
		headless(t, bin, srv.URL+"/runs", shot)
		t.Logf("screenshot: %s", shot)
	}
}
