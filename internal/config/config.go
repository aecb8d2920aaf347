// Package config is lakewap's YAML configuration: ${ENV} expansion, strict
// parsing (unknown keys are errors) and validation that names every bad
// field by its path. Defaults are applied once, when a config is loaded
// (Defaults): every other package reads resolved values, which builders
// (RunnerConfig, Policy, Sinks, Kafka.Consumer, ...) turn into the parts'
// settings. It may import audit, pipeline, schemas, consumer, notify and
// internal/janitor (the defaults they document and the settings built for them).
package config

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"gopkg.in/yaml.v3"

	"github.com/lakewap/lakewap/audit"
	"github.com/lakewap/lakewap/audit/blockstore"
	"github.com/lakewap/lakewap/consumer"
	"github.com/lakewap/lakewap/internal/janitor"
	"github.com/lakewap/lakewap/internal/runstore"
	"github.com/lakewap/lakewap/internal/tracing"
	"github.com/lakewap/lakewap/kafka"
	"github.com/lakewap/lakewap/notify"
	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/pipeline/runner"
	"github.com/lakewap/lakewap/schemas"
)

// Config is the whole configuration file.
type Config struct {
	Kafka  Kafka  `yaml:"kafka"`
	LakeFS LakeFS `yaml:"lakefs"`
	Runner Runner `yaml:"runner"`
	Audit  Audit  `yaml:"audit"`
	Notify Notify `yaml:"notify"`
	// Lineage sends OpenLineage run events (off without lineage.url or
	// lineage.kafka.topic).
	Lineage Lineage `yaml:"lineage"`
	// Tracing sends OpenTelemetry spans (off without tracing.otlp_endpoint).
	Tracing Tracing `yaml:"tracing"`
	HTTP    HTTP    `yaml:"http"`
	Log     Log     `yaml:"log"`
	Janitor Janitor `yaml:"janitor"`
	// Operators, when any are listed, are the only ones whose requests
	// (retry, cancel, revert) the daemon carries out: each request on the
	// requests topic must be signed with one of their keys, and names the
	// key's operator as who asked.
	Operators []Operator         `yaml:"operators"`
	Datasets  map[string]Dataset `yaml:"datasets"`
}

// Operator is one operator's request-signing key.
type Operator struct {
	// Name is who asked, as the run, its events and the revert commit say.
	Name string `yaml:"name"`
	// Key, or KeyFile holding it: at least 16 bytes, shared with the
	// operator's lakewap command (its config lists the same operator).
	Key     string `yaml:"key"`
	KeyFile string `yaml:"key_file"`
}

// operatorName is what an operator may be called: it goes into headers,
// events and commit metadata.
var operatorName = regexp.MustCompile(`^[\w.@-]{1,128}$`)

// StateKey reads runner.state_key_file; nil without one.
func (c *Config) StateKey() ([]byte, error) {
	if c.Runner.StateKeyFile == "" {
		return nil, nil
	}
	k, err := ReadSecret("", c.Runner.StateKeyFile)
	if err == nil && len(strings.TrimSpace(k)) < 32 {
		err = errors.New("the state key must be at least 32 bytes")
	}
	if err != nil {
		return nil, fmt.Errorf("runner.state_key_file: %w", err)
	}
	return []byte(strings.TrimSpace(k)), nil
}

// OperatorKeys reads every operator's key: name -> key. Nil without
// operators (requests are not signed).
func (c *Config) OperatorKeys() (map[string][]byte, error) {
	if len(c.Operators) == 0 {
		return nil, nil
	}
	keys := make(map[string][]byte, len(c.Operators))
	for i, o := range c.Operators {
		k, err := ReadSecret(o.Key, o.KeyFile)
		if err == nil && len(strings.TrimSpace(k)) < 16 {
			err = errors.New("the key must be at least 16 bytes")
		}
		if err != nil {
			return nil, fmt.Errorf("operators[%d] (%s): %w", i, o.Name, err)
		}
		keys[o.Name] = []byte(strings.TrimSpace(k))
	}
	return keys, nil
}

// Kafka says where the topics are and how to reach them.
type Kafka struct {
	Brokers    []string `yaml:"brokers"`
	GroupID    string   `yaml:"group_id"`
	InputTopic string   `yaml:"input_topic"`
	// RequestsTopic carries operators' requests (lakewap retry, cancel,
	// revert), apart from producers' inputs so that its ACL can differ;
	// requests on the input topic are dead-lettered. Same partitions as
	// the input topic.
	RequestsTopic string `yaml:"requests_topic"`
	// DeploymentID names this deployment in operators' signatures, beside
	// the cluster id: needed where the brokers report no cluster id (with
	// operators listed), optional otherwise; the same on the daemons and
	// in the operators' configs.
	DeploymentID    string `yaml:"deployment_id"`
	ResultsTopic    string `yaml:"results_topic"`
	DeadLetterTopic string `yaml:"dead_letter_topic"`
	ChangelogTopic  string `yaml:"changelog_topic"`
	// Partitions is used when lakewap creates missing topics.
	Partitions        int    `yaml:"partitions"`
	ReplicationFactor int    `yaml:"replication_factor"`
	CreateTopics      *bool  `yaml:"create_topics"`
	SchemaRegistry    string `yaml:"schema_registry_url"`
	// SchemaRegistryAuth and SchemaRegistryTLS reach a registry behind
	// HTTP basic authentication (Confluent Cloud's API key and secret) and
	// a private CA or mutual TLS.
	SchemaRegistryAuth *RegistryAuth `yaml:"schema_registry_auth"`
	SchemaRegistryTLS  *TLS          `yaml:"schema_registry_tls"`
	TLS                *TLS          `yaml:"tls"`
	SASL               *SASL         `yaml:"sasl"`
	CommitInterval     Duration      `yaml:"commit_interval"`
	SessionTimeout     Duration      `yaml:"session_timeout"`
	// ResultsMaxMessageBytes is the results topic's max.message.bytes
	// (default 1000000, at least notify.MinMaxMessageBytes): a result event
	// over it is sent with less of its audit report.
	ResultsMaxMessageBytes int `yaml:"results_max_message_bytes"`
}

// RegistryAuth is HTTP basic authentication to the schema registry.
type RegistryAuth struct {
	Username     string `yaml:"username"`
	Password     string `yaml:"password"`
	PasswordFile string `yaml:"password_file"`
}

// TLS for the Kafka connection.
type TLS struct {
	CAFile             string `yaml:"ca_file"`
	CertFile           string `yaml:"cert_file"`
	KeyFile            string `yaml:"key_file"`
	ServerName         string `yaml:"server_name"`
	InsecureSkipVerify bool   `yaml:"insecure_skip_verify"`
}

// SASL for the Kafka connection.
type SASL struct {
	Mechanism    string `yaml:"mechanism"`
	Username     string `yaml:"username"`
	Password     string `yaml:"password"`
	PasswordFile string `yaml:"password_file"`
}

// LakeFS is the lakeFS server lakewap drives.
type LakeFS struct {
	Endpoint            string   `yaml:"endpoint"`
	AccessKeyID         string   `yaml:"access_key_id"`
	SecretAccessKey     string   `yaml:"secret_access_key"`
	SecretAccessKeyFile string   `yaml:"secret_access_key_file"`
	UIURL               string   `yaml:"ui_url"`
	Timeout             Duration `yaml:"timeout"`
}

// Runner tunes the state machine and its runner.
type Runner struct {
	// StateKeyFile holds the daemon's state key (at least 32 bytes): every
	// run record lakewap writes to the changelog is numbered and sealed with
	// it (HMAC), and a record without a valid seal, or an older one written
	// again, is set aside at restore, never acted on. Without it records
	// are not authenticated (a warning).
	StateKeyFile string   `yaml:"state_key_file"`
	MaxInFlight  int      `yaml:"max_in_flight"`
	StepTimeout  Duration `yaml:"step_timeout"`
	RetryBudget  Duration `yaml:"retry_budget"`
	PendingTTL   Duration `yaml:"pending_ttl"`
	Grace        Duration `yaml:"shutdown_grace"`
	// TerminalRetention keeps finished runs in the state store (default 7
	// days); a BatchLanded of a batch with no run whose occurred_at is
	// older than it less 24h (half of it when under 48h) is dead-lettered
	// beyond_horizon, since its run may be forgotten.
	TerminalRetention Duration `yaml:"terminal_retention"`
	// MaxRunBytes is the budget of one run record in the changelog
	// (default 256 KiB); see docs/limits.md.
	MaxRunBytes int `yaml:"max_run_bytes"`
	// MaxDeadlineHorizon bounds how far ahead a batch's write deadline may
	// be (default 7 days); a later one makes the event invalid.
	MaxDeadlineHorizon Duration `yaml:"max_deadline_horizon"`
	// MaxLagWait: deadlines are judged on event time, so while the input
	// partition lags behind a run's deadline the run waits for the backlog,
	// at most this long after the deadline (default 1h).
	MaxLagWait Duration `yaml:"max_lag_wait"`
	// MaxOpenRuns bounds the runs in progress (landed to publishing) of one
	// dataset on one instance, so that one dataset's flood cannot starve
	// another's; a batch landing beyond it is aborted with reason
	// too_many_runs (default 10000; 0 keeps the default, -1 is no limit).
	// So is one whose attributes and expected writes would take those runs
	// past MaxOpenBytes of them together.
	MaxOpenRuns int `yaml:"max_open_runs"`
	// MaxOpenBytes bounds those runs' attributes and expected writes
	// together (default 64 MiB; 0 keeps the default, -1 is no limit, as is
	// leaving it at 0 with max_open_runs -1).
	MaxOpenBytes int `yaml:"max_open_bytes"`
	// MaxPendingRuns bounds the runs one partition holds for batches that
	// have not landed (a WriteComplete first), and their writes together to
	// twice as many; one more is dead-lettered too_many_pending (default
	// 10000; 0 keeps the default, -1 is no limit).
	MaxPendingRuns int `yaml:"max_pending_runs"`
	// MaxFinishedRuns bounds the finished runs of one dataset one partition
	// keeps before their retention is over (default 10000; 0 keeps the
	// default, -1 is no limit); a BatchLanded with no run, not after the
	// newest batch time of a published run forgotten so, is dead-lettered
	// beyond_horizon. Those an operator may retry are forgotten as well
	// past MaxFinishedBytes of their batches' attributes and writes together.
	MaxFinishedRuns int `yaml:"max_finished_runs"`
	// MaxFinishedBytes bounds those finished runs' attributes and writes
	// per dataset and partition (default 64 MiB; 0 keeps the default, -1 is
	// no limit, as is leaving it at 0 with max_finished_runs -1).
	MaxFinishedBytes int `yaml:"max_finished_bytes"`
	// RejectedRetention keeps a run aborted before it began (invalid,
	// too_many_runs) this long instead of terminal_retention (default 10m).
	RejectedRetention Duration `yaml:"rejected_retention"`
}

