package tests

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/schemas"
)

// asyncapiNode returns the directory scripts/nodeenv.sh installed the
// AsyncAPI parser into: $LAKEWAP_ASYNCAPI_NODE_DIR (test.sh sets it; then
// the test must run), else the default one if it is there and current (else
// the test skips, with the returned reason).
func asyncapiNode() (dir string, skip error) {
	if _, err := exec.LookPath("node"); err != nil {
		return "", errors.New("no node on PATH")
	}
	if d := os.Getenv("LAKEWAP_ASYNCAPI_NODE_DIR"); d != "" {
		return d, nil
	}
	cache := os.Getenv("LAKEWAP_CACHE_DIR")
	if cache == "" {
		cache = filepath.Join(repoDir, ".cache")
	}
	var both []byte
	for _, f := range []string{"package.json", "package-lock.json"} {
		b, err := os.ReadFile(filepath.Join(repoDir, "tests", "asyncapi", f))
		if err != nil {
			return "", err
		}
		both = append(both, b...)
	}
	sum := sha256.Sum256(both)
	dir = filepath.Join(cache, "nodeenv-"+hex.EncodeToString(sum[:])[:12])
	stamp, err := os.ReadFile(filepath.Join(dir, ".lock.sha256"))
	if err != nil || strings.TrimSpace(string(stamp)) != hex.EncodeToString(sum[:]) {
		return "", fmt.Errorf("no current AsyncAPI parser install at %s", dir)
	}
	return filepath.Abs(dir)
}

// TestAsyncAPIDocumentParses hands docs/reference/asyncapi.yaml (kept
// current by cmd/lakewap's TestReferenceIsCurrent) to the AsyncAPI
// project's own parser, with its Avro schema parser: it must report no
// error, and the document it parsed must have lakewap's five topics with
// their messages, each event's Avro fields and the headers consumers rely on.
func TestAsyncAPIDocumentParses(t *testing.T) {
	dir, err := asyncapiNode()
	if err != nil {
		t.Skipf("AsyncAPI parser check skipped: %v; scripts/nodeenv.sh installs @asyncapi/parser (./test.sh runs it)", err)
	}
	doc, err := filepath.Abs(filepath.Join(repoDir, "docs", "reference", "asyncapi.yaml"))
	must(t, err)
	cmd := exec.Command("node", filepath.Join(repoDir, "tests", "asyncapi", "check.js"), doc)
	cmd.Env = append(os.Environ(), "NODE_PATH="+filepath.Join(dir, "node_modules"))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("check.js: %v", err)
	}
	var got struct {
		Diagnostics []struct {
			Severity      int
			Code, Message string
			Path          string
		}
		Version  string
		Channels map[string]struct {
			Address  string
			Messages []struct {
				Name, SchemaFormat string
				Headers, Fields    []string
			}
		}
		Operations map[string]struct {
			Action   string
			Channels []string
		}
	}
	must(t, json.Unmarshal(out, &got))
	for _, d := range got.Diagnostics {
		if d.Severity == 0 {
			t.Errorf("parser error %s at %s: %s", d.Code, d.Path, d.Message)
		}
	}
	if got.Version != "3.0.0" {
		t.Errorf("AsyncAPI version %q, want 3.0.0", got.Version)
	}

	var c config.Config
	c.Defaults()
	k := c.Kafka
	want := map[string]struct {
		address, action string
		messages        []string
	}{
		"input":       {k.InputTopic, "receive", []string{"BatchLanded", "WriteComplete", "BatchCancelled"}},
		"requests":    {k.RequestsTopic, "receive", []string{"RetryRequested", "RevertRequested", "BatchCancelled"}},
		"results":     {k.ResultsTopic, "send", []string{"BranchReady", "BatchPublished", "BatchAborted", "BatchFailed", "BatchReverted", "RequestRefused", "UnattestedChange"}},
		"deadLetters": {k.DeadLetterTopic, "send", []string{"DeadLetter"}},
		"changelog":   {k.ChangelogTopic, "send", []string{"RunState"}},
	}
	if len(got.Channels) != len(want) {
		t.Errorf("parsed channels %v, want %d", slices.Sorted(maps.Keys(got.Channels)), len(want))
	}
	for id, w := range want {
		ch, ok := got.Channels[id]
		if !ok {
			t.Errorf("no channel %s", id)
			continue
		}
		if ch.Address != w.address {
			t.Errorf("channel %s address %q, want %q", id, ch.Address, w.address)
		}
		var names []string
		for _, m := range ch.Messages {
			names = append(names, m.Name)
			if slices.Contains(schemas.EventTypes(), m.Name) {
				// The Avro parser's view of the payload has the schema's fields.
				text, err := schemas.SchemaText(m.Name)
				must(t, err)
				var s struct{ Fields []struct{ Name string } }
				must(t, json.Unmarshal([]byte(text), &s))
				var fields []string
				for _, f := range s.Fields {
					fields = append(fields, f.Name)
				}
				if !strings.HasPrefix(m.SchemaFormat, "application/vnd.apache.avro") || !slices.Equal(m.Fields, fields) {
					t.Errorf("%s/%s: schema format %q, fields %v; want Avro with %v", id, m.Name, m.SchemaFormat, m.Fields, fields)
				}
			}
			if id == "results" {
				for _, h := range []string{"ce_id", "ce_type", "ce_source", "wap.event_id", "traceparent"} {
					if !slices.Contains(m.Headers, h) {
						t.Errorf("results/%s has no header %s: %v", m.Name, h, m.Headers)
					}
				}
			}
		}
		if !slices.Equal(names, w.messages) {
			t.Errorf("channel %s messages %v, want %v", id, names, w.messages)
		}
		found := false
		for _, op := range got.Operations {
			found = found || (op.Action == w.action && slices.Equal(op.Channels, []string{id}))
		}
		if !found {
			t.Errorf("no %s operation on channel %s: %v", w.action, id, got.Operations)
		}
	}
}
