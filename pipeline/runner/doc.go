// Package runner carries out the WAP core's effects for the runs of the
// partitions assigned to this instance: it restores runs from the store,
// applies every input through pipeline.Machine.Apply, stores what changed
// before it acts, and hands each effect to its executor (exec.go: one
// function per effect kind, one file per step). Executors report what
// happened as the machine's next input; they decide nothing.
//
// It may import pipeline, schemas, internal/backoff and the standard library.
package runner