// minRunBytes leaves room for a run's identity and its final event.
const minRunBytes = 16 << 10

// Audit tunes the DuckDB engine.
type Audit struct {
	WorkDir             string `yaml:"work_dir"`
	CacheDir            string `yaml:"cache_dir"`
	MemoryLimit         string `yaml:"memory_limit"`
	Threads             int    `yaml:"threads"`
	DownloadParallelism int    `yaml:"download_parallelism"`
	SampleRows          int    `yaml:"sample_rows"`
	// MaxSampleValueBytes and MaxReportBytes bound sample values and whole
	// reports (defaults 256 and 32 KiB); see docs/limits.md.
	MaxSampleValueBytes int `yaml:"max_sample_value_bytes"`
	MaxReportBytes      int `yaml:"max_report_bytes"`
	// CacheMaxMB bounds cache_dir; least recently used files go first.
	// 0 keeps everything.
	CacheMaxMB int64 `yaml:"cache_max_mb"`
	// MaxFiles bounds the data files one audit downloads; over it, its
	// checks error before anything is downloaded.
	MaxFiles int `yaml:"max_files"`
	// MaxBytes bounds the bytes of the data files one audit downloads; over
	// it, its checks error before anything is downloaded.
	MaxBytes int64 `yaml:"max_bytes"`
	// MaxListObjects bounds the objects one listing of a table may return,
	// and 512 bytes per object of the objects themselves, their paths,
	// addresses and checksums.
	MaxListObjects int `yaml:"max_list_objects"`
	// MaxLogFileBytes bounds one Delta log file (commit or checkpoint part),
	// as listed and as its actions decode.
	MaxLogFileBytes int64 `yaml:"max_log_file_bytes"`
	// ClockSkew is how far after now a freshness column's newest value may
	// be; a later one fails the check.
	ClockSkew Duration `yaml:"clock_skew"`
	// QueryTimeout bounds each custom query (sql and cross_table checks).
	QueryTimeout Duration `yaml:"query_timeout"`
	// MaxAttempts is how many attempts of one batch's audit may end with
	// the process (out of memory, a crash inside DuckDB: begun, never
	// finished) before the batch is aborted with reason audit_crashed, its
	// branch kept, instead of being audited again at every restore
	// (default 3). Each attempt (a recheck onto a moved target included) is
	// recorded in the run's changelog record before it starts; a death
	// shared by several audits ends none of their batches, which are then
	// audited alone: only a death alone counts to the end.
	MaxAttempts int `yaml:"max_attempts"`
	// Incremental lets audits read only the batch's rows where the target's
	// last commit is an attested publish of the same suite (default true).
	Incremental *bool `yaml:"incremental"`
	// StatsDir keeps lakewap's statistics of the audited files across
	// restarts (default: in memory, rebuilt from the data after a restart).
	StatsDir string `yaml:"stats_dir"`
	// AttestationKey signs the attestation of every publish (HMAC-SHA256);
	// with it, an attestation without a valid signature is not taken.
	AttestationKey     string `yaml:"attestation_key"`
	AttestationKeyFile string `yaml:"attestation_key_file"`
	// Blockstore lets the audit read lakeFS's blockstore itself, to compare
	// the stored size of each object a batch changes with the size lakeFS
	// lists (check stored_sizes). Without it the check does not run.
	Blockstore *Blockstore `yaml:"blockstore"`
}

// Blockstore is how lakewap reads lakeFS's blockstore (audit.blockstore).
type Blockstore struct {
	// Type is the blockstore's type: local or s3.
	Type string `yaml:"type"`
	// Path is lakeFS's blockstore.local.path, readable by lakewap (type
	// local).
	Path string `yaml:"path"`
	// Type s3: the service (default AWS's in region), the region, a key
	// that may read the objects (s3:GetObject), and path-style addressing
	// (MinIO and the like).
	Endpoint            string `yaml:"endpoint"`
	Region              string `yaml:"region"`
	AccessKeyID         string `yaml:"access_key_id"`
	SecretAccessKey     string `yaml:"secret_access_key"`
	SecretAccessKeyFile string `yaml:"secret_access_key_file"`
	ForcePathStyle      bool   `yaml:"force_path_style"`
	// Timeout bounds each request for a stored size (default 10s).
	Timeout Duration `yaml:"timeout"`
}

// IncrementalOn reports whether audits may be incremental.
func (a Audit) IncrementalOn() bool { return a.Incremental == nil || *a.Incremental }

// Notify configures Slack, the console sink and routing.
type Notify struct {
	Console bool    `yaml:"console"`
	Slack   *Slack  `yaml:"slack"`
	Routes  []Route `yaml:"routes"`
	// BestEffortWait is how long a notification waits for Slack once the
	// results topic has it (default 1s); a Slack message still going out
	// then goes on in the background. At most SlackBudget.
	BestEffortWait Duration `yaml:"best_effort_wait"`
	// SlackBudget bounds one notification's time on Slack (each best-effort
	// sink), retries and the lookup of a lost receipt's message included
	// (default 5s, DefaultSlackBudget; MinSlackBudget to MaxSlackBudget).
	SlackBudget Duration `yaml:"slack_budget"`
}

// DefaultSlackBudget is notify.slack_budget's default: a short budget
// keeps an outage from holding up the result events queued behind it; the
// run re-notifies later. A Slack reached through a slow proxy or far away
// (a lookup of up to 5 history pages, the post and the details reply are
// up to 8 calls) may need more.
const DefaultSlackBudget = 5 * time.Second

// MinSlackBudget and MaxSlackBudget bound notify.slack_budget: below a
// second no Slack call with a retry fits; a graceful stop awaits Slack
// messages still going out for the budget and a second more, which the
// Helm chart's termination margin (20 s) must hold with the offsets' commit.
const (
	MinSlackBudget = time.Second
	MaxSlackBudget = 15 * time.Second
)

// SlackBudgetOrDefault is notify.slack_budget, or its default when unset.
func (n Notify) SlackBudgetOrDefault() time.Duration {
	return cmp.Or(n.SlackBudget.Std(), DefaultSlackBudget)
}

// DefaultBestEffortWait is notify.best_effort_wait's default.
const DefaultBestEffortWait = time.Second

// Slack credentials; each secret comes inline (usually ${ENV}) or from a file.
type Slack struct {
	Token          string `yaml:"token"`
	TokenFile      string `yaml:"token_file"`
	Channel        string `yaml:"channel"`
	WebhookURL     string `yaml:"webhook_url"`
	WebhookURLFile string `yaml:"webhook_url_file"`
	APIURL         string `yaml:"api_url"` // for tests against slacktest
	// RateBurst new messages at most per RatePer for one dataset, state and
	// reason (default 20 per 10m; -1: no limit): a flood of one kind does
	// not flood the channel. Updates of posted messages are never held back;
	// announcements (UnattestedChange) are new messages, counted under their kind.
	RateBurst int      `yaml:"rate_burst"`
	RatePer   Duration `yaml:"rate_per"`
}

// SlackScope names this deployment in its Slack messages' metadata: a hash
// of kafka.deployment_id, the lakeFS endpoint and the results topic, so that
// deployments sharing a bot token and a channel do not take each other's
// messages, and no internal address is shown to the channel's apps.
func (c *Config) SlackScope() string {
	sum := sha256.Sum256([]byte(c.Kafka.DeploymentID + "\x00" + c.LakeFS.Endpoint + "\x00" + c.Kafka.ResultsTopic))
	return hex.EncodeToString(sum[:8])
}

// Limit is the Slack sink's rate limit as notify's options.
func (s Slack) Limit() notify.LimitConfig {
	return notify.LimitConfig{Burst: cmp.Or(s.RateBurst, 20), Per: cmp.Or(s.RatePer.Std(), 10*time.Minute)}
}

// Route sends some outcomes of some datasets to a sink.
type Route struct {
	Sink     string   `yaml:"sink"`
	Datasets []string `yaml:"datasets"`
	On       []string `yaml:"on"`
	Mention  string   `yaml:"mention"`
	// Channel posts this route's batches to another Slack channel than
	// notify.slack.channel (a bot token sink only).
	Channel string `yaml:"channel"`
}

// Lineage is where OpenLineage run events go.
type Lineage struct {
	// URL is an OpenLineage HTTP endpoint (Marquez: http://marquez:5000/api/v1/lineage);
	// empty sends none.
	URL string `yaml:"url"`
	// Namespace is the OpenLineage namespace of the jobs (one job per dataset).
	Namespace string `yaml:"namespace"`
	// Timeout bounds one POST, or one write to lineage.kafka.topic.
	Timeout Duration `yaml:"timeout"`
	// Kafka sends the events to a topic of kafka.brokers instead of URL.
	Kafka LineageKafka `yaml:"kafka"`
	// MaxEventBytes is the byte budget of one event's JSON (0: 512 KiB); a
	// larger event is sent without its succeeded assertions, then without
	// any (the run facet lakewap_budget says how many), and dropped and
	// counted only if still larger.
	MaxEventBytes int `yaml:"max_event_bytes"`
}

