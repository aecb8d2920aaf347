package audit

import (
	"context"
	"database/sql"
	"strings"
	"testing"
)

func TestQuote(t *testing.T) {
	tests := []struct{ in, ident, lit string }{
		{"id", `"id"`, `'id'`},
		{`we"ird`, `"we""ird"`, `'we"ird'`},
		{"it's", `"it's"`, `'it''s'`},
		{`"; DROP TABLE x; --`, `"""; DROP TABLE x; --"`, `'"; DROP TABLE x; --'`},
		{"", `""`, `''`},
	}
	for _, tt := range tests {
		if got := quoteIdent(tt.in); got != tt.ident {
			t.Errorf("quoteIdent(%q) = %s, want %s", tt.in, got, tt.ident)
		}
		if got := quoteLiteral(tt.in); got != tt.lit {
			t.Errorf("quoteLiteral(%q) = %s, want %s", tt.in, got, tt.lit)
		}
	}
}

func TestGeneratedSQL(t *testing.T) {
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"parquet view", viewSQL("main", "billing", FormatParquet, []string{"/w/a.parquet", "/w/it's.parquet"}),
			`CREATE VIEW "main"."billing" AS SELECT * FROM read_parquet(['/w/a.parquet', '/w/it''s.parquet'], hive_partitioning = false, union_by_name = true)`},
		{"csv view", viewSQL("batch", "ev", FormatCSV, []string{"/w/a"}),
			`CREATE VIEW "batch"."ev" AS SELECT * FROM read_csv(['/w/a'], header = true, delim = ',', quote = '"', escape = '"', comment = '', skip = 0, hive_partitioning = false)`},
		{"jsonl view", viewSQL("base", "ev", FormatJSONL, []string{"/w/a", "/w/b"}),
			`CREATE VIEW "base"."ev" AS SELECT * FROM read_json(['/w/a', '/w/b'], format = 'newline_delimited', records = true, hive_partitioning = false, union_by_name = true)`},
		{"empty view", emptyViewSQL("batch", "ev", FormatParquet, "/c/x"),
			`CREATE VIEW "batch"."ev" AS SELECT * FROM read_parquet(['/c/x'], hive_partitioning = false) LIMIT 0`},
		{"synthetic view", syntheticEmptyViewSQL("main", "r", []ColumnType{{"id", "VARCHAR"}, {"a b", "DOUBLE"}}),
			`CREATE VIEW "main"."r" AS SELECT CAST(NULL AS VARCHAR) AS "id", CAST(NULL AS DOUBLE) AS "a b" WHERE false`},
		{"not_null predicate", failPredicate(Check{Kind: KindNotNull, Column: "id", Columns: []string{`x"y`}}),
			`("id" IS NULL OR (typeof("id") IN ('FLOAT', 'DOUBLE') AND isnan(TRY_CAST("id" AS DOUBLE)))) OR ("x""y" IS NULL OR (typeof("x""y") IN ('FLOAT', 'DOUBLE') AND isnan(TRY_CAST("x""y" AS DOUBLE))))`},
		{"accepted_values predicate", failPredicate(Check{Kind: KindAcceptedValues, Column: "s", Values: []string{"a", "b'c"}}),
			`"s" IS NOT NULL AND CAST("s" AS VARCHAR) NOT IN ('a', 'b''c')`},
		{"range predicate", failPredicate(Check{Kind: KindRange, Column: "amt", Min: f64(-1.5), Max: f64(1e6)}),
			`"amt" < -1.5 OR "amt" > 1000000`},
		{"range max only", failPredicate(Check{Kind: KindRange, Column: "amt", Max: f64(0.25)}), `"amt" > 0.25`},
		{"aggregate", aggregateSQL("main", "billing", append(append(
			aggExprs(Check{Kind: KindUnique, Column: "id"}),
			aggExprs(Check{Kind: KindUnique, Columns: []string{"a", "b"}})...),
			aggExprs(Check{Kind: KindRange, Column: "amt", Min: f64(0)})...)),
			`SELECT count(*), count("id") - count(DISTINCT "id"), count("id"), CAST(min("id") AS VARCHAR), CAST(max("id") AS VARCHAR), typeof(min("id")), count(*) - count(DISTINCT ("a", "b")), ` +
				`count(*) FILTER (WHERE "amt" < 0 OR "amt" > 'inf'::DOUBLE), min("amt"), max("amt") FROM "main"."billing"`},
		{"row_count needs only count(*)", aggregateSQL("main", "t", aggExprs(Check{Kind: KindRowCount})),
			`SELECT count(*) FROM "main"."t"`},
		{"row sample", sampleSQL("batch", Check{Kind: KindNotNull, Table: "t", Column: "id"}, 5),
			`SELECT CAST(to_json(__lakewap_row) AS VARCHAR) FROM (SELECT * FROM "batch"."t" WHERE ("id" IS NULL OR (typeof("id") IN ('FLOAT', 'DOUBLE') AND isnan(TRY_CAST("id" AS DOUBLE)))) LIMIT 5) __lakewap_row`},
		{"unique: count and sample in one grouped scan", uniqueSQL("main", "t", Check{Kind: KindUnique, Table: "t", Column: "id"}, 3),
			`SELECT CAST(coalesce(sum(n), 0) AS BIGINT), CAST(coalesce(sum(n - 1) FILTER (WHERE "id" IS NOT NULL), 0) AS BIGINT), ` +
				`CAST(coalesce(sum(n) FILTER (WHERE "id" IS NOT NULL), 0) AS BIGINT), ` +
				`coalesce(CAST(to_json(min_by({'id': "id", 'duplicate_count': n}, {'o': -n, 'k': "id"}, 3) FILTER (WHERE n > 1 AND "id" IS NOT NULL)) AS VARCHAR), '[]'), ` +
				`CAST(min("id") AS VARCHAR), CAST(max("id") AS VARCHAR), typeof(min("id")) ` +
				`FROM (SELECT "id", count(*) AS n FROM "main"."t" GROUP BY "id") g`},
		{"custom sql", customSQL("SELECT 1 -- c\n ; ", 2),
			"SELECT CAST(to_json(__lakewap_row) AS VARCHAR), count(*) OVER () FROM (\nSELECT 1 -- c\n) __lakewap_row LIMIT 2"},
		{"setup", strings.Join(setupSQL("/w/tmp", "1GB", 2, []string{"/w/", "/c/"}), ";\n"), `SET temp_directory = '/w/tmp';
SET GLOBAL TimeZone = 'UTC';
SET preserve_insertion_order = true;
SET memory_limit = '1GB';
SET threads = 2;
SET allowed_directories = ['/w/', '/c/'];
SET enable_external_access = false;
SET lock_configuration = true`},
		{"run catalog", strings.Join(append(runSQL("run_7"), teardownSQL("run_7")...), ";\n"), `ATTACH ':memory:' AS "run_7";
CREATE SCHEMA "run_7"."batch";
CREATE SCHEMA "run_7"."base";
CREATE SCHEMA "run_7"."interim";
USE "run_7";
USE memory;
DETACH DATABASE IF EXISTS "run_7"`},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s:\n got %s\nwant %s", tt.name, tt.got, tt.want)
		}
	}
}

