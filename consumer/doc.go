// Package consumer is lakewap's Kafka edge: a consumer group that hands each
// assigned partition to one worker, commits offsets only up to the last
// contiguous fully-handled message, sends poison messages to a dead-letter
// topic, and keeps per-partition state in a compacted changelog topic.
// Each partition is read read committed by a fetch loop of its own
// (fetch.go, fetchwire.go): no record of an aborted transaction and no
// transaction marker reaches the Handler.
//
// It may import kafka-go, the Prometheus client and the standard library; it
// must not import other lakewap packages (the pipeline plugs in through the
// Handler interface declared here).
package consumer
