package notify

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// TestLimits63SlackAnswersAreReadToALimit: slack-go decodes the Web API's
// answer whole (json.Decoder buffers each value it reads) and the
// webhook's is read to its end. lakewap posts a message of at most 40,000
// characters; Slack answers with it and a few fields. An answer of 64 MiB
// (a proxy's, a misconfigured api_url's) made each post allocate it twice
// over. Answers are read to maxSlackAnswerBytes: past it the post errors naming
// the limit, without retrying (the message may be posted).
func TestLimits63SlackAnswersAreReadToALimit(t *testing.T) {
	ws := newWorkspace(t)
	fat := []byte(`{"ok":true,"channel":"CWAP","ts":"1700000000.000100","message":{"text":"` + strings.Repeat("a", 64<<20) + `"}}`)
	ws.setFail(func(method string, w http.ResponseWriter) bool {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(fat)
		return true
	})
	sink := newTestSlack(t, ws, "slack", "#wap")
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	_, retry, err := sink.Send(context.Background(), note(publishedEvent(), schemas.StatePublished))
	runtime.ReadMemStats(&m1)
	allocated := m1.TotalAlloc - m0.TotalAlloc
	t.Logf("a post answered with 64 MiB: %d bytes allocated, retry %v, err %v", allocated, retry, err)
	if allocated > 8*maxSlackAnswerBytes { // slack-go buffers and decodes what it reads: a few times the cap, not the 64 MiB
		t.Errorf("a post answered with 64 MiB allocated %d bytes; want the answer read to maxSlackAnswerBytes", allocated)
	}
	if err == nil || retry || !strings.Contains(err.Error(), fmt.Sprint(maxSlackAnswerBytes)) {
		t.Errorf("a post answered with 64 MiB: retry %v, err %v; want an error naming the limit, not retried", retry, err)
	}
}
