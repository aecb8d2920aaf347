package main

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/internal/cli"
	"github.com/lakewap/lakewap/schemas"
)

// lakewap audit judges a ref as the runner judges a batch: with the checks
// of the other datasets of its target that hold a table the ref changes
// against its base. A customers ref that removes a customer orders on main
// reference passes customers' suite; the runner holds it back by orders'
// check. Before, lakewap audit ran customers' suite alone and answered
// exit 0: an operator checking a branch by hand was told it would pass.
func TestAuditLocalJudgesTheNeighbors(t *testing.T) {
	dir := t.TempDir()
	db, err := sql.Open("duckdb", "")
	must(t, err)
	defer db.Close()
	write := func(ref, path, query string) {
		p := filepath.Join(dir, ref, filepath.FromSlash(path))
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		_, err := db.Exec(fmt.Sprintf(`COPY (%s) TO '%s' (FORMAT parquet)`, query, p))
		must(t, err)
	}
	for _, ref := range []string{"main", "drop4", "add5"} {
		write(ref, "gold/orders/o.parquet", "SELECT i::INTEGER AS order_id, (i % 5)::INTEGER AS customer_id FROM range(0, 10) r(i)")
	}
	write("main", "gold/customers/c.parquet", "SELECT i::INTEGER AS customer_id FROM range(0, 5) r(i)")
	write("drop4", "gold/customers/c2.parquet", "SELECT i::INTEGER AS customer_id FROM range(0, 4) r(i)") // c.parquet removed
	write("add5", "gold/customers/c.parquet", "SELECT i::INTEGER AS customer_id FROM range(0, 5) r(i)")
	write("add5", "gold/customers/c5.parquet", "SELECT 5::INTEGER AS customer_id")
	cfgFile := filepath.Join(dir, "lakewap.yaml")
	must(t, os.WriteFile(cfgFile, []byte(`
kafka: {brokers: ["127.0.0.1:1"]}
lakefs: {endpoint: "http://127.0.0.1:1", access_key_id: a, secret_access_key: b}
audit: {work_dir: `+filepath.Join(dir, "work")+`}
datasets:
  customers:
    repository: lake
    tables: [{name: customers, path: gold/customers/}]
    checks: [{name: customer_ids_unique, kind: unique, table: customers, column: customer_id}]
  orders:
    repository: lake
    tables: [{name: orders, path: gold/orders/}, {name: customers, path: gold/customers/}]
    checks:
      - {name: order_ids_unique, kind: unique, table: orders, column: order_id}
      - {name: orders_have_customers, kind: cross_table, sql: "SELECT o.* FROM orders o ANTI JOIN customers c USING (customer_id)"}
`), 0o644))
	const name = "orders_have_customers (dataset orders)"
	for _, tt := range []struct {
		ref    string
		code   int
		status string
	}{
		{"drop4", cli.AuditFailed, schemas.StatusFail},
		{"add5", cli.AuditPassed, schemas.StatusPass},
	} {
		var stdout, stderr bytes.Buffer
		code := run([]string{"audit", "-config", cfgFile, "-dataset", "customers", "-ref", tt.ref, "-base", "main", "-local", dir, "-json"}, &stdout, &stderr)
		var rep schemas.AuditReport
		if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
			t.Fatalf("%s: exit %d, report: %v\n%s%s", tt.ref, code, err, stdout.String(), stderr.String())
		}
		var got string
		for _, c := range rep.Checks {
			if c.Name == name {
				got = c.Status
			}
		}
		if code != tt.code || got != tt.status {
			t.Errorf("%s: exit %d, %s %q; want exit %d, %q\n%s", tt.ref, code, name, got, tt.code, tt.status, strings.TrimSpace(stdout.String()))
		}
	}
}