// Tracing is where OpenTelemetry spans go (internal/tracing).
type Tracing struct {
	// OTLPEndpoint is the OTLP receiver: host:port with protocol grpc, a URL
	// (http://collector:4318/v1/traces) with protocol http; empty sends no spans.
	OTLPEndpoint string `yaml:"otlp_endpoint"`
	// Protocol is grpc or http.
	Protocol string `yaml:"protocol"`
	// Insecure sends spans without TLS.
	Insecure bool `yaml:"insecure"`
	// Headers go with every export (an API key of a tracing service).
	Headers map[string]string `yaml:"headers"`
	// SampleRatio is the share of traces kept that no producer started (a
	// producer's trace follows its sampled flag); unset keeps all.
	SampleRatio *float64 `yaml:"sample_ratio"`
}

// TracingOptions are tracing.* as the tracer's options; version is the
// build's.
func (c *Config) TracingOptions(version string) tracing.Options {
	t := c.Tracing
	ratio := 1.0
	if t.SampleRatio != nil {
		ratio = *t.SampleRatio
	}
	return tracing.Options{Endpoint: t.OTLPEndpoint, Protocol: cmp.Or(t.Protocol, "grpc"), Insecure: t.Insecure, Headers: t.Headers,
		SampleRatio: ratio, Version: version, Group: c.Kafka.GroupID}
}

// LineageKafka is the Kafka transport of OpenLineage events: lakewap's own
// Kafka connection (kafka.brokers, security), one topic.
type LineageKafka struct {
	// Topic gets the events, keyed run:<namespace>/<dataset>; created
	// like lakewap's other topics unless kafka.create_topics is false.
	// None of lakewap's own topics (kafka.*_topic).
	Topic string `yaml:"topic"`
}

// On reports whether lineage events are sent.
func (l Lineage) On() bool { return l.URL != "" || l.Kafka.Topic != "" }

// HTTP is the metrics, health and webhook listener.
type HTTP struct {
	Listen string `yaml:"listen"`
	// WebhookToken must arrive in the X-Lakewap-Token header of pre-merge
	// webhook calls (the lakeFS action sends it from an environment
	// variable of the lakeFS server). It is required while the listener
	// serves the webhook: an empty or whitespace-only token (say ${VAR} set
	// to "") is a config error, never an open endpoint.
	WebhookToken     string `yaml:"webhook_token"`
	WebhookTokenFile string `yaml:"webhook_token_file"`
	// Webhook is how the pre-merge webhook is served: token (the default:
	// calls must carry webhook_token), open (no token: anyone who reaches
	// the port can make lakewap audit; say so explicitly) or off (not
	// served; metrics and health only).
	Webhook string `yaml:"webhook"`
	// WebhookConcurrency bounds the pre-merge audits running at once
	// (default 2); a call that cannot start within its timeout gets 503.
	WebhookConcurrency int `yaml:"webhook_concurrency"`
	// WebhookAuditTimeout bounds how long one pre-merge call waits for its
	// audits (default 25s); an audit still running then goes on in the
	// background and its report answers the next call of the same commit.
	// lakeFS waits for the hook while lakewap's own merge call waits for
	// lakeFS, so it must stay below lakefs.timeout (checked at startup),
	// and the action's timeout must be above it.
	WebhookAuditTimeout Duration `yaml:"webhook_audit_timeout"`
	// Runs is the read-only status page /runs: on (the default) or off.
	// On a listener that is not on loopback it needs runs_token and is not
	// served without one. Never the webhook's token: lakeFS hands that to
	// every action file, so every writer has it.
	Runs string `yaml:"runs"`
	// RunsToken (or RunsTokenFile) is the token /runs asks for off loopback;
	// the webhook's token, inline or read from a file, is refused.
	RunsToken     string `yaml:"runs_token"`
	RunsTokenFile string `yaml:"runs_token_file"`
	// RunsSamples shows the sample rows of failed checks on /runs (default
	// false: they are data, and whoever can read the page may not be allowed
	// to read the data).
	RunsSamples bool `yaml:"runs_samples"`
}

// Pre-merge webhook modes (HTTP.Webhook).
const (
	WebhookToken = "token"
	WebhookOpen  = "open"
	WebhookOff   = "off"
)

// WebhookMode is the effective HTTP.Webhook.
func (h HTTP) WebhookMode() string { return cmp.Or(h.Webhook, WebhookToken) }

// Token is the pre-merge webhook's token when http.webhook is token, read
// from webhook_token_file when that is set, and "" in the other modes. An
// empty token is an error naming the field: never an open endpoint.
func (h HTTP) Token() (string, error) {
	if h.WebhookMode() != WebhookToken {
		return "", nil
	}
	field, what := "http.webhook_token", "the token"
	if h.WebhookTokenFile != "" {
		field, what = "http.webhook_token_file", h.WebhookTokenFile
	}
	token, err := ReadSecret(h.WebhookToken, h.WebhookTokenFile)
	if err == nil && strings.TrimSpace(token) == "" {
		err = fmt.Errorf("%s is empty: the pre-merge webhook needs a token (or http.webhook: open or off)", what)
	}
	if err != nil {
		return "", fmt.Errorf("%s: %w", field, err)
	}
	return token, nil
}

// RunsPageToken is the token of /runs, read from runs_token_file when that
// is set; "" when none is set. A set but empty one is an error naming it.
func (h HTTP) RunsPageToken() (string, error) {
	if h.RunsToken == "" && h.RunsTokenFile == "" {
		return "", nil
	}
	field := "http.runs_token"
	if h.RunsTokenFile != "" {
		field = "http.runs_token_file"
	}
	token, err := ReadSecret(h.RunsToken, h.RunsTokenFile)
	if err == nil && strings.TrimSpace(token) == "" {
		err = errors.New("is empty: /runs needs a token off loopback (or http.runs: off)")
	}
	// Compared as read, not only as written inline (validate): the same
	// token from files opened /runs to every writer.
	if webhook, werr := h.Token(); err == nil && werr == nil && webhook != "" &&
		subtle.ConstantTimeCompare([]byte(webhook), []byte(token)) == 1 {
		err = errors.New(runsTokenIsWebhooks)
	}
	if err != nil {
		return "", fmt.Errorf("%s: %w", field, err)
	}
	return token, nil
}

// runsTokenIsWebhooks says why /runs refuses the webhook's token.
const runsTokenIsWebhooks = "is the webhook's token, which lakeFS hands to every action file: give /runs a token of its own"

// Janitor deletes the wap- branches nobody needs any more: those of aborted
// (and failed) runs after their dataset's aborted_retention, those of
// published runs and those without any run after abandoned_after.
type Janitor struct {
	Enabled        *bool    `yaml:"enabled"`         // default true
	Interval       Duration `yaml:"interval"`        // between sweeps; default 1h
	AbandonedAfter Duration `yaml:"abandoned_after"` // default 24h
	DryRun         bool     `yaml:"dry_run"`         // log what would be deleted, delete nothing
}

// On reports whether the daemon runs the janitor.
func (j Janitor) On() bool { return j.Enabled == nil || *j.Enabled }

// DefaultJanitorInterval is the time between the daemon's janitor sweeps;
// the other janitor defaults are the janitor package's.
const DefaultJanitorInterval = time.Hour

// Log format and level.
type Log struct {
	Format string `yaml:"format"` // json | text
	Level  string `yaml:"level"`  // debug | info | warn | error
}

// Dataset maps a dataset name from events to a repository, a publish target
// and an audit suite.
type Dataset struct {
	Repository   string   `yaml:"repository"`
	Target       string   `yaml:"target"`
	Source       string   `yaml:"source"`
	WriteTimeout Duration `yaml:"write_timeout"`
	// MaxWriteTimeout caps a batch's write deadline at this long after it
	// landed, whatever its BatchLanded asks (default: no cap beyond
	// runner.max_deadline_horizon).
	MaxWriteTimeout Duration `yaml:"max_write_timeout"`
	// KeepAbortedBranch keeps an aborted batch's branch for inspection
	// (default true); the janitor deletes it after AbortedRetention.
	KeepAbortedBranch *bool    `yaml:"keep_aborted_branch"`
	AbortedRetention  Duration `yaml:"aborted_retention"`
	// AllowedPaths are path prefixes outside the tables a batch may change
	// (say, a manifest); any other change outside the tables aborts the
	// batch (outside_tables). None may hold _lakefs_actions/ (lakeFS's
	// pre-merge actions).
	AllowedPaths []string `yaml:"allowed_paths"`
	// SourceRefs are the refs a BatchLanded may name as source_ref
	// (default: the dataset's source and target).
	SourceRefs []string `yaml:"source_refs"`
	// ChecksFrom imports checks from other tools' files into the suite.
	ChecksFrom ChecksFromList `yaml:"checks_from"`
	// AuditMode is incremental (default: incremental where the target's
	// history allows) or full (every audit reads the whole tables).
	AuditMode   string `yaml:"audit_mode"`
	audit.Suite `yaml:",inline"`
}

// Keep reports the effective keep-branch policy.
func (d Dataset) Keep() bool { return d.KeepAbortedBranch == nil || *d.KeepAbortedBranch }

// Duration is a time.Duration written as "90s", "30m" or "2h" in YAML.
type Duration time.Duration

// UnmarshalYAML parses a Go duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	var s string
	if err := n.Decode(&s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("line %d: %q is not a duration (like 90s, 30m, 2h)", n.Line, s)
	}
	*d = Duration(v)
	return nil
}

// MarshalYAML writes d as UnmarshalYAML reads it, so a loaded config can be
// written back (the system tests hand the commands their stack's config).
func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }

// Std is d as a time.Duration.
func (d Duration) Std() time.Duration { return time.Duration(d) }

