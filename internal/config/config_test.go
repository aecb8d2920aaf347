package config

import (
	"os"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/lakewap/lakewap/audit/blockstore"
	"github.com/lakewap/lakewap/pipeline"
)

const good = `
kafka:
  brokers: ["127.0.0.1:9092"]
  sasl: {mechanism: SCRAM-SHA-512, username: lakewap, password: "${KAFKA_PASSWORD}"}
lakefs:
  endpoint: http://lakefs:8000
  access_key_id: ${LAKEFS_KEY}
  secret_access_key: ${LAKEFS_SECRET:-fallback}
# a commented example needs no variable: ${NOT_SET_ANYWHERE}
notify:
  console: true
  routes:
    - {sink: console, on: [aborted, failed], datasets: [billing]}
datasets:
  billing:
    repository: lake
    write_timeout: 2h
    tables:
      - {name: billing_fact, path: gold/billing_fact/}
    checks:
      - {name: id_not_null, kind: not_null, table: billing_fact, columns: [billing_id]}
`

func env(vars map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
}

func TestGoodConfigLoads(t *testing.T) {
	c, err := ParseIn([]byte(good), env(map[string]string{"KAFKA_PASSWORD": "pw", "LAKEFS_KEY": "AKIA"}), "")
	if err != nil {
		t.Fatal(err)
	}
	if c.Kafka.SASL.Password != "pw" || c.LakeFS.AccessKeyID != "AKIA" || c.LakeFS.SecretAccessKey != "fallback" {
		t.Errorf("expansion: sasl %q key %q secret %q", c.Kafka.SASL.Password, c.LakeFS.AccessKeyID, c.LakeFS.SecretAccessKey)
	}
	if c.Kafka.InputTopic != "wap.events" || c.Kafka.GroupID != "lakewap" || c.Datasets["billing"].Target != "main" {
		t.Errorf("defaults not applied: %+v", c.Kafka)
	}
	if d := c.Datasets["billing"]; d.WriteTimeout.Std() != 2*time.Hour || !d.Keep() || len(d.Checks) != 1 {
		t.Errorf("dataset = %+v", d)
	}
}

