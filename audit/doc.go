// Package audit is lakewap's audit engine: a dataset's Suite (tables and
// checks, declared in the YAML config) is run by an in-process DuckDB over the
// table files of a lakeFS ref, which are downloaded to local files first
// (DuckDB's httpfs is not available offline). The result is a
// schemas.AuditReport; a failed check is a result, and Run returns an error
// only when the audit could not run at all (listing or downloading failed).
//
// Inside DuckDB every table of the suite is a view, in three schemas:
// main (the whole table at the audited ref, the default search path),
// batch (only the files changed on the ref against the base ref) and base
// (the whole table at the base ref). Custom SQL checks name tables plainly
// and may name base.<table> to compare with the base ref.
//
// It may import schemas, the DuckDB driver and the standard library; it talks
// to lakeFS only through the Source interface it declares.
package audit
