package main

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/lakewap/lakewap/internal/cli"
	"github.com/lakewap/lakewap/schemas"
)

// TestValidateCommandNamesEveryError: lakewap validate lists every
// problem of a config with its path, audit suite errors included.
func TestValidateCommandNamesEveryError(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		must(t, os.WriteFile(p, []byte(body), 0o600))
		return p
	}
	good := write("good.yaml", `kafka: {brokers: ["127.0.0.1:9092"]}
lakefs: {endpoint: "http://127.0.0.1:8000", access_key_id: AK, secret_access_key: SK}
datasets:
  billing:
    repository: lake
    tables: [{name: billing_fact, path: gold/billing_fact/}]
    checks:
      - {kind: not_null, table: billing_fact, column: billing_id}
      - {kind: volume_change, table: billing_fact, max_drop_pct: 50}
`)
	if code, out, errOut := runCLI("validate", good); code != 0 || !strings.Contains(out, "good.yaml: ok") {
		t.Fatalf("good config: exit %d\n%s%s", code, out, errOut)
	}

	bad := write("bad.yaml", `kafka: {brokers: []}
lakefs: {endpoint: "http://127.0.0.1:8000", access_key_id: AK, secret_access_key: SK}
datasets:
  billing:
    repository: lake
    tables:
      - {name: billing_fact, path: gold/billing_fact/}
      - {name: billing_fact, path: gold/other/, format: avro}
    checks:
      - {kind: not_nul, table: billing_fact, column: billing_id}
      - {kind: volume_change, table: billing_fact, max_drop_pct: 150}
      - {kind: range, table: billing_fact, column: amount, min: 10, max: 1}
      - {kind: unique, table: invoices, columns: [id]}
      - {kind: freshness, table: billing_fact, column: billed_at, max_age: soon}
      - {kind: row_count, table: billing_fact, min: 1, scope: everything}
  orders:
    tables: [{name: orders, path: /gold/orders/}]
    checks:
      - {kind: schema_drift, table: orders, scope: batch}
`)
	code, out, errOut := runCLI("validate", bad)
	if code != 1 || out != "" {
		t.Fatalf("bad config: exit %d, stdout %q", code, out)
	}
	want := []string{
		"kafka.brokers: at least one broker",
		"datasets.billing.tables[1].name: duplicate table \"billing_fact\"",
		"datasets.billing.tables[1].format: unknown format \"avro\"",
		"datasets.billing.checks[0].kind: unknown check kind \"not_nul\"",
		"datasets.billing.checks[1].max_drop_pct: must be between 0 and 100",
		"datasets.billing.checks[2].min: min 10 is greater than max 1",
		"datasets.billing.checks[3].table: unknown table \"invoices\"",
		"datasets.billing.checks[4].max_age: bad duration \"soon\"",
		"datasets.billing.checks[5].scope: unknown scope \"everything\"",
		"datasets.orders.repository: required",
		"datasets.orders.tables[0].path: \"/gold/orders/\" must be relative",
		"datasets.orders.checks[0].scope: schema_drift compares whole tables",
	}
	for _, w := range want {
		if !strings.Contains(errOut, w) {
			t.Errorf("validate does not report %q:\n%s", w, errOut)
		}
	}
	if !strings.Contains(errOut, "bad.yaml: "+strconv.Itoa(len(want))+" error(s)") {
		t.Errorf("error count line missing or wrong (want %d):\n%s", len(want), errOut)
	}

	typo := write("typo.yaml", strings.Replace(string(mustRead(t, good)), "checks:", "chekcs:", 1))
	if code, _, errOut := runCLI("validate", typo); code != 1 || !strings.Contains(errOut, "field chekcs not found") || !strings.Contains(errOut, "line 7: field chekcs not found in type config.Dataset") {
		t.Errorf("unknown key: exit %d, stderr %q", code, errOut)
	}
	if code, _, errOut := runCLI("validate"); code != 2 || !strings.Contains(errOut, "usage: lakewap validate CONFIG") {
		t.Errorf("no argument: exit %d, stderr %q", code, errOut)
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	must(t, err)
	return b
}