var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}`)

// Expand replaces ${NAME} and ${NAME:-default} with environment values. An
// unset variable without a default is an error naming it and its line.
// Comment lines are left alone, so commented-out examples need no variables.
func Expand(src []byte, lookup func(string) (string, bool)) ([]byte, error) {
	var missing []string
	lines := bytes.SplitAfter(src, []byte("\n"))
	for i, line := range lines {
		if t := bytes.TrimSpace(line); len(t) > 0 && t[0] == '#' {
			continue
		}
		lines[i] = envRef.ReplaceAllFunc(line, func(m []byte) []byte {
			g := envRef.FindSubmatch(m)
			if v, ok := lookup(string(g[1])); ok {
				return []byte(v)
			}
			if g[2] != nil {
				return g[3]
			}
			missing = append(missing, fmt.Sprintf("%s (line %d)", g[1], i+1))
			return m
		})
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("environment variable(s) not set: %s", strings.Join(missing, ", "))
	}
	return bytes.Join(lines, nil), nil
}

// Load reads, expands, parses and validates a config file. The files that
// checks_from names are read relative to the config file's directory.
func Load(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseIn(b, os.LookupEnv, filepath.Dir(path))
}

// ParseIn is Load on bytes: lookup resolves ${ENV} references and
// checks_from files are relative to dir.
func ParseIn(src []byte, lookup func(string) (string, bool), dir string) (*Config, error) {
	src, err := Expand(src, lookup)
	if err != nil {
		return nil, err
	}
	dec := yaml.NewDecoder(bytes.NewReader(src))
	dec.KnownFields(true)
	var c Config
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	c.Defaults()
	if err := c.Validate(); err != nil {
		return nil, err
	}
	// Imported checks are validated (and named in errors) as part of their
	// checks_from entry.
	if err := c.ImportChecks(dir); err != nil {
		return nil, err
	}
	if err := c.validateReads(); err != nil {
		return nil, err
	}
	return &c, nil
}

// validateReads refuses a table no check reads, the imported checks
// included: nothing under its path would be audited, yet the merge takes
// it (the audit would abort every batch that writes there, unaudited_objects).
func (c *Config) validateReads() error {
	var errs Errors
	for _, n := range slices.Sorted(maps.Keys(c.Datasets)) {
		d := c.Datasets[n]
		for _, i := range d.Suite.Unread() {
			t := d.Suite.Tables[i]
			errs = append(errs, fmt.Errorf("datasets.%s.tables[%d]: no check reads table %q, so nothing a batch writes under %s would be audited: give it a check, or list the path in allowed_paths to publish it unaudited",
				n, i, t.Name, t.Path))
		}
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// Defaults fills every unset field with its documented default: the one
// place a default is applied. A negative value is left for Validate.
func (c *Config) Defaults() {
	k := &c.Kafka
	k.GroupID = cmp.Or(k.GroupID, "lakewap")
	k.InputTopic = cmp.Or(k.InputTopic, "wap.events")
	k.RequestsTopic = cmp.Or(k.RequestsTopic, "wap.requests")
	k.ResultsTopic = cmp.Or(k.ResultsTopic, "wap.results")
	k.DeadLetterTopic = cmp.Or(k.DeadLetterTopic, "wap.dlq")
	k.ChangelogTopic = cmp.Or(k.ChangelogTopic, "wap.runs")
	k.Partitions = cmp.Or(k.Partitions, 3)
	k.ReplicationFactor = cmp.Or(k.ReplicationFactor, 1)
	k.ResultsMaxMessageBytes = cmp.Or(k.ResultsMaxMessageBytes, notify.DefaultMaxMessageBytes)
	k.CommitInterval = cmp.Or(k.CommitInterval, Duration(time.Second))
	c.LakeFS.Timeout = cmp.Or(c.LakeFS.Timeout, Duration(DefaultLakeFSTimeout))
	r, p := &c.Runner, pipeline.DefaultPolicy
	r.MaxInFlight = cmp.Or(r.MaxInFlight, runner.DefaultMaxInFlight)
	r.StepTimeout = cmp.Or(r.StepTimeout, Duration(runner.DefaultStepTimeout))
	r.Grace = cmp.Or(r.Grace, Duration(runner.DefaultGrace))
	r.RetryBudget = cmp.Or(r.RetryBudget, Duration(p.RetryBudget))
	r.PendingTTL = cmp.Or(r.PendingTTL, Duration(p.PendingTTL))
	r.TerminalRetention = cmp.Or(r.TerminalRetention, Duration(p.TerminalRetention))
	r.MaxRunBytes = cmp.Or(r.MaxRunBytes, p.MaxRunBytes)
	r.MaxLagWait = cmp.Or(r.MaxLagWait, Duration(p.MaxLagWait))
	r.MaxOpenRuns = cmp.Or(r.MaxOpenRuns, p.MaxOpenRuns)
	r.MaxPendingRuns = cmp.Or(r.MaxPendingRuns, p.MaxPendingRuns)
	r.MaxFinishedRuns = cmp.Or(r.MaxFinishedRuns, p.MaxFinishedRuns)
	r.RejectedRetention = cmp.Or(r.RejectedRetention, Duration(p.RejectedRetention))
	r.MaxDeadlineHorizon = cmp.Or(r.MaxDeadlineHorizon, Duration(schemas.DefaultMaxDeadlineHorizon))
	c.HTTP.WebhookConcurrency = cmp.Or(c.HTTP.WebhookConcurrency, 2)
	c.HTTP.WebhookAuditTimeout = cmp.Or(c.HTTP.WebhookAuditTimeout, Duration(DefaultWebhookAuditTimeout))
	c.Audit.WorkDir = cmp.Or(c.Audit.WorkDir, filepath.Join(os.TempDir(), "lakewap-audit"))
	c.Audit.MaxFiles = cmp.Or(c.Audit.MaxFiles, audit.DefaultMaxFiles)
	c.Audit.MaxBytes = cmp.Or(c.Audit.MaxBytes, audit.DefaultMaxBytes)
	c.Audit.MaxListObjects = cmp.Or(c.Audit.MaxListObjects, audit.DefaultMaxListObjects)
	c.Audit.MaxLogFileBytes = cmp.Or(c.Audit.MaxLogFileBytes, audit.DefaultMaxLogFileBytes)
	c.Audit.ClockSkew = cmp.Or(c.Audit.ClockSkew, Duration(audit.DefaultClockSkew))
	c.Audit.QueryTimeout = cmp.Or(c.Audit.QueryTimeout, Duration(audit.DefaultQueryTimeout))
	c.Audit.MaxAttempts = cmp.Or(c.Audit.MaxAttempts, p.MaxAuditAttempts)
	c.Notify.BestEffortWait = cmp.Or(c.Notify.BestEffortWait, Duration(DefaultBestEffortWait))
	c.Log.Format = cmp.Or(c.Log.Format, "text")
	c.Log.Level = cmp.Or(c.Log.Level, "info")
	for name, d := range c.Datasets {
		d.Target = cmp.Or(d.Target, "main")
		d.WriteTimeout = cmp.Or(d.WriteTimeout, Duration(time.Hour))
		d.AbortedRetention = cmp.Or(d.AbortedRetention, Duration(janitor.DefaultAbortedRetention))
		c.Datasets[name] = d
	}
	c.Janitor.Interval = cmp.Or(c.Janitor.Interval, Duration(DefaultJanitorInterval))
	c.Janitor.AbandonedAfter = cmp.Or(c.Janitor.AbandonedAfter, Duration(janitor.DefaultAbandonedAfter))
}

// RunnerConfig is the runner's settings from runner.* and datasets; the
// caller adds the parts (Lake, Auditor, Notifier, Store) and hooks.
func (c *Config) RunnerConfig() runner.Config {
	r := c.Runner
	return runner.Config{Datasets: c.DatasetSpec, Policy: c.Policy(),
		MaxInFlight: r.MaxInFlight, StepTimeout: r.StepTimeout.Std(), Grace: r.Grace.Std()}
}

// InputRules are the rules the ingest stage validates input events by: the
// configured datasets, their source_refs, runner.max_deadline_horizon.
func (c *Config) InputRules() schemas.Rules {
	return schemas.Rules{MaxDeadlineHorizon: c.Runner.MaxDeadlineHorizon.Std(),
		Known:         func(name string) bool { _, ok := c.Datasets[name]; return ok },
		SourceAllowed: func(name, ref string) bool { s, _ := c.DatasetSpec(name); return s.AllowsSource(ref) },
	}
}

// Consumer is the input consumer's settings from kafka.*, reaching Kafka
// with sec.
func (k Kafka) Consumer(sec kafka.Security) consumer.Config {
	return consumer.Config{Brokers: k.Brokers, GroupID: k.GroupID, Topic: k.InputTopic, RequestsTopic: k.RequestsTopic, DeadLetterTopic: k.DeadLetterTopic,
		Security: sec, CommitInterval: k.CommitInterval.Std(), SessionTimeout: k.SessionTimeout.Std()}
}

// Policy is the state machine's policy from runner.*.
func (c *Config) Policy() pipeline.Policy {
	r, p := c.Runner, pipeline.DefaultPolicy
	p.RetryBudget, p.PendingTTL, p.TerminalRetention = r.RetryBudget.Std(), r.PendingTTL.Std(), r.TerminalRetention.Std()
	p.MaxRunBytes, p.MaxLagWait, p.MaxOpenRuns = r.MaxRunBytes, r.MaxLagWait.Std(), max(r.MaxOpenRuns, 0) // -1: no limit
	p.MaxPendingRuns, p.MaxFinishedRuns, p.RejectedRetention = max(r.MaxPendingRuns, 0), max(r.MaxFinishedRuns, 0), r.RejectedRetention.Std()
	p.MaxAuditAttempts = c.Audit.MaxAttempts
	p.MaxOpenBytes = bytesBound(r.MaxOpenBytes, r.MaxOpenRuns, p.MaxOpenBytes)
	p.MaxFinishedBytes = bytesBound(r.MaxFinishedBytes, r.MaxFinishedRuns, p.MaxFinishedBytes)
	return p
}

// bytesBound is a runs' bytes bound from its key (set) and its count's
// (runs): -1 is no limit; 0 is the default, or no limit when the count's
// is -1 (which lifted both before the bytes had a key of their own).
func bytesBound(set, runs, def int) int {
	switch {
	case set < 0:
		return 0
	case set > 0:
		return set
	case runs < 0:
		return 0
	}
	return def
}

// DatasetSpec is what the runner needs of dataset name.
func (c *Config) DatasetSpec(name string) (pipeline.DatasetSpec, bool) {
	ds, ok := c.Datasets[name]
	if !ok {
		return pipeline.DatasetSpec{}, false
	}
	// Each table's path ends in "/" so that gold/t does not also cover gold/t_other/.
	tables := make([]string, 0, len(ds.Tables))
	for _, t := range ds.Tables {
		tables = append(tables, strings.TrimSuffix(t.Path, "/")+"/")
	}
	return pipeline.DatasetSpec{Repository: ds.Repository, Source: ds.Source, Target: ds.Target,
		WriteTimeout: ds.WriteTimeout.Std(), MaxWriteTimeout: ds.MaxWriteTimeout.Std(), KeepBranch: ds.Keep(),
		TablePaths: tables, AllowedPaths: ds.AllowedPaths, SourceRefs: ds.SourceRefs}, true
}

// Codec is the event codec: the Confluent wire format with the schema
// registry at kafka.schema_registry_url, or single-object encoding without
// one. Decoding accepts both either way.
func (k Kafka) Codec() (*schemas.Codec, error) {
	var opts schemas.Options
	if k.SchemaRegistry != "" {
		rc, err := k.RegistryClient()
		if err != nil {
			return nil, err
		}
		opts.Registry = rc
	}
	return schemas.NewCodec(opts)
}

// RegistryClient is the client of the schema registry at
// kafka.schema_registry_url, with its auth and TLS settings.
func (k Kafka) RegistryClient() (*schemas.Registry, error) {
	var hc *http.Client
	if t := k.SchemaRegistryTLS; t != nil {
		tc, err := (&kafka.TLSConfig{CAFile: t.CAFile, CertFile: t.CertFile, KeyFile: t.KeyFile, ServerName: t.ServerName, InsecureSkipVerify: t.InsecureSkipVerify}).Config()
		if err != nil {
			return nil, fmt.Errorf("kafka.schema_registry_tls: %w", err)
		}
		hc = &http.Client{Transport: &http.Transport{TLSClientConfig: tc, Proxy: http.ProxyFromEnvironment}}
	}
	var opts []schemas.RegistryOption
	if a := k.SchemaRegistryAuth; a != nil {
		pw, err := ReadSecret(a.Password, a.PasswordFile)
		if err != nil {
			return nil, fmt.Errorf("kafka.schema_registry_auth.password_file: %w", err)
		}
		opts = append(opts, schemas.WithBasicAuth(a.Username, pw))
	}
	rc, err := schemas.NewRegistryClient(k.SchemaRegistry, hc, opts...)
	if err != nil {
		return nil, fmt.Errorf("kafka.schema_registry_url: %w", err)
	}
	return rc, nil
}

// Security is how lakewap reaches Kafka: TLS and SASL from kafka.tls and
// kafka.sasl, the password read from its file when it has one.
func (k Kafka) Security() (kafka.Security, error) {
	var s kafka.Security
	if t := k.TLS; t != nil {
		s.TLS = &kafka.TLSConfig{CAFile: t.CAFile, CertFile: t.CertFile, KeyFile: t.KeyFile, ServerName: t.ServerName, InsecureSkipVerify: t.InsecureSkipVerify}
	}
	if a := k.SASL; a != nil {
		pw, err := ReadSecret(a.Password, a.PasswordFile)
		if err != nil {
			return s, fmt.Errorf("kafka.sasl.password_file: %w", err)
		}
		s.SASL = &kafka.SASLConfig{Mechanism: a.Mechanism, Username: a.Username, Password: pw}
	}
	return s, nil
}

// topicFields maps each topic setting to its topic.
func (k Kafka) topicFields() map[string]string {
	return map[string]string{"kafka.input_topic": k.InputTopic, "kafka.requests_topic": k.RequestsTopic, "kafka.results_topic": k.ResultsTopic,
		"kafka.dead_letter_topic": k.DeadLetterTopic, "kafka.changelog_topic": k.ChangelogTopic}
}

// TopicField names the setting of topic name ("kafka.input_topic"), or
// "kafka" when none has it.
func (k Kafka) TopicField(name string) string {
	for field, t := range k.topicFields() {
		if t == name {
			return field
		}
	}
	return "kafka"
}

// Topics are the topics lakewap creates when kafka.create_topics is not
// false: input, results and dead letters with kafka.partitions, the
// requests topic and the compacted changelog with the input's count.
func (k Kafka) Topics() []kafka.TopicSpec {
	changelog := consumer.ChangelogTopic(k.ChangelogTopic, k.InputTopic)
	changelog.ReplicationFactor = k.ReplicationFactor
	// Requests partition N is read by the owner of input partition N (one
	// group, the range assignor): with another count, a request would reach
	// a runner that does not hold its batch's run.
	requests := kafka.TopicSpec{Name: k.RequestsTopic, ReplicationFactor: k.ReplicationFactor, SamePartitionsAs: k.InputTopic,
		SameWhy: fmt.Sprintf("requests partition N is handled by the owner of %s partition N, which holds the runs of the batch ids its key gives", k.InputTopic)}
	return []kafka.TopicSpec{{Name: k.InputTopic, Partitions: k.Partitions, ReplicationFactor: k.ReplicationFactor},
		requests,
		{Name: k.ResultsTopic, Partitions: k.Partitions, ReplicationFactor: k.ReplicationFactor},
		{Name: k.DeadLetterTopic, Partitions: k.Partitions, ReplicationFactor: k.ReplicationFactor}, changelog}
}

// TopicSpecs are the topics of Kafka.Topics, each with the largest record
// batch lakewap writes to it, which its max.message.bytes must take
// (kafka.TopicSpec.MinMessageBytes): a run record (runner.max_run_bytes,
// with its key, seal and mark), the largest result event that cannot be
// made smaller (notify.MinMaxMessageBytes), a dead letter without its
// original (its key cut to 1 KiB, wap.dlq.error to 2 KiB). With
// runner.state_key_file the changelog also takes a restore's writes
// (runstore.MaxWriteBytes).
func (c *Config) TopicSpecs() []kafka.TopicSpec {
	specs := c.Kafka.Topics()
	changelog := consumer.ChangelogTopic(c.Kafka.ChangelogTopic, c.Kafka.InputTopic).Name
	for i := range specs {
		switch specs[i].Name {
		case changelog:
			specs[i].MinMessageBytes = c.Runner.MaxRunBytes + changelogSlack
			specs[i].Need = fmt.Sprintf("a run record may take (runner.max_run_bytes %d, with its key, seal and mark)", c.Runner.MaxRunBytes)
			if c.Runner.StateKeyFile != "" && runstore.MaxWriteBytes > specs[i].MinMessageBytes {
				specs[i].MinMessageBytes = runstore.MaxWriteBytes
				specs[i].Need = "a restore's writes take with runner.state_key_file (marks, records written again, tombstones)"
			}
		case c.Kafka.ResultsTopic:
			specs[i].MinMessageBytes = notify.MinMaxMessageBytes
			specs[i].Need = "the largest result event that cannot be made smaller takes (a BranchReady naming 256 expected writes)"
		case c.Kafka.DeadLetterTopic:
			specs[i].MinMessageBytes = minDeadLetterBytes
			specs[i].Need = "a dead letter without its original value takes (its key, wap.dlq.error and the other wap.dlq headers)"
		}
	}
	return specs
}

// changelogSlack is what a run record's write takes beyond the record's
// budget: its key (at most 329 bytes), runstore's seal (173) and the last
// mark written with it (238), and the record batch's framing.
const changelogSlack = 4 << 10

// minDeadLetterBytes holds a dead letter written without its original:
// its key cut to 1 KiB, wap.dlq.error (consumer.MaxDLQErrorBytes) and the
// other wap.dlq headers, in a record batch.
const minDeadLetterBytes = 8 << 10

// Sinks are the result sinks after results (the Kafka results sink): the
// console sink writing to console and Slack, as notify.* configures them,
// and the routes of notify.routes (by default every outcome to every sink
// but results).
func (c *Config) Sinks(results notify.Sink, console io.Writer, reg prometheus.Registerer, log *slog.Logger) ([]notify.Sink, []notify.Route, error) {
	sinks := []notify.Sink{results}
	if c.Notify.Console {
		con, err := notify.NewConsole(console, c.LakeFS.UIURL)
		if err != nil {
			return nil, nil, fmt.Errorf("notify.console: %w", err)
		}
		sinks = append(sinks, con)
	}
	if s := c.Notify.Slack; s != nil {
		token, err := ReadSecret(s.Token, s.TokenFile)
		if err != nil {
			return nil, nil, fmt.Errorf("notify.slack.token_file: %w", err)
		}
		hook, err := ReadSecret(s.WebhookURL, s.WebhookURLFile)
		if err != nil {
			return nil, nil, fmt.Errorf("notify.slack.webhook_url_file: %w", err)
		}
		var sl notify.Sink
		if token != "" {
			sl, err = notify.NewSlack(notify.SlackConfig{Name: "slack", Token: token, Channel: s.Channel, LakeFSURL: c.LakeFS.UIURL, APIURL: s.APIURL, Logger: log,
				Scope: c.SlackScope()})
		} else {
			sl, err = notify.NewSlackWebhook(notify.SlackWebhookConfig{Name: "slack", URL: hook, LakeFSURL: c.LakeFS.UIURL})
		}
		if err != nil {
			return nil, nil, fmt.Errorf("notify.slack: %w", err)
		}
		if s.RateBurst >= 0 {
			lc := s.Limit()
			lc.Registerer, lc.Logger = reg, log
			sl = notify.Limit(sl, lc)
		}
		sinks = append(sinks, sl)
	}
	var routes []notify.Route
	for _, r := range c.Notify.Routes {
		routes = append(routes, notify.Route{Sink: r.Sink, Datasets: r.Datasets, On: r.On, Mention: r.Mention, Channel: r.Channel})
	}
	if len(routes) == 0 {
		for _, s := range sinks[1:] {
			routes = append(routes, notify.Route{Sink: s.Name()})
		}
	}
	return sinks, routes, nil
}

// JanitorDatasets are the datasets as the janitor knows them, by name.
func (c *Config) JanitorDatasets() []janitor.Dataset {
	var out []janitor.Dataset
	for _, n := range slices.Sorted(maps.Keys(c.Datasets)) {
		d := c.Datasets[n]
		out = append(out, janitor.Dataset{Name: n, Repository: d.Repository, Target: d.Target, Source: d.Source,
			SourceRefs: d.SourceRefs, AbortedRetention: d.AbortedRetention.Std()})
	}
	return out
}

// AuditDatasets maps each dataset to what the audit service needs.
func (c *Config) AuditDatasets() map[string]audit.Dataset {
	out := make(map[string]audit.Dataset, len(c.Datasets))
	for name, d := range c.Datasets {
		out[name] = audit.Dataset{Repository: d.Repository, Target: d.Target, Suite: d.Suite, Full: d.AuditMode == AuditModeFull, AllowedPaths: d.AllowedPaths}
	}
	return out
}

// AuditOptions are the audit engine's options from audit.*, reading the
// tables through src.
func (c *Config) AuditOptions(src audit.Source, log *slog.Logger) audit.Options {
	a := c.Audit
	key, _ := c.AttestationKey() // validated at load
	o := audit.Options{Source: src, WorkDir: a.WorkDir, CacheDir: a.CacheDir, CacheMaxBytes: a.CacheMaxMB << 20,
		MemoryLimit: a.MemoryLimit, Threads: a.Threads, DownloadParallelism: a.DownloadParallelism,
		SampleRows: a.SampleRows, MaxSampleValueBytes: a.MaxSampleValueBytes, MaxReportBytes: a.MaxReportBytes, Logger: log,
		MaxFiles: a.MaxFiles, MaxBytes: a.MaxBytes, MaxListObjects: a.MaxListObjects, MaxLogFileBytes: a.MaxLogFileBytes,
		ClockSkew: a.ClockSkew.Std(), QueryTimeout: a.QueryTimeout.Std(),
		StatsDir: a.StatsDir, AttestationKey: key, Blockstore: c.Blockstore()}
	if a.Blockstore != nil {
		o.StatTimeout = a.Blockstore.Timeout.Std()
	}
	return o
}

// Blockstore reads lakeFS's blockstore as audit.blockstore says; nil
// without it.
func (c *Config) Blockstore() audit.Blockstore {
	b := c.Audit.Blockstore
	if b == nil {
		return nil
	}
	switch b.Type {
	case BlockstoreLocal:
		return blockstore.Local{Root: b.Path}
	case BlockstoreS3:
		secret, _ := ReadSecret(b.SecretAccessKey, b.SecretAccessKeyFile) // validated at load
		return blockstore.S3{Endpoint: b.Endpoint, Region: b.Region, AccessKeyID: b.AccessKeyID, SecretAccessKey: secret,
			PathStyle: b.ForcePathStyle, Client: &http.Client{}}
	}
	return nil // refused at load
}

// Blockstore types (audit.blockstore.type).
const (
	BlockstoreLocal = "local"
	BlockstoreS3    = "s3"
)

// validate checks audit.blockstore.
func (b *Blockstore) validate(bad func(field, format string, args ...any)) {
	if b == nil {
		return
	}
	const f = "audit.blockstore"
	switch b.Type {
	case BlockstoreLocal:
		if b.Path == "" || !filepath.IsAbs(b.Path) {
			bad(f+".path", "%q must be lakeFS's blockstore.local.path, an absolute path", b.Path)
		} else if st, err := os.Stat(b.Path); err != nil || !st.IsDir() {
			bad(f+".path", "%s is not a directory lakewap can read (lakeFS's blockstore.local.path)", b.Path)
		}
	case BlockstoreS3:
		if b.Region == "" {
			bad(f+".region", "required with type s3 (the bucket's region, e.g. eu-west-1)")
		}
		if e := b.Endpoint; e != "" && !strings.HasPrefix(e, "http://") && !strings.HasPrefix(e, "https://") {
			bad(f+".endpoint", "%q must start with http:// or https://", e)
		}
		if b.AccessKeyID == "" {
			bad(f+".access_key_id", "required with type s3")
		}
		if secret, err := ReadSecret(b.SecretAccessKey, b.SecretAccessKeyFile); err != nil {
			bad(f+".secret_access_key_file", "%v", err)
		} else if secret == "" {
			bad(f+".secret_access_key", "required with type s3 (or secret_access_key_file)")
		}
	default:
		bad(f+".type", "%q is not local or s3", b.Type)
	}
	if b.Type != BlockstoreLocal && b.Path != "" {
		bad(f+".path", "is for type local")
	}
	if b.Type != BlockstoreS3 && (b.Endpoint != "" || b.Region != "" || b.AccessKeyID != "" || b.SecretAccessKey != "" || b.SecretAccessKeyFile != "" || b.ForcePathStyle) {
		bad(f+".type", "endpoint, region, access_key_id, secret_access_key(_file) and force_path_style are for type s3")
	}
	if b.Timeout.Std() < 0 {
		bad(f+".timeout", "must not be negative")
	}
}

// MaxRunAge is the longest a run can be in progress while its partition has
// an owner: the deadline horizon, the wait for a lagging partition, and the
// retries of its three steps. The janitor cancels runs older than that.
func (c *Config) MaxRunAge() time.Duration {
	r := c.Runner
	return r.MaxDeadlineHorizon.Std() + r.MaxLagWait.Std() + 3*(r.RetryBudget.Std()+r.StepTimeout.Std())
}

// Errors is every problem found in a config, each naming its field.
type Errors []error

func (e Errors) Error() string {
	s := make([]string, len(e))
	for i, err := range e {
		s[i] = err.Error()
	}
	return strings.Join(s, "\n")
}

// Unwrap lets errors.Is/As look inside.
func (e Errors) Unwrap() []error { return e }

var datasetName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$`)

