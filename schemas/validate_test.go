package schemas

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestValidate(t *testing.T) {
	now := ms("2024-05-01T12:00:00Z")
	known := func(d string) bool { return d == "orders" }
	landed := func(mod func(*BatchLanded)) Event {
		ev := BatchLanded{BatchID: "run_2024-05-01T00:00:00+00:00", Dataset: "orders", SourceRef: "main",
			ExpectedWrites: []string{"orders", "raw/order_lines"}, WriteDeadline: ptr(now.Add(time.Hour)),
			OccurredAt: now.Add(-time.Minute)}
		mod(&ev)
		return ev
	}
	written := func(mod func(*WriteComplete)) Event {
		ev := WriteComplete{BatchID: "b1", Dataset: "orders", Write: "orders",
			Paths: []string{"orders/part-0.parquet"}, RowCount: ptr(int64(3)), OccurredAt: now}
		mod(&ev)
		return ev
	}
	for _, tc := range []struct {
		name  string
		ev    Event
		field string // "" means valid
	}{
		{"valid landed", landed(func(*BatchLanded) {}), ""},
		{"valid landed without deadline", landed(func(e *BatchLanded) { e.WriteDeadline = nil }), ""},
		{"uuid batch id", landed(func(e *BatchLanded) { e.BatchID = "3f1c2a9e-8d1b-4c55-9b2a-0f6c1d2e3a4b" }), ""},
		{"batch id of 200 chars", landed(func(e *BatchLanded) { e.BatchID = strings.Repeat("a", 200) }), ""},
		{"empty batch id", landed(func(e *BatchLanded) { e.BatchID = "" }), "batch_id"},
		{"batch id of 201 chars", landed(func(e *BatchLanded) { e.BatchID = strings.Repeat("a", 201) }), "batch_id"},
		{"batch id with space", landed(func(e *BatchLanded) { e.BatchID = "a b" }), "batch_id"},
		{"batch id with slash", landed(func(e *BatchLanded) { e.BatchID = "2024/05/01" }), "batch_id"},
		{"batch id with non-ASCII", landed(func(e *BatchLanded) { e.BatchID = "lötte" }), "batch_id"},
		{"unknown dataset", landed(func(e *BatchLanded) { e.Dataset = "payments" }), "dataset"},
		{"empty dataset", landed(func(e *BatchLanded) { e.Dataset = "" }), "dataset"},
		{"zero occurred_at", landed(func(e *BatchLanded) { e.OccurredAt = time.Time{} }), "occurred_at"},
		{"epoch occurred_at (Avro 0)", landed(func(e *BatchLanded) { e.OccurredAt = time.UnixMilli(0) }), "occurred_at"},
		{"occurred_at 2 days ahead", landed(func(e *BatchLanded) { e.OccurredAt = now.Add(48 * time.Hour); e.WriteDeadline = nil }), "occurred_at"},
		{"occurred_at 23h ahead is clock skew", landed(func(e *BatchLanded) { e.OccurredAt = now.Add(23 * time.Hour); e.WriteDeadline = nil }), ""},
		{"no expected writes", landed(func(e *BatchLanded) { e.ExpectedWrites = nil }), "expected_writes"},
		{"duplicate expected write", landed(func(e *BatchLanded) { e.ExpectedWrites = []string{"a", "b", "a"} }), "expected_writes[2]"},
		{"empty write name", landed(func(e *BatchLanded) { e.ExpectedWrites = []string{"a", ""} }), "expected_writes[1]"},
		{"write name with ..", landed(func(e *BatchLanded) { e.ExpectedWrites = []string{"raw/../etc"} }), "expected_writes[0]"},
		{"write name with space", landed(func(e *BatchLanded) { e.ExpectedWrites = []string{"order lines"} }), "expected_writes[0]"},
		{"write name starting with dot", landed(func(e *BatchLanded) { e.ExpectedWrites = []string{".hidden"} }), "expected_writes[0]"},
		{"deadline before occurred_at", landed(func(e *BatchLanded) { e.WriteDeadline = ptr(e.OccurredAt.Add(-time.Second)) }), "write_deadline"},
		{"deadline equal to occurred_at", landed(func(e *BatchLanded) { e.WriteDeadline = ptr(e.OccurredAt) }), "write_deadline"},
		{"source ref with space", landed(func(e *BatchLanded) { e.SourceRef = "ma in" }), "source_ref"},
		{"valid write", written(func(*WriteComplete) {}), ""},
		{"valid retry request", RetryRequested{RequestID: "r1", BatchID: "b1", Dataset: "orders", RequestedBy: "ana", OccurredAt: now}, ""},
		{"retry request without id", RetryRequested{BatchID: "b1", Dataset: "orders", OccurredAt: now}, "request_id"},
		{"retry request of an unknown dataset", RetryRequested{RequestID: "r1", BatchID: "b1", Dataset: "payments", OccurredAt: now}, "dataset"},
		{"revert request without reason", RevertRequested{RequestID: "r1", BatchID: "b1", Dataset: "orders", Reason: " ", OccurredAt: now}, "reason"},
		{"revert request id too long", RevertRequested{RequestID: strings.Repeat("r", 129), BatchID: "b1", Dataset: "orders", Reason: "x", OccurredAt: now}, "request_id"},
		{"operator cancel without request id", BatchCancelled{BatchID: "b1", Dataset: "orders", RequestedBy: "ana", OccurredAt: now}, "request_id"},
		{"plain cancel", BatchCancelled{BatchID: "b1", Dataset: "orders", OccurredAt: now}, ""},
		{"write without name", written(func(e *WriteComplete) { e.Write = "" }), "write"},
		{"absolute path", written(func(e *WriteComplete) { e.Paths = []string{"/etc/passwd"} }), "paths[0]"},
		{"escaping path", written(func(e *WriteComplete) { e.Paths = []string{"ok", "a/../../b"} }), "paths[1]"},
		{"negative rows", written(func(e *WriteComplete) { e.RowCount = ptr(int64(-1)) }), "row_count"},
		{"valid cancel", BatchCancelled{BatchID: "b1", Dataset: "orders", OccurredAt: now}, ""},
		{"cancel without time", BatchCancelled{BatchID: "b1", Dataset: "orders"}, "occurred_at"},
		{"abort with unknown reason", BatchAborted{BatchID: "b1", Dataset: "orders", Reason: "bored", OccurredAt: now}, "reason"},
		// The runner aborts a batch that strays from its tables with this reason.
		{"abort outside tables", BatchAborted{BatchID: "b1", Dataset: "orders", Reason: ReasonOutsideTables, OccurredAt: now}, ""},
		{"abort over too many runs", BatchAborted{BatchID: "b1", Dataset: "orders", Reason: ReasonTooManyRuns, OccurredAt: now}, ""},
		{"published without commit", BatchPublished{BatchID: "b1", Dataset: "orders", LandedAt: now, PublishedAt: now}, "commit_id"},
		{"nil event", nil, "event"},
		// Bounds: nothing a producer sends may grow what lakewap stores.
		{"deadline in year 10000", landed(func(e *BatchLanded) { e.WriteDeadline = ptr(time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)) }), "write_deadline"},
		{"deadline Long.MAX_VALUE ms", landed(func(e *BatchLanded) { e.WriteDeadline = ptr(time.UnixMilli(1<<63 - 1)) }), "write_deadline"},
		{"deadline past the horizon", landed(func(e *BatchLanded) { e.WriteDeadline = ptr(now.Add(DefaultMaxDeadlineHorizon + time.Minute)) }), "write_deadline"},
		{"deadline at the horizon", landed(func(e *BatchLanded) { e.WriteDeadline = ptr(now.Add(DefaultMaxDeadlineHorizon)) }), ""},
		{"257 expected writes", landed(func(e *BatchLanded) { e.ExpectedWrites = names(MaxExpectedWrites + 1) }), "expected_writes"},
		{"256 expected writes", landed(func(e *BatchLanded) { e.ExpectedWrites = names(MaxExpectedWrites) }), ""},
		{"dataset not UTF-8", landed(func(e *BatchLanded) { e.Dataset = "or\xffders" }), "dataset"},
		{"producer not UTF-8", landed(func(e *BatchLanded) { e.Producer = "\xc3" }), "producer"},
		{"long producer", landed(func(e *BatchLanded) { e.Producer = strings.Repeat("p", MaxTextLen+1) }), "producer"},
		{"long source ref", landed(func(e *BatchLanded) { e.SourceRef = strings.Repeat("r", MaxRefLen+1) }), "source_ref"},
		{"long attribute value", landed(func(e *BatchLanded) { e.Attributes = map[string]string{"k": strings.Repeat("v", MaxTextLen+1)} }), "attributes.k"},
		{"too many attributes", landed(func(e *BatchLanded) { e.Attributes = attrs(MaxAttributes + 1) }), "attributes"},
		{"too many paths", written(func(e *WriteComplete) { e.Paths = names(MaxPaths + 1) }), "paths"},
		{"long path", written(func(e *WriteComplete) { e.Paths = []string{strings.Repeat("p", MaxPathLen+1)} }), "paths[0]"},
		{"path not UTF-8", written(func(e *WriteComplete) { e.Paths = []string{"a/\xff"} }), "paths[0]"},
		{"long cancel reason", BatchCancelled{BatchID: "b1", Dataset: "orders", OccurredAt: now, Reason: strings.Repeat("x", MaxTextLen+1)}, "reason"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Validate(tc.ev, known, now)
			if tc.field == "" {
				if err != nil {
					t.Fatalf("want valid, got %v", err)
				}
				return
			}
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("want a ValidationError on %s, got %v", tc.field, err)
			}
			if ve.Field != tc.field {
				t.Fatalf("first problem is on %q (%v), want %q", ve.Field, err, tc.field)
			}
		})
	}
}