// Defaults are resolved once, at load: what the parts read is the value.
func TestLoadedConfigCarriesResolvedValues(t *testing.T) {
	c, err := ParseIn([]byte(strings.Replace(good, "notify:", "runner: {retry_budget: 3m, max_open_runs: -1}\nnotify:", 1)),
		env(map[string]string{"KAFKA_PASSWORD": "pw", "LAKEFS_KEY": "AKIA"}), "")
	if err != nil {
		t.Fatal(err)
	}
	r := c.Runner
	if r.StepTimeout.Std() != 5*time.Minute || r.Grace.Std() != 10*time.Second || r.MaxInFlight != 16 || r.PendingTTL.Std() != time.Hour ||
		r.MaxRunBytes != 256<<10 || r.MaxDeadlineHorizon.Std() != 7*24*time.Hour || c.LakeFS.Timeout.Std() != 30*time.Second ||
		c.HTTP.WebhookAuditTimeout.Std() != 25*time.Second || c.HTTP.WebhookConcurrency != 2 || c.Kafka.CommitInterval.Std() != time.Second {
		t.Errorf("defaults not resolved: runner %+v lakefs %+v http %+v", r, c.LakeFS, c.HTTP)
	}
	p := c.Policy()
	if p.RetryBudget != 3*time.Minute || p.MaxOpenRuns != 0 || p.NotifyRetries != 60 || p.Validate() != nil {
		t.Errorf("policy %+v (validate: %v): want the configured budget, no open-run limit, the rest default", p, p.Validate())
	}
	if s, ok := c.DatasetSpec("billing"); !ok || s.WriteTimeout != 2*time.Hour || s.Target != "main" || !s.KeepBranch || s.MaxWriteTimeout != 0 {
		t.Errorf("dataset spec %+v %v", s, ok)
	}
	if d := pipeline.DefaultPolicy; p.MaxPendingRuns != d.MaxPendingRuns || p.MaxFinishedRuns != d.MaxFinishedRuns || p.RejectedRetention != d.RejectedRetention ||
		p.MaxAuditAttempts != 3 || c.Audit.MaxAttempts != 3 {
		t.Errorf("policy %+v: want the default bounds of what producers can make it store", p)
	}
	// The bounds of what producers can make lakewap store reach the policy
	// and the dataset spec (a cap the daemon never hands on caps nothing).
	bounded, err := ParseIn([]byte(strings.Replace(strings.Replace(good, "notify:",
		"runner: {max_pending_runs: 7, max_finished_runs: -1, rejected_retention: 2m}\naudit: {max_attempts: 5}\nnotify:", 1),
		"write_timeout: 2h", "write_timeout: 2h\n    max_write_timeout: 6h", 1)),
		env(map[string]string{"KAFKA_PASSWORD": "pw", "LAKEFS_KEY": "AKIA"}), "")
	if err != nil {
		t.Fatal(err)
	}
	if p := bounded.Policy(); p.MaxPendingRuns != 7 || p.MaxFinishedRuns != 0 || p.RejectedRetention != 2*time.Minute || p.MaxAuditAttempts != 5 {
		t.Errorf("bounded policy %+v: want 7 pending, no finished limit, 2m rejected retention, 5 audit attempts", p)
	}
	if s, _ := bounded.DatasetSpec("billing"); s.MaxWriteTimeout != 6*time.Hour {
		t.Errorf("dataset spec max write timeout %s, want 6h", s.MaxWriteTimeout)
	}
	if got, want := c.MaxRunAge(), 7*24*time.Hour+time.Hour+3*(3*time.Minute+5*time.Minute); got != want {
		t.Errorf("max run age %s, want %s", got, want)
	}
}