// branchName is lakeFS's rule for branch names; hexName is a name of a
// commit id's form: 64 hex digits lakewap takes for one (audit.IsCommitID),
// 40 to 63 still refused, as before review 54 made lakewap take 64 only
// (lakeFS resolves a shorter one as a prefix of a commit's id where no
// branch or tag has the name).
var (
	branchName = regexp.MustCompile(`^\w[-\w]*$`)
	hexName    = regexp.MustCompile(`^[0-9a-fA-F]{40,64}$`)
)

// kafkaTopicName is what Kafka accepts as a topic name.
var kafkaTopicName = regexp.MustCompile(`^[A-Za-z0-9._-]{1,249}$`)

// Validate checks every field of a config with its defaults applied and
// returns Errors naming each bad one.
func (c *Config) Validate() error {
	var errs Errors
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", field, fmt.Sprintf(format, args...)))
	}
	badIf := func(cond bool, field, format string, args ...any) {
		if cond {
			bad(field, format, args...)
		}
	}
	badIf(len(c.Kafka.Brokers) == 0, "kafka.brokers", "at least one broker (host:port) is required")
	for i, b := range c.Kafka.Brokers {
		badIf(!strings.Contains(b, ":"), fmt.Sprintf("kafka.brokers[%d]", i), "%q is not host:port", b)
	}
	topics := map[string]string{}
	for field, t := range c.Kafka.topicFields() {
		if other, dup := topics[t]; dup {
			bad(max(field, other), "topic %q is also %s; every topic must be distinct", t, min(field, other))
		}
		topics[t] = field
	}
	badIf(c.Kafka.Partitions < 1, "kafka.partitions", "must be at least 1")
	if err := schemas.ValidDeployment(c.Kafka.DeploymentID); err != nil {
		bad("kafka.deployment_id", "%v", err)
	}
	names := map[string]bool{}
	for i, o := range c.Operators {
		field := fmt.Sprintf("operators[%d]", i)
		switch {
		case !operatorName.MatchString(o.Name):
			bad(field+".name", "%q: want 1 to 128 letters, digits, _ . @ -", o.Name)
		case names[o.Name]:
			bad(field+".name", "%q is listed twice", o.Name)
		case (o.Key == "") == (o.KeyFile == ""):
			bad(field, "set key or key_file (one of them)")
		case o.KeyFile == "" && len(strings.TrimSpace(o.Key)) < 16:
			bad(field+".key", "must be at least 16 bytes")
		}
		names[o.Name] = true
	}
	if t := c.Kafka.TLS; t != nil && (t.CertFile == "") != (t.KeyFile == "") {
		bad("kafka.tls", "cert_file and key_file must be set together")
	}
	if s := c.Kafka.SASL; s != nil {
		badIf(!slices.Contains([]string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}, strings.ToUpper(s.Mechanism)),
			"kafka.sasl.mechanism", "%q is not one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512", s.Mechanism)
		badIf(s.Username == "", "kafka.sasl.username", "required with SASL")
		badIf(s.Password == "" && s.PasswordFile == "", "kafka.sasl.password", "required with SASL (or password_file)")
	}
	if a := c.Kafka.SchemaRegistryAuth; a != nil {
		badIf(c.Kafka.SchemaRegistry == "", "kafka.schema_registry_auth", "needs kafka.schema_registry_url")
		badIf(a.Username == "", "kafka.schema_registry_auth.username", "required with schema_registry_auth")
		badIf(a.Password == "" && a.PasswordFile == "", "kafka.schema_registry_auth.password", "required with schema_registry_auth (or password_file)")
	}
	if t := c.Kafka.SchemaRegistryTLS; t != nil {
		badIf(c.Kafka.SchemaRegistry == "", "kafka.schema_registry_tls", "needs kafka.schema_registry_url")
		badIf((t.CertFile == "") != (t.KeyFile == ""), "kafka.schema_registry_tls", "cert_file and key_file must be set together")
	}
	endpoint := c.LakeFS.Endpoint
	badIf(endpoint == "", "lakefs.endpoint", "required (e.g. http://lakefs:8000)")
	badIf(endpoint != "" && !strings.HasPrefix(endpoint, "http://") && !strings.HasPrefix(endpoint, "https://"),
		"lakefs.endpoint", "%q must start with http:// or https://", endpoint)
	badIf(c.LakeFS.AccessKeyID == "", "lakefs.access_key_id", "required")
	badIf(c.LakeFS.SecretAccessKey == "" && c.LakeFS.SecretAccessKeyFile == "", "lakefs.secret_access_key", "required (or secret_access_key_file)")
	badIf(c.Audit.MaxAttempts < 1, "audit.max_attempts", "%d must be at least 1 (0 keeps the default %d): the audits of a batch that may take the process down before it is aborted audit_crashed",
		c.Audit.MaxAttempts, pipeline.DefaultPolicy.MaxAuditAttempts)
	c.Audit.Blockstore.validate(bad)
	badIf(c.Audit.MaxReportBytes < 0 || 4*c.Audit.MaxReportBytes > c.Runner.MaxRunBytes, "audit.max_report_bytes", "%d must be between 0 and a quarter of runner.max_run_bytes (a run stores its report up to three times)", c.Audit.MaxReportBytes)
	badIf(c.Lineage.URL != "" && !strings.HasPrefix(c.Lineage.URL, "http://") && !strings.HasPrefix(c.Lineage.URL, "https://"),
		"lineage.url", "%q must start with http:// or https://", c.Lineage.URL)
	badIf(c.Lineage.Timeout.Std() < 0, "lineage.timeout", "must not be negative")
	if c.Tracing.OTLPEndpoint != "" {
		if field, msg := c.TracingOptions("").Validate(); field != "" {
			badIf(true, "tracing."+field, "%s", msg)
		}
	} else {
		badIf(c.Tracing.Protocol != "" || len(c.Tracing.Headers) > 0 || c.Tracing.SampleRatio != nil, "tracing.otlp_endpoint",
			"required when other tracing keys are set (without it no spans are sent)")
	}
	badIf(c.Lineage.URL != "" && c.Lineage.Kafka.Topic != "", "lineage.kafka.topic", "set lineage.url or lineage.kafka.topic, not both")
	badIf(c.Lineage.Kafka.Topic != "" && !kafkaTopicName.MatchString(c.Lineage.Kafka.Topic), "lineage.kafka.topic",
		"%q is not a Kafka topic name (1 to 249 of a-z A-Z 0-9 . _ -)", c.Lineage.Kafka.Topic)
	// lakewap writes its lineage JSON there: on one of its own topics it
	// would read it back as input, restore runs from it or send it to the
	// consumers of its Avro results.
	if field, ok := topics[c.Lineage.Kafka.Topic]; ok && c.Lineage.Kafka.Topic != "" {
		bad("lineage.kafka.topic", "topic %q is also %s; lineage events need a topic of their own", c.Lineage.Kafka.Topic, field)
	}
	badIf(c.Lineage.MaxEventBytes < 0 || c.Lineage.MaxEventBytes > 1<<20, "lineage.max_event_bytes", "%d must be between 0 and 1048576 (Kafka's default message size)", c.Lineage.MaxEventBytes)
	badIf(c.HTTP.RunsToken != "" && c.HTTP.RunsTokenFile != "", "http.runs_token", "set runs_token or runs_token_file, not both")
	badIf(c.HTTP.RunsToken != "" && c.HTTP.RunsToken == c.HTTP.WebhookToken, "http.runs_token", runsTokenIsWebhooks)
	if c.HTTP.Listen != "" {
		switch c.HTTP.WebhookMode() {
		case WebhookToken:
			switch {
			case c.HTTP.WebhookToken != "" && c.HTTP.WebhookTokenFile != "":
				bad("http.webhook_token", "set webhook_token or webhook_token_file, not both")
			case c.HTTP.WebhookTokenFile != "":
			case strings.TrimSpace(c.HTTP.WebhookToken) == "":
				bad("http.webhook_token", "empty: the pre-merge webhook needs a token (webhook_token or webhook_token_file); "+
					"set http.webhook: off to serve only metrics and health, or http.webhook: open to serve it to anyone")
			}
		case WebhookOpen, WebhookOff:
			badIf(c.HTTP.WebhookToken != "" || c.HTTP.WebhookTokenFile != "", "http.webhook_token", "set, but http.webhook is %s", c.HTTP.Webhook)
		default:
			bad("http.webhook", "%q is not token, open or off", c.HTTP.Webhook)
		}
		badIf(c.HTTP.Runs != "" && c.HTTP.Runs != "on" && c.HTTP.Runs != "off", "http.runs", "%q is not on or off", c.HTTP.Runs)
		badIf(c.HTTP.WebhookConcurrency < 0, "http.webhook_concurrency", "must not be negative")
		hook, call := c.HTTP.WebhookAuditTimeout.Std(), c.LakeFS.Timeout.Std()
		badIf(hook < 0, "http.webhook_audit_timeout", "must not be negative")
		badIf(hook >= 0 && hook >= call && c.HTTP.WebhookMode() != WebhookOff, "http.webhook_audit_timeout",
			"%s is not below lakefs.timeout %s: lakewap's own merge call would give up while the hook it triggered still audits", hook, call)
	}
	badIf(c.Runner.MaxRunBytes < minRunBytes || c.Runner.MaxRunBytes > 900<<10, "runner.max_run_bytes", "%d is outside %d..%d (the changelog's and results topic's message size must hold a run)", c.Runner.MaxRunBytes, minRunBytes, 900<<10)
	badIf(c.Kafka.ResultsMaxMessageBytes > 0 && c.Kafka.ResultsMaxMessageBytes < notify.MinMaxMessageBytes, "kafka.results_max_message_bytes",
		"%d is less than %d: a result event that cannot be made smaller (a BranchReady naming 256 expected writes is about 35 KB) would be refused for ever", c.Kafka.ResultsMaxMessageBytes, notify.MinMaxMessageBytes)
	badIf(c.Runner.MaxOpenRuns < -1, "runner.max_open_runs", "must be -1 (no limit), 0 (default %d) or positive", pipeline.DefaultPolicy.MaxOpenRuns)
	badIf(c.Runner.MaxPendingRuns < -1, "runner.max_pending_runs", "must be -1 (no limit), 0 (default %d) or positive", pipeline.DefaultPolicy.MaxPendingRuns)
	badIf(c.Runner.MaxFinishedRuns < -1, "runner.max_finished_runs", "must be -1 (no limit), 0 (default %d) or positive", pipeline.DefaultPolicy.MaxFinishedRuns)
	badIf(c.Notify.SlackBudget != 0 && (c.Notify.SlackBudget.Std() < MinSlackBudget || c.Notify.SlackBudget.Std() > MaxSlackBudget), "notify.slack_budget",
		"%s must be between %s and %s (0 keeps the default %s): a graceful stop awaits Slack messages still going out that long and a second more",
		c.Notify.SlackBudget.Std(), MinSlackBudget, MaxSlackBudget, DefaultSlackBudget)
	badIf(c.Notify.BestEffortWait < 0 || c.Notify.BestEffortWait.Std() > c.Notify.SlackBudgetOrDefault(), "notify.best_effort_wait",
		"%s must be between 0 (default %s) and %s, Slack's budget for one notification (notify.slack_budget; a longer wait waits for nothing more)",
		c.Notify.BestEffortWait.Std(), DefaultBestEffortWait, c.Notify.SlackBudgetOrDefault())
	for _, b := range []struct {
		field string
		n     int
	}{{"runner.max_open_bytes", c.Runner.MaxOpenBytes}, {"runner.max_finished_bytes", c.Runner.MaxFinishedBytes}} {
		// One batch's attributes and writes may take up to a run record:
		// a bound below it would refuse or forget such a batch's run alone.
		badIf(b.n < -1 || (b.n > 0 && b.n < c.Runner.MaxRunBytes), b.field,
			"%d must be -1 (no limit), 0 (default %d) or at least runner.max_run_bytes %d (one batch's attributes and writes may take a whole run record)",
			b.n, pipeline.DefaultPolicy.MaxOpenBytes, c.Runner.MaxRunBytes)
	}
	for _, d := range []struct {
		field string
		n     int64
	}{{"kafka.commit_interval", int64(c.Kafka.CommitInterval)}, {"kafka.session_timeout", int64(c.Kafka.SessionTimeout)},
		{"lakefs.timeout", int64(c.LakeFS.Timeout)}, {"runner.step_timeout", int64(c.Runner.StepTimeout)},
		{"runner.retry_budget", int64(c.Runner.RetryBudget)}, {"runner.pending_ttl", int64(c.Runner.PendingTTL)},
		{"runner.shutdown_grace", int64(c.Runner.Grace)}, {"runner.terminal_retention", int64(c.Runner.TerminalRetention)},
		{"runner.max_lag_wait", int64(c.Runner.MaxLagWait)}, {"runner.max_deadline_horizon", int64(c.Runner.MaxDeadlineHorizon)},
		{"runner.rejected_retention", int64(c.Runner.RejectedRetention)},
		{"kafka.results_max_message_bytes", int64(c.Kafka.ResultsMaxMessageBytes)}, {"audit.cache_max_mb", c.Audit.CacheMaxMB},
		{"audit.max_sample_value_bytes", int64(c.Audit.MaxSampleValueBytes)}, {"runner.max_in_flight", int64(c.Runner.MaxInFlight)},
		{"audit.max_files", int64(c.Audit.MaxFiles)}, {"audit.max_bytes", c.Audit.MaxBytes},
		{"audit.max_list_objects", int64(c.Audit.MaxListObjects)}, {"audit.max_log_file_bytes", c.Audit.MaxLogFileBytes},
		{"audit.clock_skew", int64(c.Audit.ClockSkew)}, {"audit.query_timeout", int64(c.Audit.QueryTimeout)}} {
		badIf(d.n < 0, d.field, "must not be negative")
	}
	badIf(!slices.Contains([]string{"json", "text"}, c.Log.Format), "log.format", "%q is not json or text", c.Log.Format)
	badIf(!slices.Contains([]string{"debug", "info", "warn", "error"}, c.Log.Level), "log.level", "%q is not debug, info, warn or error", c.Log.Level)
	if s := c.Notify.Slack; s != nil {
		badIf(s.Token == "" && s.TokenFile == "" && s.WebhookURL == "" && s.WebhookURLFile == "", "notify.slack", "needs token (or token_file) or webhook_url (or webhook_url_file)")
		badIf((s.Token != "" || s.TokenFile != "") && s.Channel == "", "notify.slack.channel", "required with a bot token")
	}
	for i, r := range c.Notify.Routes {
		f := fmt.Sprintf("notify.routes[%d]", i)
		badIf(!slices.Contains([]string{"slack", "console", "kafka"}, r.Sink), f+".sink", "%q is not slack, console or kafka", r.Sink)
		if r.Channel != "" {
			s := c.Notify.Slack
			badIf(r.Sink != "slack" || s == nil || (s.Token == "" && s.TokenFile == ""), f+".channel",
				"a route's channel needs sink slack with a bot token (notify.slack.token): an incoming webhook posts to its own channel")
		}
		// A pending run (writes before their BatchLanded) notifies no one.
		routable := slices.DeleteFunc(schemas.States(), func(s string) bool { return s == schemas.StatePending })
		for j, o := range r.On {
			badIf(!slices.Contains(routable, o), fmt.Sprintf("%s.on[%d]", f, j), "%q is not one of %s", o, strings.Join(routable, ", "))
		}
		for j, d := range r.Datasets {
			if _, ok := c.Datasets[d]; !ok {
				bad(fmt.Sprintf("%s.datasets[%d]", f, j), "unknown dataset %q", d)
			}
		}
	}
	badIf(c.Janitor.Interval < 0 || (c.Janitor.Interval > 0 && c.Janitor.Interval < Duration(time.Minute)), "janitor.interval", "must be at least 1m (it lists every repository's branches)")
	badIf(c.Janitor.AbandonedAfter < 0, "janitor.abandoned_after", "must not be negative")
	if k, err := c.AttestationKey(); err != nil {
		bad("audit.attestation_key_file", "%v", err)
	} else if k != nil && len(k) < 16 {
		bad("audit.attestation_key", "must be at least 16 bytes")
	}
	badIf(len(c.Datasets) == 0, "datasets", "at least one dataset is required")
	for _, n := range slices.Sorted(maps.Keys(c.Datasets)) {
		d := c.Datasets[n]
		f := "datasets." + n
		badIf(!datasetName.MatchString(n), f, "dataset name must match %s", datasetName)
		badIf(d.Repository == "", f+".repository", "required")
		switch {
		case !branchName.MatchString(d.Target):
			bad(f+".target", "%q is not a lakeFS branch name (%s): lakewap merges into a branch", d.Target, branchName)
		case hexName.MatchString(d.Target):
			// lakewap takes such a name for a commit id, whose listings and
			// merge-bases never change, so it would not see the branch move.
			bad(f+".target", "%q is %d hex digits, which lakewap would take for a commit id: name the target branch otherwise", d.Target, len(d.Target))
		}
		badIf(d.WriteTimeout < 0, f+".write_timeout", "must not be negative")
		badIf(d.MaxWriteTimeout < 0, f+".max_write_timeout", "must not be negative")
		badIf(d.MaxWriteTimeout > 0 && d.MaxWriteTimeout < d.WriteTimeout, f+".max_write_timeout",
			"%s is shorter than write_timeout %s: every batch without a deadline of its own would be cut short", time.Duration(d.MaxWriteTimeout), time.Duration(d.WriteTimeout))
		if h := c.Runner.MaxDeadlineHorizon.Std(); d.WriteTimeout.Std() > h {
			bad(f+".write_timeout", "%s is longer than runner.max_deadline_horizon %s", time.Duration(d.WriteTimeout), h)
		}
		badIf(d.AbortedRetention < 0, f+".aborted_retention", "must not be negative")
		for i, p := range d.AllowedPaths {
			badIf(strings.TrimSpace(p) == "" || strings.HasPrefix(p, "/"), fmt.Sprintf("%s.allowed_paths[%d]", f, i), "%q must be a non-empty path prefix relative to the repository root", p)
			badIf(holdsActions(p), fmt.Sprintf("%s.allowed_paths[%d]", f, i), actionsProblem, p)
		}
		for i, t := range d.Tables {
			badIf(holdsActions(t.Path), fmt.Sprintf("%s.tables[%d].path", f, i), actionsProblem, t.Path)
		}
		for i, r := range d.SourceRefs {
			badIf(strings.TrimSpace(r) == "", fmt.Sprintf("%s.source_refs[%d]", f, i), "must not be empty")
		}
		badIf(d.AuditMode != "" && d.AuditMode != AuditModeFull && d.AuditMode != AuditModeIncremental, f+".audit_mode",
			"unknown audit mode %q (want incremental or full)", d.AuditMode)
		errs = append(errs, d.Suite.Validate(f)...)
	}
	errs = append(errs, c.sharedTables()...)
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// sharedTables refuses a table path that two datasets of one repository
// and target declare with another format or other markers. Each is the
// other's neighbor (audit/neighbors.go): a batch of one is judged by the
// other's checks, which must read the path as the batch's own audit does.
// In another format they read the batch's files as what they are not, err
// at the batch and on the target alike and are excused as failing there
// already; with other markers an object one skips as a marker the other
// takes for data. Paths that only overlap (one under the other) are judged
// at run time: a neighbor's unaudited_objects holds a batch back.
func (c *Config) sharedTables() Errors {
	type decl struct {
		field   string
		format  string
		markers []string
	}
	var errs Errors
	first := map[[3]string]decl{}
	for _, n := range slices.Sorted(maps.Keys(c.Datasets)) {
		d := c.Datasets[n]
		for i, t := range d.Suite.Tables {
			k := [3]string{d.Repository, d.Target, strings.TrimSuffix(t.Path, "/")}
			this := decl{field: fmt.Sprintf("datasets.%s.tables[%d]", n, i), format: cmp.Or(t.Format, audit.FormatParquet), markers: t.Markers}
			prev, ok := first[k]
			if !ok {
				first[k] = this
				continue
			}
			shared := fmt.Sprintf("for the path %s both publish into %s/%s: a batch of either is judged by the other's checks", t.Path, d.Repository, d.Target)
			if this.format != prev.format {
				errs = append(errs, fmt.Errorf("%s.format: %q differs from %s.format %q %s; declare the table alike", this.field, this.format, prev.field, prev.format, shared))
			}
			if !slices.Equal(sortedMarkers(this.markers), sortedMarkers(prev.markers)) {
				errs = append(errs, fmt.Errorf("%s.markers: %s differ from %s.markers %s %s, and an object one skips as a marker the other takes for data; list the same markers",
					this.field, markersText(this.markers), prev.field, markersText(prev.markers), shared))
			}
		}
	}
	return errs
}

