// Package schemas holds lakewap's event contracts: the Go event types, their
// Avro schemas (embedded *.avsc files), the wire codec (Avro single-object
// encoding, or the Confluent wire format with a schema registry), schema
// evolution through Avro schema resolution, validation of decoded events, the
// lakeFS branch name of a batch and a JSON form for command-line tools.
//
// It may import the standard library and github.com/hamba/avro/v2 (with its
// registry client) only; every other lakewap package may import it.
package schemas