func TestConfigMistakesNameTheField(t *testing.T) {
	vars := env(map[string]string{"KAFKA_PASSWORD": "pw", "LAKEFS_KEY": "AKIA"})
	tests := []struct {
		name, from, to, want string
	}{
		{"unknown key", "  console: true", "  consol: true", "field consol not found"},
		{"missing env var", "${LAKEFS_KEY}", "${LAKEFS_KEY_TYPO}", "LAKEFS_KEY_TYPO (line 7)"},
		{"no brokers", `brokers: ["127.0.0.1:9092"]`, `brokers: []`, "kafka.brokers: at least one broker"},
		{"broker without port", `brokers: ["127.0.0.1:9092"]`, `brokers: ["kafka"]`, `kafka.brokers[0]: "kafka" is not host:port`},
		{"same topic twice", "  brokers:", "  results_topic: wap.events\n  brokers:", "kafka.results_topic: topic \"wap.events\" is also kafka.input_topic"},
		{"bad sasl mechanism", "SCRAM-SHA-512", "SCRAM-MD5", `kafka.sasl.mechanism: "SCRAM-MD5" is not one of`},
		{"endpoint without scheme", "http://lakefs:8000", "lakefs:8000", `lakefs.endpoint: "lakefs:8000" must start with http://`},
		{"write deadline cap below the timeout", "write_timeout: 2h", "write_timeout: 2h\n    max_write_timeout: 1h", "datasets.billing.max_write_timeout: 1h0m0s is shorter than write_timeout"},
		{"runs token is the webhook's", "notify:", "http: {listen: \":9090\", webhook_token: same, runs_token: same}\nnotify:", "http.runs_token: is the webhook's token"},
		{"results message size below an unshrinkable event", "  brokers:", "  results_max_message_bytes: 16384\n  brokers:", "kafka.results_max_message_bytes: 16384 is less than 65536"},
		{"pending bound", "notify:", "runner: {max_pending_runs: -2}\nnotify:", "runner.max_pending_runs: must be -1"},
		{"open bytes below a run record", "notify:", "runner: {max_open_bytes: 1000}\nnotify:",
			"runner.max_open_bytes: 1000 must be -1 (no limit), 0 (default 67108864) or at least runner.max_run_bytes 262144"},
		{"finished bytes below -1", "notify:", "runner: {max_finished_bytes: -2}\nnotify:", "runner.max_finished_bytes: -2 must be -1 (no limit)"},
		{"best-effort wait over Slack's budget", "  console: true", "  console: true\n  best_effort_wait: 1m",
			"notify.best_effort_wait: 1m0s must be between 0 (default 1s) and 5s"},
		{"best-effort wait negative", "  console: true", "  console: true\n  best_effort_wait: -1s", "notify.best_effort_wait: -1s must be between"},
		{"slack budget too short", "  console: true", "  console: true\n  slack_budget: 500ms",
			"notify.slack_budget: 500ms must be between 1s and 15s (0 keeps the default 5s)"},
		{"slack budget past the stop margin", "  console: true", "  console: true\n  slack_budget: 1m",
			"notify.slack_budget: 1m0s must be between 1s and 15s"},
		{"best-effort wait over a shorter slack budget", "  console: true", "  console: true\n  slack_budget: 2s\n  best_effort_wait: 3s",
			"notify.best_effort_wait: 3s must be between 0 (default 1s) and 2s"},
		{"table no check reads", "      - {name: billing_fact, path: gold/billing_fact/}", "      - {name: billing_fact, path: gold/billing_fact/}\n      - {name: billing_dim, path: gold/billing_dim/}",
			`datasets.billing.tables[1]: no check reads table "billing_dim", so nothing a batch writes under gold/billing_dim/ would be audited`},
		{"no audit attempt", "notify:", "audit: {max_attempts: -1}\nnotify:", "audit.max_attempts: -1 must be at least 1 (0 keeps the default 3)"},
		{"bad duration", "write_timeout: 2h", "write_timeout: two hours", `"two hours" is not a duration`},
		{"bad log format", "notify:", "log: {format: xml}\nnotify:", `log.format: "xml" is not json or text`},
		{"route to unknown sink", "sink: console", "sink: pager", `notify.routes[0].sink: "pager" is not`},
		{"route on unknown state", "on: [aborted, failed]", "on: [aborted, exploded]", `notify.routes[0].on[1]: "exploded"`},
		{"route for unknown dataset", "datasets: [billing]}", "datasets: [biling]}", `notify.routes[0].datasets[0]: unknown dataset "biling"`},
		{"route channel without a slack bot", "datasets: [billing]}", "datasets: [billing], channel: C0BILLING}", `notify.routes[0].channel: a route's channel needs sink slack with a bot token`},
		{"dataset without repository", "repository: lake", "repository: ''", "datasets.billing.repository: required"},
		{"unknown check kind", "kind: not_null", "kind: nul", "datasets.billing.checks[0].kind"},
		{"check on unknown table", "table: billing_fact, columns", "table: billing, columns", "datasets.billing.checks[0].table"},
		{"absolute allowed path", "write_timeout: 2h", "write_timeout: 2h\n    allowed_paths: [/etc/]", `datasets.billing.allowed_paths[0]: "/etc/" must be a non-empty path prefix`},
		// Review 48: lakeFS reads a merge's pre-merge actions from its
		// source, the batch: a batch allowed to change them chooses the hook
		// of its own merge and, once published, of every later one.
		{"allowed path over the lakeFS actions", "write_timeout: 2h", "write_timeout: 2h\n    allowed_paths: [_]",
			`datasets.billing.allowed_paths[0]: "_" holds _lakefs_actions/, where lakeFS reads the pre-merge actions of a merge from its source`},
		{"table under the lakeFS actions", "path: gold/billing_fact/}", "path: _lakefs_actions/billing/}",
			`datasets.billing.tables[0].path: "_lakefs_actions/billing/" holds _lakefs_actions/, where lakeFS reads the pre-merge actions of a merge from its source`},
		{"target named like a commit id", "write_timeout: 2h", "write_timeout: 2h\n    target: " + strings.Repeat("ab", 32), `datasets.billing.target: "` + strings.Repeat("ab", 32) + `" is 64 hex digits`},
		{"target not a branch name", "write_timeout: 2h", "write_timeout: 2h\n    target: main~1", `datasets.billing.target: "main~1" is not a lakeFS branch name`},
		{"empty source ref", "write_timeout: 2h", "write_timeout: 2h\n    source_refs: ['']", `datasets.billing.source_refs[0]: must not be empty`},
		{"negative step timeout", "notify:", "runner: {step_timeout: -1m}\nnotify:", "runner.step_timeout: must not be negative"},
		{"negative lakefs timeout", "  endpoint: http://lakefs:8000", "  endpoint: http://lakefs:8000\n  timeout: -5s", "lakefs.timeout: must not be negative"},
		{"lineage on two transports", "notify:", "lineage: {url: http://marquez:5000/api/v1/lineage, kafka: {topic: openlineage}}\nnotify:", "lineage.kafka.topic: set lineage.url or lineage.kafka.topic, not both"},
		{"lineage topic not a topic name", "notify:", "lineage: {kafka: {topic: 'open lineage'}}\nnotify:", `lineage.kafka.topic: "open lineage" is not a Kafka topic name`},
		{"lineage event budget over a message", "notify:", "lineage: {kafka: {topic: openlineage}, max_event_bytes: 2000000}\nnotify:", "lineage.max_event_bytes: 2000000 must be between"},
		{"tracing protocol", "notify:", "tracing: {otlp_endpoint: 'collector:4317', protocol: thrift}\nnotify:", `tracing.protocol: "thrift" is not grpc or http`},
		{"tracing sample ratio", "notify:", "tracing: {otlp_endpoint: 'collector:4317', sample_ratio: 1.5}\nnotify:", "tracing.sample_ratio: 1.5 must be between 0 and 1"},
		{"tracing http endpoint not a URL", "notify:", "tracing: {otlp_endpoint: 'collector:4318', protocol: http}\nnotify:", `tracing.otlp_endpoint: "collector:4318" must be a URL`},
		{"tracing keys without endpoint", "notify:", "tracing: {protocol: http}\nnotify:", "tracing.otlp_endpoint: required when other tracing keys are set"},
		{"blockstore of unknown type", "notify:", "audit: {blockstore: {type: ftp, path: /tmp}}\nnotify:", `audit.blockstore.type: "ftp" is not local or s3`},
		{"s3 blockstore without region", "notify:", "audit: {blockstore: {type: s3, access_key_id: AKID, secret_access_key: s}}\nnotify:", "audit.blockstore.region: required with type s3"},
		{"s3 blockstore without secret", "notify:", "audit: {blockstore: {type: s3, region: eu-west-1, access_key_id: AKID}}\nnotify:", "audit.blockstore.secret_access_key: required with type s3"},
		{"s3 blockstore secret file missing", "notify:", "audit: {blockstore: {type: s3, region: eu-west-1, access_key_id: AKID, secret_access_key_file: /nonexistent/s}}\nnotify:", "audit.blockstore.secret_access_key_file: reading secret file /nonexistent/s"},
		{"s3 blockstore endpoint without scheme", "notify:", "audit: {blockstore: {type: s3, endpoint: 'minio:9000', region: us-east-1, access_key_id: AKID, secret_access_key: s}}\nnotify:", `audit.blockstore.endpoint: "minio:9000" must start with http://`},
		{"s3 blockstore with a path", "notify:", "audit: {blockstore: {type: s3, path: /data, region: us-east-1, access_key_id: AKID, secret_access_key: s}}\nnotify:", "audit.blockstore.path: is for type local"},
		{"local blockstore with a region", "notify:", "audit: {blockstore: {type: local, path: /tmp, region: us-east-1}}\nnotify:", "audit.blockstore.type: endpoint, region, access_key_id, secret_access_key(_file) and force_path_style are for type s3"},
		{"local blockstore without path", "notify:", "audit: {blockstore: {type: local}}\nnotify:", `audit.blockstore.path: "" must be lakeFS's blockstore.local.path, an absolute path`},
		{"local blockstore path relative", "notify:", "audit: {blockstore: {type: local, path: data/lakefs}}\nnotify:", `audit.blockstore.path: "data/lakefs" must be lakeFS's blockstore.local.path, an absolute path`},
		{"local blockstore path missing", "notify:", "audit: {blockstore: {type: local, path: /nonexistent/lakefs}}\nnotify:", "audit.blockstore.path: /nonexistent/lakefs is not a directory lakewap can read"},
		{"blockstore timeout negative", "notify:", "audit: {blockstore: {type: local, path: /tmp, timeout: -1s}}\nnotify:", "audit.blockstore.timeout: must not be negative"},
		{"slack token without channel", "  console: true", "  console: true\n  slack: {token: xoxb-1}", "notify.slack.channel: required"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := strings.Replace(good, tc.from, tc.to, 1)
			if src == good {
				t.Fatalf("mutation %q not applied", tc.from)
			}
			_, err := ParseIn([]byte(src), vars, "")
			if err == nil {
				t.Fatal("config with a mistake loaded")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not contain %q", err, tc.want)
			}
		})
	}
}

