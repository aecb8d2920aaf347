// Package notify tells the world how a Write-Audit-Publish run went: it fans
// one Notification out to several sinks (the result events on Kafka, Slack
// with a bot token or an incoming webhook, a console for the demo), retries
// each sink on its own with backoff that honours Retry-After, and hands back
// receipts that the caller stores in the run state, so that later
// notifications update the same Slack message and a restart does not post
// again.
//
// The Kafka results sink is required: Notify fails when it cannot deliver.
// Every other sink is best effort: its failures are logged and reported as
// pending in the receipts, never returned as errors, so Slack can never
// block or fail a publish.
//
// It may import schemas, kafka-go, slack-go, the Prometheus client and the
// standard library; it imports no other lakewap package.
package notify
