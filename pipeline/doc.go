// Package pipeline is lakewap's Write-Audit-Publish core: the pure state
// machine over Run records and the small interfaces the runner needs from
// the outside (Lake, Auditor, Notifier, Store), which adapters implement.
//
// Machine.Apply is the one entry point: a run, an input (an event from
// Kafka, the report of an executor, the clock) and now give an Outcome
// (the run, the effects it asks for, whether it changed, a refusal).
// Every decision is made there; package pipeline/runner carries out the
// effects and reports what happened as the next input.
//
// It does no I/O: it may import schemas, internal/backoff and the standard
// packages TestPackageMap lists (no os, net, io or log).
package pipeline