// Names that need quoting work end to end in DuckDB: a column called
// `select "x"` and a value with a quote.
func TestGeneratedSQLRunsWithOddNames(t *testing.T) {
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, `CREATE TABLE "t" AS SELECT * FROM (VALUES (1, 'it''s'), (NULL, 'x'), (3, 'x')) v("select ""x""", "v")`); err != nil {
		t.Fatal(err)
	}
	col := `select "x"`
	exprs := append(aggExprs(Check{Kind: KindNotNull, Column: col}),
		aggExprs(Check{Kind: KindAcceptedValues, Column: "v", Values: []string{"it's"}})...)
	var n, nulls, other int64
	if err := db.QueryRowContext(ctx, aggregateSQL("main", "t", exprs)).Scan(&n, &nulls, &other); err != nil {
		t.Fatal(err)
	}
	if n != 3 || nulls != 1 || other != 2 {
		t.Errorf("count %d, nulls %d, other values %d; want 3, 1, 2", n, nulls, other)
	}
	var sample string
	if err := db.QueryRowContext(ctx, sampleSQL("main", Check{Kind: KindNotNull, Table: "t", Column: col}, 5)).Scan(&sample); err != nil {
		t.Fatal(err)
	}
	if sample != `{"select \"x\"":null,"v":"x"}` {
		t.Errorf("sample %s", sample)
	}
}
