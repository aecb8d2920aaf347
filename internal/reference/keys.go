package reference

// keyDoc is what the reference says of a config key beyond its Go type and
// resolved default: a description where the field has no doc comment (or
// one that does not read well alone), the default where Defaults leaves the
// field zero and a later part applies one, and an example value.
type keyDoc struct {
	desc    string
	def     string
	example string
}

// keyDocs must name every key: TestEveryConfigKeyIsDocumented fails on a
// key without a description, a default (resolved or here) and an example.
var keyDocs = map[string]keyDoc{
	"kafka.brokers":                   {desc: "Bootstrap brokers, host:port.", def: "none (required)", example: `["kafka-1:9092", "kafka-2:9092"]`},
	"kafka.group_id":                  {desc: "Consumer group of the daemon's instances; they share the input partitions."},
	"kafka.input_topic":               {desc: "Topic of producers' input events: BatchLanded, WriteComplete, BatchCancelled."},
	"kafka.requests_topic":            {desc: "Topic of operators' requests (lakewap retry, cancel, revert), apart from producers' inputs so that only operators may write it; requests on the input topic are dead-lettered. Same partition count as the input topic."},
	"kafka.results_topic":             {desc: "Topic of result events: BranchReady, BatchPublished, BatchAborted, BatchFailed, BatchReverted, RequestRefused."},
	"kafka.dead_letter_topic":         {desc: "Topic of the inputs that can never be handled, with the reason in headers."},
	"kafka.changelog_topic":           {desc: "Compacted topic that stores run state, one record per run, same partitions as the input topic."},
	"kafka.partitions":                {desc: "Partitions of the topics lakewap creates when they are missing."},
	"kafka.replication_factor":        {desc: "Replication factor of the topics lakewap creates."},
	"kafka.create_topics":             {desc: "Create missing topics at start-up (with partitions and replication_factor; the changelog compacted).", def: "true", example: "false"},
	"kafka.schema_registry_url":       {desc: "A Confluent-compatible schema registry: lakewap registers its schemas under `<topic>-value` and writes the Confluent wire format; without one, Avro single-object encoding. Decoding reads both.", def: "none (single-object encoding)", example: "https://registry.example.com"},
	"kafka.tls":                       {desc: "TLS to the brokers; absent means plaintext.", def: "none", example: "{ca_file: /run/secrets/kafka_ca.pem}"},
	"kafka.tls.ca_file":               {desc: "PEM file of the CAs that sign the brokers' certificates.", def: "the system's roots", example: "/run/secrets/kafka_ca.pem"},
	"kafka.tls.cert_file":             {desc: "PEM client certificate, for mutual TLS (with key_file).", def: "none", example: "/run/secrets/kafka_client.pem"},
	"kafka.tls.key_file":              {desc: "PEM key of cert_file.", def: "none", example: "/run/secrets/kafka_client.key"},
	"kafka.tls.server_name":           {desc: "Name to verify in the brokers' certificates instead of the host name.", def: "the broker's host", example: "kafka.internal.example.com"},
	"kafka.tls.insecure_skip_verify":  {desc: "Skip verifying the brokers' certificates (tests only).", example: "true"},
	"kafka.sasl":                      {desc: "SASL authentication to the brokers.", def: "none", example: "{mechanism: SCRAM-SHA-512, username: lakewap, password_file: /run/secrets/kafka_password}"},
	"kafka.sasl.mechanism":            {desc: "PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512.", def: "none (required with sasl)", example: "SCRAM-SHA-512"},
	"kafka.sasl.username":             {desc: "SASL user.", def: "none", example: "lakewap"},
	"kafka.sasl.password":             {desc: "SASL password, usually `${ENV}`.", def: "none", example: "${KAFKA_PASSWORD}"},
	"kafka.sasl.password_file":        {desc: "File holding the SASL password (instead of password).", def: "none", example: "/run/secrets/kafka_password"},
	"kafka.commit_interval":           {desc: "How often the consumer commits the offsets of handled inputs."},
	"kafka.session_timeout":           {desc: "Consumer group session timeout: an instance silent this long loses its partitions.", def: "30s", example: "45s"},
	"kafka.results_max_message_bytes": {},

	"lakefs.endpoint":               {desc: "lakeFS server URL (the API is under /api/v1).", def: "none (required)", example: "http://lakefs:8000"},
	"lakefs.access_key_id":          {desc: "lakeFS access key of lakewap's user.", def: "none (required)", example: "${LAKEFS_ACCESS_KEY_ID}"},
	"lakefs.secret_access_key":      {desc: "lakeFS secret key, usually `${ENV}`.", def: "none (this or the file)", example: "${LAKEFS_SECRET_ACCESS_KEY}"},
	"lakefs.secret_access_key_file": {desc: "File holding the lakeFS secret key.", def: "none", example: "/run/secrets/lakefs_secret"},
	"lakefs.ui_url":                 {desc: "lakeFS UI address for links in Slack and console messages.", def: "none (no links)", example: "https://lakefs.example.com"},
	"lakefs.timeout":                {desc: "Deadline of one lakeFS call (a merge waits for the pre-merge hook within it)."},

	"runner.max_in_flight":        {desc: "Steps (branch, seal, audit, merge) running at once per instance."},
	"runner.step_timeout":         {desc: "Deadline of one step, an audit included."},
	"runner.retry_budget":         {desc: "How long lakeFS calls and audits that could not run are retried before the run ends failed."},
	"runner.pending_ttl":          {desc: "How long writes that arrived before their BatchLanded are kept."},
	"runner.shutdown_grace":       {desc: "On SIGTERM, how long in-flight steps may finish before the partitions are handed back."},
	"runner.terminal_retention":   {},
	"runner.max_run_bytes":        {},
	"runner.max_deadline_horizon": {},
	"runner.max_lag_wait":         {},
	"runner.max_open_runs":        {},

	"audit.work_dir":               {desc: "Directory of the audits' downloads and DuckDB's spill files.", def: "$TMPDIR/lakewap-audit", example: "/var/lib/lakewap/audit"},
	"audit.cache_dir":              {desc: "Download cache shared by runs, keyed by each object's physical address.", def: "none (no cache)", example: "/var/lib/lakewap/cache"},
	"audit.memory_limit":           {desc: "DuckDB memory limit, shared by every run in flight.", def: "DuckDB's (80% of RAM)", example: "2GB"},
	"audit.threads":                {desc: "DuckDB threads, shared by every run in flight.", def: "DuckDB's (all cores)", example: "2"},
	"audit.download_parallelism":   {desc: "Concurrent object downloads of one audit.", def: "8", example: "16"},
	"audit.sample_rows":            {desc: "Failing rows a failed check reports.", def: "5", example: "10"},
	"audit.max_sample_value_bytes": {def: "256", example: "512"},
	"audit.max_report_bytes":       {desc: "Budget of one audit report; see docs/limits.md.", def: "32768", example: "65536"},
	"audit.cache_max_mb":           {def: "0 (unbounded)", example: "10240"},

	"notify.console":                {desc: "Print each outcome's message to standard output.", example: "true"},
	"notify.slack":                  {desc: "Slack, by bot token (with channel) or incoming webhook.", def: "none", example: `{token: "${SLACK_BOT_TOKEN}", channel: C0123456}`},
	"notify.slack.token":            {desc: "Bot token (xoxb-...), usually `${ENV}`.", def: "none", example: "${SLACK_BOT_TOKEN}"},
	"notify.slack.token_file":       {desc: "File holding the bot token.", def: "none", example: "/run/secrets/slack_bot_token"},
	"notify.slack.channel":          {desc: "Channel id the bot posts to (required with a token).", def: "none", example: "C0123456"},
	"notify.slack.webhook_url":      {desc: "Incoming webhook URL (instead of a token).", def: "none", example: "${SLACK_WEBHOOK_URL}"},
	"notify.slack.webhook_url_file": {desc: "File holding the incoming webhook URL.", def: "none", example: "/run/secrets/slack_webhook"},
	"notify.slack.api_url":          {desc: "Slack API base URL, for tests against slacktest.", def: "Slack's", example: "http://127.0.0.1:8081/api/"},
	"notify.routes":                 {desc: "Which outcomes go to which sink.", def: "every outcome to every sink", example: `[{sink: slack, on: [aborted, failed]}]`},
	"notify.routes[].sink":          {desc: "slack, console or kafka.", def: "none (required)", example: "slack"},
	"notify.routes[].datasets":      {desc: "Datasets the route is for.", def: "every dataset", example: "[billing]"},
	"notify.routes[].on":            {desc: "Run states the route sends: the states of a run but pending.", def: "every state", example: "[aborted, failed]"},
	"notify.routes[].channel":       {def: "notify.slack.channel", example: "C0BILLING"},
	"notify.routes[].mention":       {desc: "Text put at the start of the Slack message, such as a group mention.", def: "none", example: `"<!subteam^S0123>"`},

	"http.listen":                {desc: "Address of /metrics, /healthz, /readyz and /webhooks/lakefs/pre-merge.", def: "none (no listener)", example: `":9090"`},
	"http.webhook_token":         {example: "${LAKEWAP_WEBHOOK_TOKEN}", def: "none (required with the webhook)"},
	"http.webhook_token_file":    {desc: "File holding webhook_token.", def: "none", example: "/run/secrets/lakewap_hook_token"},
	"http.webhook":               {def: "token", example: "off"},
	"http.webhook_concurrency":   {},
	"http.webhook_audit_timeout": {},

	"log.format": {desc: "json or text."},
	"log.level":  {desc: "debug, info, warn or error."},

	"operators":               {desc: "Operators whose requests the daemon carries out. When any are listed, every request must carry the wap.operator and wap.signature headers (HMAC-SHA256 of the value with the operator's key), and the operator's name replaces requested_by; unsigned or badly signed requests are dead-lettered.", def: "none (requests are not signed)", example: "[{name: alice, key_file: /run/secrets/lakewap_alice}]"},
	"operators[].name":        {desc: "Who asks, as runs, result events and revert commits name them (letters, digits, _ . @ -).", def: "none (required)", example: "alice"},
	"operators[].key":         {desc: "The operator's signing key, at least 16 bytes, usually `${ENV}`.", def: "none", example: "${LAKEWAP_OPERATOR_KEY}"},
	"operators[].key_file":    {desc: "File holding the signing key (instead of key).", def: "none", example: "/run/secrets/lakewap_alice"},
	"janitor.enabled":         {desc: "Run the janitor in the daemon.", def: "true", example: "false"},
	"janitor.interval":        {desc: "Time between sweeps (at least 1m)."},
	"janitor.abandoned_after": {desc: "Age after which branches of published runs, and wap- branches no run owns, are deleted."},
	"janitor.dry_run":         {desc: "Log what would be deleted; delete nothing.", example: "true"},

	"datasets.<name>.repository":                       {desc: "lakeFS repository of the dataset.", def: "none (required)", example: "lake"},
	"datasets.<name>.target":                           {desc: "Branch the batches are published into."},
	"datasets.<name>.source":                           {desc: "Ref a batch's branch is made from when its BatchLanded names none.", def: "the target", example: "main"},
	"datasets.<name>.write_timeout":                    {desc: "How long after BatchLanded the writes may take, when the event sets no deadline."},
	"datasets.<name>.keep_aborted_branch":              {def: "true", example: "false"},
	"datasets.<name>.aborted_retention":                {desc: "Age after which the janitor deletes an aborted or failed run's branch."},
	"datasets.<name>.allowed_paths":                    {def: "none", example: "[manifests/]"},
	"datasets.<name>.source_refs":                      {def: "the source and the target", example: "[main, staging]"},
	"datasets.<name>.checks_from":                      {def: "none", example: "[{dbt: dbt/models/schema.yml}]"},
	"datasets.<name>.checks_from[].great_expectations": {def: "none", example: "ge/billing_suite.json"},
	"datasets.<name>.checks_from[].table":              {def: "the dataset's only table", example: "billing_fact"},
	"datasets.<name>.checks_from[].dbt":                {def: "none", example: "dbt/models/schema.yml"},
	"datasets.<name>.checks_from[].models":             {def: "none", example: "{fct_billing: billing_fact}"},
	"datasets.<name>.checks_from[].skip_unsupported":   {example: "true"},
	"datasets.<name>.tables":                           {desc: "The tables of the dataset.", def: "none (required)", example: "[{name: billing_fact, path: gold/billing_fact/}]"},
	"datasets.<name>.tables[].name":                    {def: "none (required)", example: "billing_fact"},
	"datasets.<name>.tables[].path":                    {def: "none (required)", example: "gold/billing_fact/"},
	"datasets.<name>.tables[].format":                  {def: "parquet", example: "delta"},
	"datasets.<name>.checks":                           {desc: "The dataset's checks: see the [check reference](checks.md).", def: "none", example: "[{kind: not_null, table: billing_fact, column: billing_id}]"},
}
