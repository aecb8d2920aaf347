// Package audit is lakewap's audit engine: a dataset's Suite (tables and
// checks, declared in the YAML config) is run by an in-process DuckDB over the
// table files of a lakeFS ref, which are downloaded to local files first
// (DuckDB's httpfs is not available offline). The result is a
// schemas.AuditReport; a failed check is a result, and Run returns an error
// only when the audit could not run at all (listing or downloading failed).
//
// The engine keeps one DuckDB database (memory and threads bounded for all
// runs together), confined to its own directory and the download cache with
// its configuration locked. Each run gets an in-memory catalog of its own in
// it, where every table of the suite is a view over local files, in three
// schemas: main (the whole table at the audited ref, the default), batch
// (only the files changed on the ref against the base ref) and base (the
// whole table at the base ref). Custom SQL checks name tables plainly (they
// resolve in the check's scope) and may name base.<table> to compare with
// the base ref. Checks of one table and scope share one aggregate scan.
//
// Custom and cross-table SQL, and every where condition, must be exactly one
// read-only query over the run's own tables, as DuckDB's own parser reads it
// (see confine): the driver runs every statement of a query string, so a
// second statement smuggled past the subquery lakewap wraps around custom
// SQL would run.
//
// A suite in lakewap's config looks like:
//
//	tables:
//	  - {name: billing, path: gold/billing_fact/}          # format: parquet (default) | csv | jsonl
//	checks:
//	  - {kind: not_null, table: billing, columns: [id, customer_id]}
//	  - {kind: unique, table: billing, column: id}
//	  - {kind: accepted_values, table: billing, column: status, values: [open, paid]}
//	  - {kind: range, table: billing, column: amount, min: 0, severity: warn}
//	  - {kind: row_count, table: billing, min: 1, scope: batch}
//	  - {kind: volume_change, table: billing, max_drop_pct: 50, max_growth_pct: 200}
//	  - {kind: schema, table: billing, allow_extra: true, schema: [{name: id, type: BIGINT}]}
//	  - {kind: schema_drift, table: billing}
//	  - {kind: freshness, table: billing, column: updated_at, max_age: 36h}
//	  - {name: no refunds above charge, kind: sql, table: billing, sql: "SELECT * FROM billing WHERE refund > amount"}
//	  - {name: known customers, kind: cross_table, sql: "SELECT b.* FROM billing b ANTI JOIN customers c USING (customer_id)"}
//
// Each check kind is a registry entry in its own file (kind_<name>.go, see
// checkKind): the fields it reads, its validation, its SQL and how it is
// judged. Nothing else switches on a kind's name.
//
// Suites of other tools translate to checks: FromGreatExpectations reads a
// Great Expectations 1.x expectation suite, FromDBT the generic tests of a
// dbt schema.yml (the config's checks_from). A table may be a Delta Lake
// table (format: delta): its _delta_log decides which Parquet files are read.
//
// It may import schemas, the DuckDB driver, yaml.v3 (for dbt's files) and
// the standard library; it talks to lakeFS only through the Source
// interface it declares.
package audit