// audit.blockstore reaches the audit engine as a reader of the stored
// sizes, with its timeout; without it the engine has none.
func TestBlockstoreReachesTheAudit(t *testing.T) {
	vars := env(map[string]string{"KAFKA_PASSWORD": "pw", "LAKEFS_KEY": "AKIA"})
	dir := t.TempDir()
	c, err := ParseIn([]byte(strings.Replace(good, "notify:", "audit: {blockstore: {type: local, path: "+dir+", timeout: 3s}}\nnotify:", 1)), vars, "")
	if err != nil {
		t.Fatal(err)
	}
	o := c.AuditOptions(nil, nil)
	if o.Blockstore != (blockstore.Local{Root: dir}) || o.StatTimeout != 3*time.Second {
		t.Errorf("audit options: blockstore %#v, stat timeout %s; want the local blockstore at %s and 3s", o.Blockstore, o.StatTimeout, dir)
	}
	c, err = ParseIn([]byte(strings.Replace(good, "notify:", "audit: {blockstore: {type: s3, endpoint: 'http://minio:9000', region: us-east-1, access_key_id: AKID, secret_access_key: s, force_path_style: true}}\nnotify:", 1)), vars, "")
	if err != nil {
		t.Fatal(err)
	}
	o = c.AuditOptions(nil, nil)
	if s3, ok := o.Blockstore.(blockstore.S3); !ok || s3.Endpoint != "http://minio:9000" || s3.Region != "us-east-1" || s3.AccessKeyID != "AKID" ||
		s3.SecretAccessKey != "s" || !s3.PathStyle || o.StatTimeout != 0 {
		t.Errorf("audit options: blockstore %#v, stat timeout %s; want the s3 blockstore as configured and the engine's default timeout", o.Blockstore, o.StatTimeout)
	}
	c, err = ParseIn([]byte(good), vars, "")
	if err != nil {
		t.Fatal(err)
	}
	if o := c.AuditOptions(nil, nil); o.Blockstore != nil {
		t.Errorf("without audit.blockstore the audit has blockstore %#v", o.Blockstore)
	}
}