// sortedMarkers are a table's marker patterns as the audit takes them
// (audit.DefaultMarkers when none are listed), sorted, each once: a
// pattern listed twice skips the same objects as once.
func sortedMarkers(m []string) []string {
	if m == nil {
		m = audit.DefaultMarkers
	}
	return slices.Compact(slices.Sorted(slices.Values(m)))
}

func markersText(m []string) string {
	if m == nil {
		return fmt.Sprintf("%v (the default)", audit.DefaultMarkers)
	}
	return fmt.Sprintf("%v", m)
}

// Audit modes of a dataset (audit_mode).
const (
	AuditModeIncremental = "incremental"
	AuditModeFull        = "full"
)

// AttestationKey is audit.attestation_key (or the content of
// attestation_key_file); nil when neither is set.
func (c *Config) AttestationKey() ([]byte, error) {
	k, err := ReadSecret(c.Audit.AttestationKey, c.Audit.AttestationKeyFile)
	if err != nil || k == "" {
		return nil, err
	}
	return []byte(k), nil
}

// Unguarded names, one line each, what this config leaves to be forged
// because a key is not set: the daemon logs each at start, lakewap
// validate and lakewap verify print them. Only keys the config reads
// itself (state key, attestation key) are named; a key it could not read
// is Validate's error, not named here.
func (c *Config) Unguarded() []string {
	var out []string
	for _, key := range SigningKeys {
		if w := c.unguarded(key); w != "" {
			out = append(out, w)
		}
	}
	return out
}