// lakewap audit -local runs a suite over files on disk, without lakeFS.
func TestAuditLocalFiles(t *testing.T) {
	dir := t.TempDir()
	db, err := sql.Open("duckdb", "")
	must(t, err)
	defer db.Close()
	for ref, nulls := range map[string]int{"good": 0, "bad": 3} {
		must(t, os.MkdirAll(filepath.Join(dir, ref, "gold", "t"), 0o755))
		_, err := db.Exec(fmt.Sprintf(`COPY (SELECT CASE WHEN i < %d THEN NULL ELSE i END AS id FROM range(100) r(i)) TO '%s' (FORMAT parquet)`,
			nulls, filepath.Join(dir, ref, "gold", "t", "part-0.parquet")))
		must(t, err)
	}
	cfgFile := filepath.Join(dir, "lakewap.yaml")
	must(t, os.WriteFile(cfgFile, []byte(`
kafka: {brokers: ["127.0.0.1:1"]}
lakefs: {endpoint: "http://127.0.0.1:1", access_key_id: a, secret_access_key: b}
audit: {work_dir: `+filepath.Join(dir, "work")+`}
datasets:
  d:
    repository: lake
    tables: [{name: t, path: gold/t/}]
    checks: [{kind: not_null, table: t, column: id}, {kind: row_count, table: t, min: 1, scope: batch}]
`), 0o644))
	for _, tt := range []struct {
		ref, base string
		code      int
		want      string
	}{
		{"good", "bad", cli.AuditPassed, `"observed": "0 null rows of 100"`},
		{"bad", "good", cli.AuditFailed, `"observed": "3 null rows of 100"`},
		{"nope", "good", cli.AuditError, `ref "nope" is not a directory`},
	} {
		var stdout, stderr bytes.Buffer
		code := run([]string{"audit", "-config", cfgFile, "-dataset", "d", "-ref", tt.ref, "-base", tt.base, "-local", dir, "-json"}, &stdout, &stderr)
		if code != tt.code || !strings.Contains(stdout.String()+stderr.String(), tt.want) {
			t.Errorf("%s: exit %d, want %d with %q\n%s%s", tt.ref, code, tt.code, tt.want, stdout.String(), stderr.String())
		}
	}
}

// lakewap audit -local over a file whose Parquet footer lies: the data
// holds x = 1..10 and 1000, the footer's statistics claim a maximum of 50.
// A DuckDB with its default optimizers believes the claim; the audit must
// not (issue 12), and refuses the file, since readers of main skip by it.
func TestAuditLocalForgedStatistics(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "b", "gold", "t", "part-0.parquet")
	must(t, os.MkdirAll(filepath.Dir(file), 0o755))
	must(t, os.MkdirAll(filepath.Join(dir, "main"), 0o755)) // the base: no table yet
	db, err := sql.Open("duckdb", "")
	must(t, err)
	defer db.Close()
	_, err = db.Exec(`COPY (SELECT i::BIGINT AS x FROM range(1, 11) r(i) UNION ALL SELECT 1000::BIGINT) TO '` + file +
		`' (FORMAT parquet, COMPRESSION uncompressed)`)
	must(t, err)
	// Rewrite the footer's copies of 1000 (its max statistics) to 50.
	b := mustRead(t, file)
	n := int(b[len(b)-8]) | int(b[len(b)-7])<<8 | int(b[len(b)-6])<<16 | int(b[len(b)-5])<<24
	from, claim := []byte{0xe8, 0x03, 0, 0, 0, 0, 0, 0}, []byte{50, 0, 0, 0, 0, 0, 0, 0}
	patched := 0
	for i := len(b) - 8 - n; i+8 <= len(b)-8; i++ {
		if bytes.Equal(b[i:i+8], from) {
			copy(b[i:i+8], claim)
			patched++
		}
	}
	must(t, os.WriteFile(file, b, 0o644))
	var believed, sum int64
	must(t, db.QueryRow(`SELECT count(*) FROM read_parquet('`+file+`') WHERE x > 100`).Scan(&believed))
	must(t, db.QueryRow(`SELECT sum(x) FROM read_parquet('`+file+`')`).Scan(&sum))
	if patched == 0 || believed != 0 || sum != 1055 {
		t.Fatalf("forgery did not take: %d copies patched, a plain DuckDB counts %d rows over 100, sum %d", patched, believed, sum)
	}
	cfgFile := filepath.Join(dir, "lakewap.yaml")
	must(t, os.WriteFile(cfgFile, []byte(`
kafka: {brokers: ["127.0.0.1:1"]}
lakefs: {endpoint: "http://127.0.0.1:1", access_key_id: a, secret_access_key: b}
audit: {work_dir: `+filepath.Join(dir, "work")+`}
datasets:
  d:
    repository: lake
    tables: [{name: t, path: gold/t/}]
    checks:
      - {kind: range, table: t, column: x, max: 100}
      - {kind: stat, stat: max, table: t, column: x, max: 100}
      - {name: big, kind: sql, table: t, sql: "SELECT * FROM t WHERE x > 100"}
`), 0o644))
	var stdout, stderr bytes.Buffer
	code := run([]string{"audit", "-config", cfgFile, "-dataset", "d", "-ref", "b", "-local", dir, "-json"}, &stdout, &stderr)
	out := stdout.String() + stderr.String()
	// The claim is refused before any check reads the data (readers of
	// main skip row groups by it): each check errors naming it.
	var rep schemas.AuditReport
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("report: %v\n%s", err, out)
	}
	if len(rep.Checks) != 3 {
		t.Fatalf("%d checks, want 3\n%s", len(rep.Checks), out)
	}
	for _, c := range rep.Checks {
		if c.Status != schemas.StatusError || !strings.Contains(c.Message, `claims a max_value of 50, the data's greatest value is 1000`) {
			t.Errorf("%s: %s %q, want the footer's claim refused", c.Name, c.Status, c.Message)
		}
	}
	if code != cli.AuditFailed {
		t.Errorf("exit %d, want %d (failed)\n%s", code, cli.AuditFailed, out)
	}
}

