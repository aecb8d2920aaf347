// Package devstack runs the embedded lakewap stack used by the demo and by
// tests: an in-process Kafka broker (franz-go's kfake, real wire protocol)
// and the real lakeFS server as a child process with a local KV store and a
// local blockstore, all on 127.0.0.1 free ports under a temp directory.
// With $LAKEWAP_TEST_KAFKA_BROKERS set (or Options.KafkaBrokers), the stack
// uses that Kafka cluster instead of kfake, with topic and group names made
// unique per stack (Stack.Topic, Stack.GroupID) so many stacks can share it.
//
// The lakeFS server and lakectl are built once from the pinned tools module
// (tools/lakefs) into a cache directory and reused afterwards.
//
// It may import kfake, kafka-go (topic administration) and lakeFS's apigen
// client; product packages must not import devstack, only cmd/ and tests do.
package devstack
