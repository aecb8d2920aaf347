package reference

// kindExamples are one check of each kind, as a config writes it under
// datasets.<name>.checks, over the tables of exampleTables.
// TestEveryCheckKindHasAValidExample fails on a kind without one, and on an
// example the audit suite refuses.
var kindExamples = map[string]string{
	"accepted_values": `{kind: accepted_values, table: billing_fact, column: currency, values: [EUR, USD, GBP]}`,
	"columns":         `{kind: columns, table: billing_fact, columns: [billing_id, amount_cents], ordered: true}`,
	"cross_table":     `{name: customers_exist, kind: cross_table, sql: "SELECT b.* FROM billing_fact b LEFT JOIN customers c USING (customer_id) WHERE c.customer_id IS NULL"}`,
	"freshness":       `{kind: freshness, table: billing_fact, column: billed_at, max_age: 36h}`,
	"not_null":        `{kind: not_null, table: billing_fact, columns: [billing_id, customer_id]}`,
	"range":           `{kind: range, table: billing_fact, column: amount_cents, min: 0, max: 1000000, mostly: 0.99}`,
	"regex":           `{kind: regex, table: billing_fact, column: billing_id, pattern: "^INV-[0-9]+$"}`,
	"row_count":       `{kind: row_count, table: billing_fact, min: 1, scope: batch}`,
	"schema":          `{kind: schema, table: billing_fact, schema: [{name: billing_id, type: VARCHAR}, {name: amount_cents, type: BIGINT}], allow_extra: true}`,
	"schema_drift":    `{kind: schema_drift, table: billing_fact, allow_extra: true}`,
	"sql":             `{name: no_negative_totals, kind: sql, table: billing_fact, sql: "SELECT customer_id FROM billing_fact GROUP BY customer_id HAVING sum(amount_cents) < 0"}`,
	"stat":            `{kind: stat, table: billing_fact, column: amount_cents, stat: max, max: 1000000}`,
	"unique":          `{kind: unique, table: billing_fact, columns: [billing_id], severity: warn}`,
	"volume_change":   `{kind: volume_change, table: billing_fact, max_drop_pct: 50, max_growth_pct: 200}`,
}

// exampleTables are the tables the kind examples check.
const exampleTables = `[{name: billing_fact, path: gold/billing_fact/}, {name: customers, path: gold/customers/}]`