func TestEveryErrorIsReported(t *testing.T) {
	src := strings.NewReplacer(`brokers: ["127.0.0.1:9092"]`, `brokers: []`, "http://lakefs:8000", "lakefs:8000", "kind: not_null", "kind: nul").Replace(good)
	_, err := ParseIn([]byte(src), env(map[string]string{"KAFKA_PASSWORD": "pw", "LAKEFS_KEY": "AKIA"}), "")
	errs, ok := err.(Errors)
	if !ok || len(errs) != 3 {
		t.Fatalf("got %v, want three errors", err)
	}
}

// The webhook token is read once, by the config: from its file when it has
// one; an empty one names its field; the other modes have none.
func TestWebhookToken(t *testing.T) {
	dir := t.TempDir()
	file, empty := dir+"/token", dir+"/empty"
	if err := os.WriteFile(file, []byte(" tok \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(empty, []byte(" \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		h         HTTP
		want, err string
	}{
		{HTTP{WebhookToken: "inline"}, "inline", ""},
		{HTTP{WebhookTokenFile: file}, "tok", ""},
		{HTTP{WebhookTokenFile: empty}, "", "http.webhook_token_file: " + empty + " is empty"},
		{HTTP{WebhookToken: "  "}, "", "http.webhook_token: the token is empty"},
		{HTTP{WebhookTokenFile: dir + "/missing"}, "", "http.webhook_token_file: reading secret file"},
		{HTTP{Webhook: WebhookOpen}, "", ""},
		{HTTP{Webhook: WebhookOff}, "", ""},
	} {
		got, err := c.h.Token()
		if got != c.want || (c.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%+v: %q, %v; want %q, %q", c.h, got, err, c.want, c.err)
		}
	}
}

// A loaded config written back as YAML (what lakewap demo -keep and the
// tests write) loads again: a resolved empty value must not read as set.
// tracing.headers written as {} failed with "tracing.otlp_endpoint:
// required when other tracing keys are set".
func TestLoadedConfigWrittenBackLoads(t *testing.T) {
	vars := env(map[string]string{"KAFKA_PASSWORD": "pw", "LAKEFS_KEY": "AKIA"})
	c, err := ParseIn([]byte(good), vars, "")
	if err != nil {
		t.Fatal(err)
	}
	c.Tracing.Headers = map[string]string{} // as a caller may leave it
	out, err := yaml.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParseIn(out, vars, ""); err != nil {
		t.Errorf("the written config does not load: %v\n%s", err, out)
	}
}

// TestRunsTokenIsNotTheWebhooksInAnySpelling: the config refused a
// runs_token equal to the webhook's token written inline, but not the same
// token read from files (the same file named twice, or two files, or one
// inline and one in a file): /runs then opened off loopback with the token
// lakeFS hands to every action file, writers' included, and showed them
// every run, each check's observed values (sample rows with
// http.runs_samples). The tokens are compared as read.
func TestRunsTokenIsNotTheWebhooksInAnySpelling(t *testing.T) {
	dir := t.TempDir()
	a, b, other := dir+"/a", dir+"/b", dir+"/other"
	for path, text := range map[string]string{a: "shared\n", b: " shared ", other: "runs-only\n"} {
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name string
		h    HTTP
		want string // "" for no error
	}{
		{"one file named twice", HTTP{WebhookTokenFile: a, RunsTokenFile: a}, "http.runs_token_file: is the webhook's token"},
		{"two files of one token", HTTP{WebhookTokenFile: a, RunsTokenFile: b}, "http.runs_token_file: is the webhook's token"},
		{"inline and in a file", HTTP{WebhookToken: "shared", RunsTokenFile: b}, "http.runs_token_file: is the webhook's token"},
		{"in a file and inline", HTTP{WebhookTokenFile: a, RunsToken: "shared"}, "http.runs_token: is the webhook's token"},
		{"a token of its own", HTTP{WebhookTokenFile: a, RunsTokenFile: other}, ""},
		{"the webhook open", HTTP{Webhook: WebhookOpen, RunsTokenFile: a}, ""},
	} {
		got, err := c.h.RunsPageToken()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v; want the token", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: token %q, error %v; want an error saying %q", c.name, got, err, c.want)
		}
	}
}