// lakewap audit prints why an audit could not run, and that error can name
// an object path a writer chose (lakeFS takes any bytes in a path): its
// escape sequences reached the operator's terminal raw. Here the path is a
// dangling link in a -local ref, whose read fails naming it.
func TestAuditErrorsAreEscaped(t *testing.T) {
	dir := t.TempDir()
	db, err := sql.Open("duckdb", "")
	must(t, err)
	defer db.Close()
	for _, ref := range []string{"main", "b"} {
		must(t, os.MkdirAll(filepath.Join(dir, ref, "gold", "t"), 0o755))
		_, err := db.Exec(fmt.Sprintf(`COPY (SELECT i AS id FROM range(10) r(i)) TO '%s' (FORMAT parquet)`,
			filepath.Join(dir, ref, "gold", "t", "part-0.parquet")))
		must(t, err)
	}
	const evil = "x\x1b]0;owned\x07\x1b[2J\u202e.parquet"
	must(t, os.Symlink(filepath.Join(dir, "nowhere"), filepath.Join(dir, "b", "gold", "t", evil)))
	cfgFile := filepath.Join(dir, "lakewap.yaml")
	must(t, os.WriteFile(cfgFile, []byte(`
kafka: {brokers: ["127.0.0.1:1"]}
lakefs: {endpoint: "http://127.0.0.1:1", access_key_id: a, secret_access_key: b}
audit: {work_dir: `+filepath.Join(dir, "work")+`}
datasets:
  d:
    repository: lake
    tables: [{name: t, path: gold/t/}]
    checks: [{kind: not_null, table: t, column: id}]
`), 0o644))
	var stdout, stderr bytes.Buffer
	code := run([]string{"audit", "-config", cfgFile, "-dataset", "d", "-ref", "b", "-base", "main", "-local", dir}, &stdout, &stderr)
	out := stdout.String() + stderr.String()
	if code != cli.AuditError || !strings.Contains(out, `x\x1b]0;owned\x07\x1b[2J\u202e.parquet`) {
		t.Errorf("exit %d, want %d naming the path escaped:\n%q", code, cli.AuditError, out)
	}
	for _, r := range out {
		if r != '\n' && r != '\t' && (unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r)) {
			t.Fatalf("raw %U reaches the terminal: %q", r, out)
		}
	}
}

// TestValidateWarnsOfWhatIsUnsigned: a valid config without
// audit.attestation_key was "ok" and nothing else, though its publishes'
// attestations can be forged by whoever may move a target to a commit
// record naming lakewap's lakeFS user. validate still exits 0 and says ok,
// and warns of each key left unset (stderr; -json: warnings).
func TestValidateWarnsOfWhatIsUnsigned(t *testing.T) {
	path := filepath.Join(t.TempDir(), "unsigned.yaml")
	must(t, os.WriteFile(path, []byte(`kafka: {brokers: ["127.0.0.1:9092"]}
lakefs: {endpoint: "http://127.0.0.1:8000", access_key_id: AK, secret_access_key: SK}
datasets:
  billing:
    repository: lake
    tables: [{name: billing_fact, path: gold/billing_fact/}]
    checks:
      - {kind: not_null, table: billing_fact, column: billing_id}
`), 0o600))
	code, out, errOut := runCLI("validate", path)
	if code != 0 || !strings.Contains(out, "unsigned.yaml: ok") || !strings.Contains(errOut, "warning: audit.attestation_key is not set") ||
		!strings.Contains(errOut, "warning: runner.state_key_file is not set") {
		t.Errorf("exit %d\nstdout %s\nstderr %s\nwant 0, ok, and warnings naming audit.attestation_key and runner.state_key_file", code, out, errOut)
	}
	code, out, _ = runCLI("validate", "-json", path)
	if code != 0 || !strings.Contains(out, `"warnings": [`) || !strings.Contains(out, "audit.attestation_key is not set") {
		t.Errorf("-json: exit %d\n%s\nwant the warnings listed", code, out)
	}
}
