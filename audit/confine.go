package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// ErrNotConfined is why a custom query (or a where condition) is refused:
// it is not exactly one read-only query over the run's own tables.
var ErrNotConfined = errors.New("not a single read-only query over the audit's tables")

// confinedFunctions are the table functions a custom query may call: they
// make rows up and read nothing.
var confinedFunctions = map[string]bool{"range": true, "generate_series": true, "unnest": true}

// confine asks DuckDB's own parser (json_serialize_sql, which serializes
// SELECT statements only) whether query is exactly one SELECT, and walks
// the parse tree: every table it names must be one of the run's views (in
// its own catalog, schema main, batch or base) or a CTE of the query, and
// the only table functions allowed are confinedFunctions. That rules out a
// second statement (the driver runs every statement of a query string),
// DDL that replaces what later checks read, COPY or ATTACH, reading files
// (read_parquet(...), 'file.csv' replacement scans), and reaching another
// run's catalog in the shared database. Nothing is executed.
func (r *run) confine(ctx context.Context, query string) error {
	var js string
	if err := r.conn.QueryRowContext(ctx, "SELECT CAST(json_serialize_sql(CAST($1 AS VARCHAR)) AS VARCHAR)", query).Scan(&js); err != nil {
		return fmt.Errorf("parse: %w", err)
	}
	var parsed struct {
		Error        bool              `json:"error"`
		ErrorType    string            `json:"error_type"`
		ErrorMessage string            `json:"error_message"`
		Statements   []json.RawMessage `json:"statements"`
	}
	if err := json.Unmarshal([]byte(js), &parsed); err != nil {
		return fmt.Errorf("parse: %w", err)
	}
	switch {
	case parsed.Error && parsed.ErrorType == "not implemented":
		return fmt.Errorf("%w: only a SELECT may run (%s)", ErrNotConfined, parsed.ErrorMessage)
	case parsed.Error:
		return fmt.Errorf("%w: %s error: %s", ErrNotConfined, parsed.ErrorType, parsed.ErrorMessage)
	case len(parsed.Statements) != 1:
		return fmt.Errorf("%w: %d statements", ErrNotConfined, len(parsed.Statements))
	}
	var tree any
	if err := json.Unmarshal(parsed.Statements[0], &tree); err != nil {
		return fmt.Errorf("parse: %w", err)
	}
	ctes := map[string]bool{}
	walkJSON(tree, func(v map[string]any) error {
		m, _ := v["cte_map"].(map[string]any)
		entries, _ := m["map"].([]any)
		for _, e := range entries {
			em, _ := e.(map[string]any)
			if k, ok := em["key"].(string); ok {
				ctes[strings.ToLower(k)] = true
			}
		}
		return nil
	})
	return walkJSON(tree, func(v map[string]any) error {
		switch v["type"] {
		case "BASE_TABLE":
			return r.allowedTable(v, ctes)
		case "TABLE_FUNCTION":
			f, _ := v["function"].(map[string]any)
			name, _ := f["function_name"].(string)
			schema, _ := f["schema"].(string)
			catalog, _ := f["catalog"].(string)
			if !confinedFunctions[strings.ToLower(name)] || schema != "" || catalog != "" {
				return fmt.Errorf("%w: table function %s is not allowed (allowed: range, generate_series, unnest)", ErrNotConfined, name)
			}
		}
		return nil
	})
}

// walkJSON calls visit on every object of a decoded JSON tree, parents
// first, and stops at the first error.
func walkJSON(n any, visit func(map[string]any) error) error {
	var children []any
	switch v := n.(type) {
	case map[string]any:
		if err := visit(v); err != nil {
			return err
		}
		children = slices.Collect(maps.Values(v))
	case []any:
		children = v
	}
	for _, c := range children {
		if err := walkJSON(c, visit); err != nil {
			return err
		}
	}
	return nil
}

// allowedTable accepts a table reference to a CTE, or to one of the run's
// views, unqualified or qualified by the run's own catalog and a schema.
func (r *run) allowedTable(ref map[string]any, ctes map[string]bool) error {
	catalog, _ := ref["catalog_name"].(string)
	schema, _ := ref["schema_name"].(string)
	table, _ := ref["table_name"].(string)
	name := strings.Join(slices.DeleteFunc([]string{catalog, schema, table}, func(s string) bool { return s == "" }), ".")
	if catalog == "" && schema == "" && ctes[strings.ToLower(table)] {
		return nil
	}
	if catalog != "" && !strings.EqualFold(catalog, r.catalog) {
		return fmt.Errorf("%w: %s is outside the audit's tables", ErrNotConfined, name)
	}
	switch strings.ToLower(schema) {
	case "", schemaMain, schemaBatch, schemaBase:
	default:
		return fmt.Errorf("%w: %s is outside the audit's tables", ErrNotConfined, name)
	}
	for k := range r.views {
		if strings.EqualFold(k.table, table) && (schema == "" || strings.EqualFold(k.schema, schema)) {
			return nil
		}
	}
	return fmt.Errorf("%w: %s is not a table of the audit", ErrNotConfined, name)
}