// TestUnguardedNamesTheKeysLeftUnset: a config without
// audit.attestation_key takes unsigned attestations for lakewap's, so
// whoever may move a target to a commit record naming lakewap's lakeFS user
// (createCommitRecord names any committer) makes the next audit read only a
// batch's rows; nothing at start said so, as it says of
// runner.state_key_file. Unguarded names each such key, what its absence
// lets through and who can use it; the daemon logs them at start, lakewap
// validate and verify print them. With the keys set, or every audit full,
// the attestation line is gone.
func TestUnguardedNamesTheKeysLeftUnset(t *testing.T) {
	vars := env(map[string]string{"KAFKA_PASSWORD": "pw", "LAKEFS_KEY": "AKIA"})
	c, err := ParseIn([]byte(good), vars, "")
	if err != nil {
		t.Fatal(err)
	}
	got := c.Unguarded()
	joined := strings.Join(got, "\n")
	for _, want := range []string{"runner.state_key_file", "audit.attestation_key", "createCommitRecord", "wap.runs", "operators is not set", "wap.requests", "revert"} {
		if !strings.Contains(joined, want) {
			t.Errorf("Unguarded() = %q; want a line naming %q", got, want)
		}
	}
	keyFile := t.TempDir() + "/state"
	if err := os.WriteFile(keyFile, []byte(strings.Repeat("s", 32)), 0o600); err != nil {
		t.Fatal(err)
	}
	c.Runner.StateKeyFile = keyFile
	c.Audit.AttestationKey = strings.Repeat("k", 16)
	c.Operators = []Operator{{Name: "alice", Key: strings.Repeat("a", 16)}}
	if got := c.Unguarded(); len(got) != 0 {
		t.Errorf("with both keys: Unguarded() = %q; want none", got)
	}
	off := false
	c.Audit.AttestationKey, c.Audit.Incremental = "", &off
	if got := c.Unguarded(); len(got) != 0 {
		t.Errorf("every audit full, the state key set: Unguarded() = %q; want none (no audit takes an attestation)", got)
	}
}

