package tests

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lakewap/lakewap/internal/devstack"
	"github.com/lakewap/lakewap/internal/harness"
	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/schemas"
)

// repoDir is the checkout root, seen from this package's directory (where
// go test runs its tests).
const repoDir = ".."

// interopPython returns the interpreter that has the pinned Python clients:
// $LAKEWAP_INTEROP_PYTHON, which test.sh sets from scripts/pyenv.sh (then
// the test must run), else the venv pyenv.sh fills by default, if it is there
// and current (else the test skips, with the returned reason).
func interopPython() (python string, skip error) {
	if p := os.Getenv("LAKEWAP_INTEROP_PYTHON"); p != "" {
		return p, nil
	}
	cache := os.Getenv("LAKEWAP_CACHE_DIR")
	if cache == "" {
		cache = filepath.Join(repoDir, ".cache")
	}
	req, err := os.ReadFile(filepath.Join(repoDir, "tests", "interop", "requirements.txt"))
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(req)
	venv := filepath.Join(cache, "pyvenv-"+hex.EncodeToString(sum[:])[:12])
	stamp, err := os.ReadFile(filepath.Join(venv, ".requirements.sha256"))
	switch {
	case errors.Is(err, os.ErrNotExist):
		return "", fmt.Errorf("no Python venv at %s", venv)
	case err != nil:
		return "", err
	case strings.TrimSpace(string(stamp)) != hex.EncodeToString(sum[:]):
		return "", fmt.Errorf("the Python venv at %s predates tests/interop/requirements.txt", venv)
	}
	return filepath.Abs(filepath.Join(venv, "bin", "python"))
}

// interopOutput is what tests/interop/interop.py prints.
type interopOutput struct {
	Clients  map[string]string `json:"clients"`
	Produced []struct {
		Type        string `json:"type"`
		BatchID     string `json:"batch_id"`
		Fingerprint string `json:"fingerprint"` // the 8 header bytes, hex
		Partition   *int   `json:"partition"`
	} `json:"produced"`
	Writes  []interopWrite `json:"writes"`
	Results []struct {
		Type        string         `json:"type"`
		BatchID     string         `json:"batch_id"`
		Partition   int            `json:"partition"`
		Offset      int64          `json:"offset"`
		Fingerprint string         `json:"fingerprint"` // the CRC-64-AVRO value, %016x
		Record      map[string]any `json:"record"`
		// CloudEvent is the message as the CloudEvents SDK's Kafka binding read it.
		CloudEvent struct {
			SpecVersion     string `json:"specversion"`
			ID              string `json:"id"`
			Type            string `json:"type"`
			Source          string `json:"source"`
			Subject         string `json:"subject"`
			DataContentType string `json:"datacontenttype"`
			Time            string `json:"time"`
		} `json:"cloudevent"`
	} `json:"results"`
	Undecodable []map[string]any `json:"undecodable"`
	Outcomes    map[string]struct {
		Type         string   `json:"type"`
		Branch       string   `json:"branch"`
		Reason       string   `json:"reason"`
		CommitID     string   `json:"commit_id"`
		BranchKept   *bool    `json:"branch_kept"`
		Passed       *bool    `json:"passed"`
		FailedChecks []string `json:"failed_checks"`
	} `json:"outcomes"`
	EndOffsets map[string]int64 `json:"results_end_offsets"`
}

type interopWrite struct {
	BatchID string `json:"batch_id"`
	Branch  string `json:"branch"`
	Path    string `json:"path"`
}

