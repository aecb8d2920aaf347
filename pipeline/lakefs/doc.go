// Package lakefs is lakewap's adapter to a lakeFS server. It implements
// pipeline.Lake (branch, publish, find a published batch, delete) and the
// object and history operations that audit, demo, janitor and revert need,
// over lakeFS's typed client (pkg/api/apigen).
//
// Every lakeFS failure is classified once, here, into the pipeline error
// classes (ErrTransient, ErrMergeConflict, ErrNotFound, ErrNoChanges) and
// returned as an *Error that carries the operation, repository, ref, HTTP
// status and lakeFS's message. Callers above use errors.Is / errors.As only.
//
// It may import pipeline, the lakeFS apigen package and the standard library.
package lakefs