// SigningKeys are the keys Unguarded names when they are not set (the
// daemon's lakewap_signing_key_unset gauge has a series for each).
var SigningKeys = []string{"runner.state_key_file", "audit.attestation_key", "operators"}

// Unset says whether signing key (one of SigningKeys) is left unset where
// its absence lets records be forged.
func (c *Config) Unset(key string) bool { return c.unguarded(key) != "" }

func (c *Config) unguarded(key string) string {
	switch key {
	case "runner.state_key_file":
		if c.Runner.StateKeyFile == "" {
			return "runner.state_key_file is not set: run records in the changelog are not authenticated, and anyone who can write " +
				c.Kafka.ChangelogTopic + " can steer lakewap"
		}
	case "operators":
		if len(c.Operators) == 0 {
			return "operators is not set: requests on " + c.Kafka.RequestsTopic + " are not signed, and anyone who can write it " +
				"(every client, on a cluster without ACLs) can retry, cancel and revert batches: a revert takes a published batch off its target"
		}
	case "audit.attestation_key":
		if k, err := c.AttestationKey(); err == nil && k == nil && c.Audit.IncrementalOn() {
			return "audit.attestation_key is not set: publishes' attestations are not signed, so whoever may move a dataset's target " +
				"to a commit record naming lakewap's lakeFS user (lakeFS's createCommitRecord names any committer) with an attestation written " +
				"to match it makes the dataset's next audit read only the batch's rows, and lakewap verify lists that commit attested (unsigned)"
		}
	}
	return ""
}

