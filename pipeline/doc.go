// Package pipeline is lakewap's Write-Audit-Publish state machine: a pure
// transition function over Run states and a runner that executes the effects
// it returns. It declares the small interfaces it needs from the outside
// (Lake, Auditor, Notifier, StateStore); adapters implement them.
//
// It may import schemas and the standard library only.
package pipeline