// TestLineageTopicIsNoneOfLakewapsOwn: lineage.kafka.topic was checked
// as a topic name only, so a config naming lakewap's input, requests,
// changelog, results or dead-letter topic there loaded, and the daemon wrote
// each run's OpenLineage JSON onto it: into its own input (every event
// dead-lettered back), into the changelog it restores runs from, or among
// the Avro results downstream consumers decode. It is refused, naming the
// setting it collides with.
func TestLineageTopicIsNoneOfLakewapsOwn(t *testing.T) {
	vars := env(map[string]string{"KAFKA_PASSWORD": "pw", "LAKEFS_KEY": "AKIA"})
	for field, topic := range map[string]string{"kafka.input_topic": "wap.events", "kafka.requests_topic": "wap.requests",
		"kafka.changelog_topic": "wap.runs", "kafka.results_topic": "wap.results", "kafka.dead_letter_topic": "wap.dlq"} {
		_, err := ParseIn([]byte(good+"lineage: {kafka: {topic: "+topic+"}}\n"), vars, "")
		if err == nil || !strings.Contains(err.Error(), "lineage.kafka.topic") || !strings.Contains(err.Error(), field) {
			t.Errorf("lineage.kafka.topic %s: err %v; want it refused, naming %s", topic, err, field)
		}
	}
	if _, err := ParseIn([]byte(good+"lineage: {kafka: {topic: wap.lineage}}\n"), vars, ""); err != nil {
		t.Errorf("a topic of its own: %v", err)
	}
}