// Defaults of the pre-merge webhook's audit timeout and of a lakeFS call.
const (
	DefaultWebhookAuditTimeout = 25 * time.Second
	DefaultLakeFSTimeout       = 30 * time.Second
)

// ReadSecret returns inline if set, else the trimmed content of file.
func ReadSecret(inline, file string) (string, error) {
	if inline != "" || file == "" {
		return inline, nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", errors.New("reading secret file " + file + ": " + err.Error())
	}
	return strings.TrimSpace(string(b)), nil
}

// lakeFS (v1.84.0) reads the pre-merge actions of a merge from its source,
// the batch's sealed commit: a batch allowed to change _lakefs_actions/
// chooses the hook of its own merge and, once published, of every later
// merge into the target, the serialization of several instances included
// (review 48).
const actionsProblem = "%q holds _lakefs_actions/, where lakeFS reads the pre-merge actions of a merge from its source: " +
	"a batch could change or delete lakewap's hook for its own merge and every later one"

// holdsActions says whether a batch may change objects under
// _lakefs_actions/ through the path prefix p (prefixes are matched as
// text, as OutsideTables does).
func holdsActions(p string) bool {
	const actions = "_lakefs_actions/"
	return p != "" && (strings.HasPrefix(actions, p) || strings.HasPrefix(p, actions))
}