// TestInteropForeignClients drives the lakewap daemon (a process, with a
// YAML config) with clients nobody here wrote: a Python confluent-kafka
// producer sends the input events encoded with fastavro from the published
// schemas, lakefs-sdk uploads pyarrow's Parquet to the announced branch, and
// a Python consumer decodes every result event. The good batch must be
// published and the bad one aborted, and both sides must read the same
// events.
func TestInteropForeignClients(t *testing.T) {
	if testing.Short() {
		t.Skip("interop test runs the daemon and Python clients; skipped with -short")
	}
	python, err := interopPython()
	if err != nil {
		t.Skipf("interop test skipped: %v; scripts/pyenv.sh installs the pinned Python clients (./test.sh runs it)", err)
	}
	tmp := t.TempDir()
	stack := devstack.StartForTest(t, devstack.Options{WorkDir: tmp, Repository: "lake", Topics: harness.StackTopics()})
	cfg := harness.DemoConfig(stack, tmp)
	startProc(t, stack, writeCrashConfig(t, stack, cfg, "5m"), "")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	env, err := harness.New(ctx, stack, cfg, tmp)
	must(t, err)
	defer env.Close()

	const good, bad = "py-good-1", "py-bad-1"
	script, err := filepath.Abs(filepath.Join(repoDir, "tests", "interop", "interop.py"))
	must(t, err)
	schemaDir, err := filepath.Abs(filepath.Join(repoDir, "schemas"))
	must(t, err)
	cmd := exec.CommandContext(ctx, python, script,
		"--brokers", strings.Join(stack.KafkaBrokers, ","), "--lakefs", stack.LakeFSEndpoint,
		"--access-key-id", stack.AccessKeyID, "--repository", stack.Repository,
		"--topics", cfg.Kafka.InputTopic+","+cfg.Kafka.ResultsTopic, "--schemas", schemaDir,
		"--good", good, "--bad", bad, "--timeout", "180")
	cmd.Env = append(os.Environ(), "LAKEFS_SECRET_ACCESS_KEY="+stack.SecretAccessKey, "PYTHONDONTWRITEBYTECODE=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	started := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("interop.py: %v\nstderr:\n%s", err, tail(stderr.String(), 40))
	}
	t.Logf("interop.py finished in %s:\n%s", time.Since(started).Round(time.Millisecond), stderr.String())
	var out interopOutput
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("interop.py output is not its JSON: %v\n%s", err, stdout.String())
	}
	t.Logf("foreign clients: %v", out.Clients)

	// Upstream: lakewap's codec frames input events exactly as fastavro did.
	codec, err := schemas.NewCodec(schemas.Options{})
	must(t, err)
	for _, p := range out.Produced {
		var ev schemas.Event = schemas.BatchLanded{BatchID: p.BatchID, Dataset: "billing", ExpectedWrites: []string{"x"}}
		if p.Type == schemas.TypeWriteComplete {
			ev = schemas.WriteComplete{BatchID: p.BatchID, Dataset: "billing", Write: "x"}
		}
		v, err := codec.Encode(ctx, cfg.Kafka.InputTopic, ev)
		must(t, err)
		if want := hex.EncodeToString(v[2:10]); p.Fingerprint != want || p.Partition == nil {
			t.Errorf("Python sent %s of %s with fingerprint bytes %s (partition %v), lakewap's are %s",
				p.Type, p.BatchID, p.Fingerprint, p.Partition, want)
		}
	}
	if len(out.Produced) != 4 {
		t.Errorf("Python produced %d input events, want BatchLanded and WriteComplete for 2 batches", len(out.Produced))
	}

	// Downstream: every result event decoded, nothing skipped.
	if len(out.Undecodable) != 0 {
		t.Errorf("the Python consumer could not decode %d result events: %v", len(out.Undecodable), out.Undecodable)
	}
	var total int64
	for _, end := range out.EndOffsets {
		total += end
	}
	if int64(len(out.Results)) != total {
		t.Errorf("the Python consumer decoded %d result events, the topic holds %d", len(out.Results), total)
	}

	// Every result is a CloudEvent in binary mode, its attributes those of
	// the Avro record the SDK handed on as the event's data.
	for _, r := range out.Results {
		ce := r.CloudEvent
		when := r.Record["occurred_at"]
		if r.Type == schemas.TypeBatchPublished {
			when = r.Record["published_at"]
		}
		ceTime, err := time.Parse(time.RFC3339Nano, ce.Time)
		recTime, err2 := time.Parse(time.RFC3339Nano, fmt.Sprint(when))
		if ce.SpecVersion != "1.0" || ce.ID != r.Record["event_id"] || ce.Type != "io.lakewap.events."+r.Type ||
			ce.Source != "/lakewap/billing" || ce.Subject != "billing/"+r.BatchID || ce.DataContentType != "application/avro" ||
			err != nil || err2 != nil || !ceTime.Equal(recTime) {
			t.Errorf("%s of %s as a CloudEvent: %+v (time %v, record's %v %v)", r.Type, r.BatchID, ce, err, when, err2)
		}
	}

	// The outcomes, as the foreign consumer read them.
	gp, bd := out.Outcomes[good], out.Outcomes[bad]
	if gp.Type != schemas.TypeBatchPublished || gp.Passed == nil || !*gp.Passed || gp.CommitID == "" {
		t.Errorf("good batch, as Python decoded it: %+v; want BatchPublished with a passed report and a commit", gp)
	}
	if bd.Type != schemas.TypeBatchAborted || bd.Reason != schemas.ReasonAuditFailed ||
		!slices.Equal(bd.FailedChecks, []string{"billing_id_not_null"}) || bd.BranchKept == nil || !*bd.BranchKept {
		t.Errorf("bad batch, as Python decoded it: %+v; want BatchAborted audit_failed by billing_id_not_null, branch kept", bd)
	}

	// lakewap's own reading of the same topic agrees, event by event.
	for _, b := range []string{good, bad} {
		_, err := env.Watcher.Await(ctx, b, schemas.TypeBatchPublished, schemas.TypeBatchAborted, schemas.TypeBatchFailed)
		must(t, err)
		var goIDs, pyIDs []string
		for _, ev := range env.Watcher.All(b) {
			goIDs = append(goIDs, ev.EventType()+"/"+ev.ID())
			if br, ok := ev.(schemas.BranchReady); ok && !slices.ContainsFunc(out.Writes, func(w interopWrite) bool {
				return w.BatchID == b && w.Branch == br.Branch
			}) {
				t.Errorf("%s: BranchReady named %s, lakefs-sdk wrote to %+v", b, br.Branch, out.Writes)
			}
		}
		for _, r := range out.Results {
			if r.BatchID == b {
				pyIDs = append(pyIDs, fmt.Sprintf("%s/%v", r.Type, r.Record["event_id"]))
			}
		}
		slices.Sort(goIDs)
		slices.Sort(pyIDs)
		if !slices.Equal(goIDs, pyIDs) || len(goIDs) < 2 {
			t.Errorf("%s: result events decoded by lakewap %v, by Python %v", b, goIDs, pyIDs)
		}
	}

	// And the lake: main holds the good batch only.
	head, err := env.Lake.GetCommit(ctx, stack.Repository, "main")
	must(t, err)
	if head.ID != gp.CommitID || head.Metadata[pipeline.MetaBatchID] != good {
		t.Errorf("main is at %s (%s=%q), Python read BatchPublished with commit %s",
			head.ID, pipeline.MetaBatchID, head.Metadata[pipeline.MetaBatchID], gp.CommitID)
	}
	rows, err := env.CountRows(ctx, "main", "gold/billing_fact/", "")
	must(t, err)
	nulls, err := env.CountRows(ctx, "main", "gold/billing_fact/", "billing_id IS NULL")
	must(t, err)
	if rows != 1000 || nulls != 0 {
		t.Errorf("main has %d rows (%d NULL billing_id), want the good batch's 1000 (0)", rows, nulls)
	}
	kept, err := env.CountRows(ctx, bd.Branch, "gold/billing_fact/", "billing_id IS NULL")
	must(t, err)
	if kept != 40 {
		t.Errorf("aborted branch %s has %d NULL billing_id rows, want the 40 pyarrow wrote", bd.Branch, kept)
	}
}