func names(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("w%d", i)
	}
	return out
}

func attrs(n int) map[string]string {
	out := map[string]string{}
	for i := 0; i < n; i++ {
		out[fmt.Sprintf("k%d", i)] = "v"
	}
	return out
}

// TestValidateSummarizesHostileInput: 65,536 bad expected writes (the
// issue's 131 KB event, whose error was 5.8 MB) and long bad values give an
// error of a few hundred bytes: the first problems and a count.
func TestValidateSummarizesHostileInput(t *testing.T) {
	now := ms("2024-05-01T12:00:00Z")
	bad := make([]string, MaxExpectedWrites)
	for i := range bad {
		bad[i] = strings.Repeat("x", 100) + " " + strings.Repeat("y", 1000)
	}
	err := Validate(BatchLanded{BatchID: "b1", Dataset: strings.Repeat("d", 120), ExpectedWrites: bad, OccurredAt: now,
		WriteDeadline: ptr(time.UnixMilli(1<<63 - 1))}, nil, now)
	if err == nil {
		t.Fatal("want an error")
	}
	msg := err.Error()
	if len(msg) > 2048 {
		t.Errorf("error has %d bytes, want at most 2048: %.300s", len(msg), msg)
	}
	if want := fmt.Sprintf("and %d more problem(s)", MaxExpectedWrites+1-MaxProblems); !strings.Contains(msg, want) {
		t.Errorf("error %q does not say %q", msg, want)
	}
	if strings.Count(msg, "invalid event:") != MaxProblems+1 {
		t.Errorf("error lists %d problems, want %d and the count: %s", strings.Count(msg, "invalid event:"), MaxProblems, msg)
	}
	// Many names, each fine alone: refused by count, in one short problem.
	err = Validate(BatchLanded{BatchID: "b1", Dataset: "d", ExpectedWrites: names(65536), OccurredAt: now}, nil, now)
	if err == nil || len(err.Error()) > 200 {
		t.Errorf("65,536 expected writes: %v", err)
	}
	// A custom horizon.
	rules := Rules{Now: now, MaxDeadlineHorizon: time.Hour}
	if err := rules.Validate(BatchLanded{BatchID: "b1", Dataset: "d", ExpectedWrites: []string{"a"}, OccurredAt: now,
		WriteDeadline: ptr(now.Add(2 * time.Hour))}); err == nil || !strings.Contains(err.Error(), "maximum deadline horizon") {
		t.Errorf("deadline 2h ahead with a 1h horizon: %v", err)
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	err := Validate(BatchLanded{BatchID: "", Dataset: ""}, nil, time.Now())
	var fields []string
	var walk func(error)
	walk = func(err error) {
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				walk(e)
			}
			return
		}
		var ve *ValidationError
		if errors.As(err, &ve) {
			fields = append(fields, ve.Field)
		}
	}
	walk(err)
	if want := "batch_id dataset occurred_at expected_writes"; strings.Join(fields, " ") != want {
		t.Fatalf("problems on %v, want %s (%v)", fields, want, err)
	}
}

