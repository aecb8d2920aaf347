// Package pipeline is lakewap's Write-Audit-Publish state machine: a pure
// transition function over Run states and a runner that executes the effects
// it returns. It declares the small interfaces it needs from the outside
// (Lake, Auditor, Notifier, Store); adapters implement them. Input events
// arrive typed and validated from the ingest stage (Runner.Handle).
//
// It may import schemas, internal/backoff and the standard library only.
package pipeline