// runner.max_open_bytes and max_finished_bytes reach the policy (a bound the
// daemon never hands on bounds nothing); -1, or 0 beside its count's -1, is
// no limit.
func TestRunBytesBoundsReachThePolicy(t *testing.T) {
	vars := env(map[string]string{"KAFKA_PASSWORD": "pw", "LAKEFS_KEY": "AKIA"})
	d := pipeline.DefaultPolicy
	for _, tc := range []struct {
		runner         string
		open, finished int
	}{
		{"{}", d.MaxOpenBytes, d.MaxFinishedBytes},
		{"{max_open_bytes: 1048576, max_finished_bytes: 2097152}", 1 << 20, 2 << 20},
		{"{max_open_bytes: -1, max_finished_bytes: -1}", 0, 0},
		{"{max_open_runs: -1, max_finished_runs: -1}", 0, 0},
		{"{max_open_runs: -1, max_open_bytes: 1048576}", 1 << 20, d.MaxFinishedBytes},
	} {
		c, err := ParseIn([]byte(strings.Replace(good, "notify:", "runner: "+tc.runner+"\nnotify:", 1)), vars, "")
		if err != nil {
			t.Fatalf("runner %s: %v", tc.runner, err)
		}
		if p := c.Policy(); p.MaxOpenBytes != tc.open || p.MaxFinishedBytes != tc.finished || p.Validate() != nil {
			t.Errorf("runner %s: open %d finished %d; want %d and %d", tc.runner, p.MaxOpenBytes, p.MaxFinishedBytes, tc.open, tc.finished)
		}
	}
	c, err := ParseIn([]byte(strings.Replace(good, "  console: true", "  console: true\n  best_effort_wait: 3s", 1)), vars, "")
	if err != nil || c.Notify.BestEffortWait.Std() != 3*time.Second {
		t.Errorf("notify.best_effort_wait 3s: %v, err %v", c.Notify.BestEffortWait, err)
	}
	if c.Notify.SlackBudgetOrDefault() != 5*time.Second {
		t.Errorf("notify.slack_budget unset: %s; want 5s", c.Notify.SlackBudgetOrDefault())
	}
	c, err = ParseIn([]byte(strings.Replace(good, "  console: true", "  console: true\n  slack_budget: 12s\n  best_effort_wait: 10s", 1)), vars, "")
	if err != nil || c.Notify.SlackBudgetOrDefault() != 12*time.Second || c.Notify.BestEffortWait.Std() != 10*time.Second {
		t.Errorf("notify.slack_budget 12s, best_effort_wait 10s: %v, %v, err %v", c.Notify.SlackBudget, c.Notify.BestEffortWait, err)
	}
}

// The Slack scope sets deployments apart (staging and production sharing a
// bot token and a channel) and shows no address: it is the same across
// restarts of one deployment, another with another lakeFS, results topic or
// deployment id.
func TestSlackScopeSetsDeploymentsApart(t *testing.T) {
	vars := env(map[string]string{"KAFKA_PASSWORD": "pw", "LAKEFS_KEY": "AKIA"})
	scope := func(from, to string) string {
		c, err := ParseIn([]byte(strings.Replace(good, from, to, 1)), vars, "")
		if err != nil {
			t.Fatal(err)
		}
		return c.SlackScope()
	}
	prod := scope("", "")
	if prod != scope("", "") || len(prod) != 16 || strings.Contains(prod, "lakefs") {
		t.Fatalf("scope %q: want 16 hex digits, the same for the same config", prod)
	}
	for _, other := range []string{
		scope("http://lakefs:8000", "http://lakefs-staging:8000"),
		scope("  brokers:", "  results_topic: staging.results\n  brokers:"),
		scope("  brokers:", "  deployment_id: staging\n  brokers:"),
	} {
		if other == prod {
			t.Errorf("another deployment's scope %q is production's", other)
		}
	}
}