func TestValidateAcceptsAllSamples(t *testing.T) {
	now := ms("2024-05-01T12:00:00Z")
	for _, ev := range sampleEvents() {
		if err := Validate(ev, func(string) bool { return true }, now); err != nil {
			t.Errorf("%s: %v", ev.EventType(), err)
		}
	}
}

var lakeFSBranch = regexp.MustCompile(`^\w[-\w]*$`)

func TestBranchNameExamples(t *testing.T) {
	for _, tc := range []struct{ dataset, batch, want string }{
		{"orders", "b1", "wap-orders-b1"},
		{"orders", "2024-05-01_run-3", "wap-orders-2024-05-01_run-3"},
		// Lossy mappings get a hash after "--", which plain names never contain.
		{"orders", "2024-05-01T00:00:00Z", "wap-orders-2024-05-01T00_00_00Z--"},
		{"web-logs", "b1", "wap-web_logs-b1--"},
		{"orders", "a--b", "wap-orders-a--b--"},
		{"orders", "-b", "wap-orders--b--"},
	} {
		got := BranchName(tc.dataset, tc.batch)
		if !strings.HasPrefix(got, tc.want) || (!strings.HasSuffix(tc.want, "--") && got != tc.want) {
			t.Errorf("BranchName(%q, %q) = %q, want %q...", tc.dataset, tc.batch, got, tc.want)
		}
		if strings.HasSuffix(tc.want, "--") && len(got) != len(tc.want)+24 {
			t.Errorf("BranchName(%q, %q) = %q: want a 24-hex-digit suffix", tc.dataset, tc.batch, got)
		}
	}
}

// randomID draws ids that stress the mapping: allowed and forbidden
// characters, dashes, non-ASCII, long runs.
func randomID(r *rand.Rand) string {
	const alphabet = "abcXYZ019_-.:+@/ é--"
	n := r.IntN(40)
	if r.IntN(10) == 0 {
		n = 150 + r.IntN(100)
	}
	var b strings.Builder
	for range n {
		runes := []rune(alphabet)
		b.WriteRune(runes[r.IntN(len(runes))])
	}
	return b.String()
}

func TestBranchNameProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	seen := map[string]string{}
	datasets := []string{"orders", "web-logs", "a", "a_b", strings.Repeat("d", 100)}
	for i := range 20000 {
		ds := datasets[i%len(datasets)]
		if i%7 == 0 {
			ds = randomID(r)
		}
		id := randomID(r)
		if i%3 == 0 {
			// Near-collisions: same id in other datasets, ids differing only in
			// forbidden characters.
			id = strings.NewReplacer(".", "_", ":", "_").Replace(id)
		}
		name := BranchName(ds, id)
		if !lakeFSBranch.MatchString(name) {
			t.Fatalf("BranchName(%q, %q) = %q does not match lakeFS ^\\w[-\\w]*$", ds, id, name)
		}
		if len(name) > MaxBranchNameLen {
			t.Fatalf("BranchName(%q, %q) has %d > %d characters", ds, id, len(name), MaxBranchNameLen)
		}
		if again := BranchName(ds, id); again != name {
			t.Fatalf("not deterministic: %q then %q", name, again)
		}
		key := fmt.Sprintf("%q/%q", ds, id)
		if other, ok := seen[name]; ok && other != key {
			t.Fatalf("%s and %s both map to %q", other, key, name)
		}
		seen[name] = key
	}
	// Adversarial pairs for the plain form: the dataset/batch split.
	pairs := [][2]string{{"a-b", "c"}, {"a", "b-c"}, {"a_b", "c"}, {"a", "b_c"}, {"a", "b--c"}, {"a-", "b"}}
	names := map[string]bool{}
	for _, p := range pairs {
		names[BranchName(p[0], p[1])] = true
	}
	if len(names) != len(pairs) {
		t.Fatalf("adversarial pairs collide: %v", names)
	}
}

// Every event names its batch and dataset, and a result event its id,
// without a type switch.
func TestEventIDAndDataset(t *testing.T) {
	for _, ev := range []Event{
		BatchLanded{BatchID: "b", Dataset: "d"}, WriteComplete{BatchID: "b", Dataset: "d"},
		BatchCancelled{BatchID: "b", Dataset: "d"},
		RetryRequested{RequestID: "r", BatchID: "b", Dataset: "d"}, RevertRequested{RequestID: "r", BatchID: "b", Dataset: "d"},
		BranchReady{EventID: "e", BatchID: "b", Dataset: "d"}, BatchPublished{EventID: "e", BatchID: "b", Dataset: "d"},
		BatchAborted{EventID: "e", BatchID: "b", Dataset: "d"}, BatchFailed{EventID: "e", BatchID: "b", Dataset: "d"},
		BatchReverted{EventID: "e", BatchID: "b", Dataset: "d"}, RequestRefused{EventID: "e", RequestID: "r", BatchID: "b", Dataset: "d"},
		UnattestedChange{EventID: "e", BatchID: "b", Dataset: "d"},
	} {
		wantID := "e"
		if strings.HasSuffix(ev.EventType(), "Requested") || IsInput(ev) {
			wantID = "" // inputs carry no event id
		}
		if ev.Batch() != "b" || ev.DatasetName() != "d" || ev.ID() != wantID {
			t.Errorf("%s: batch %q dataset %q id %q", ev.EventType(), ev.Batch(), ev.DatasetName(), ev.ID())
		}
	}
	if n := len(EventTypes()); n != 12 {
		t.Errorf("%d event types: add the new ones here", n)
	}
}
