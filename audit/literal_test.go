package audit

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// TestFirstAuditTypesStatisticsInGo: the first audit of a batch whose
// range column's min and max are both the unchanged files' (the demo's
// amount_cents over the rig's target) types them in Go: no statement
// casting the statistics' text (it ran on the engine's pool before, and
// the test failed so), and range's min and max are the full audit's.
func TestFirstAuditTypesStatisticsInGo(t *testing.T) {
	r := newFuseRig(t)
	_, fused0, single0 := r.audit(r.batch("b0", demoRows(200))) // b1's finds b0's cast in the memo
	rep, fused, single := r.audit(r.batch("b1", demoRows(300)))
	if !rep.Passed {
		t.Fatalf("want a pass: %+v", rep.Checks)
	}
	for _, q := range slices.Concat(fused0, single0, fused, single) {
		if strings.HasPrefix(q, "SELECT CAST('") {
			t.Errorf("the statistics' min and max were typed by DuckDB: %s", q)
		}
	}
	// The min and max it reports are the full audit's (all the rows read).
	full, err := r.single.Run(context.Background(), r.request(cid("b1"), cid("c001"), true))
	if err != nil || full.Mode == ModeIncremental {
		t.Fatalf("the full audit: %v %s", err, full.Mode)
	}
	observed := func(rep schemas.AuditReport) string {
		for _, c := range rep.Checks {
			if c.Name == "amount_not_negative" {
				return c.Observed
			}
		}
		return ""
	}
	if got, want := observed(rep), observed(full); got != want || !strings.Contains(got, "(min 100, max ") {
		t.Fatalf("range's observed: first audit %q, full audit %q", got, want)
	}
}

// TestTypedLiteralsEqualDuckDB: where typedLiteral answers CAST(text AS
// typ) in Go, DuckDB's CAST gives the same value of the same Go type: the
// texts DuckDB prints of random integers of each width (their bounds too)
// and of random doubles (any bits but NaN), and texts DuckDB might read
// otherwise than Go (signs, spaces, out of range, exponents, hex,
// underscores, words). Each type has answers from Go.
func TestTypedLiteralsEqualDuckDB(t *testing.T) {
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(5, 6))
	odd := []string{"", " 1", "1 ", "+1", "-0", "00", "007", "1_000", "0x10", "1e3", "1.0", "1.5", ".5", "5.", "-", "--1",
		"inf", "-inf", "Inf", "infinity", "nan", "NaN", "1e400", "1e-400", "4.9e-324", "-0.0", "0.0", "1e-320", "2.2250738585072014e-308", "1.7976931348623157e+308", "1.7976931348623159e+308", "1E5", "1e+05", "é", "a\x00b", "\xff",
		"9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809", "18446744073709551615",
		"18446744073709551616", "255", "256", "-128", "-129", "65535", "32768", "4294967295", "2147483648", "-2147483649"}
	types := map[string][2]int64{"TINYINT": {math.MinInt8, math.MaxInt8}, "SMALLINT": {math.MinInt16, math.MaxInt16},
		"INTEGER": {math.MinInt32, math.MaxInt32}, "BIGINT": {math.MinInt64, math.MaxInt64},
		"UTINYINT": {0, math.MaxUint8}, "USMALLINT": {0, math.MaxUint16}, "UINTEGER": {0, math.MaxUint32}, "UBIGINT": {0, math.MaxInt64}}
	texts := map[string][]string{"VARCHAR": append([]string{"it's", "a,b", `"q"`}, odd...), "DOUBLE": odd, "HUGEINT": odd, "DECIMAL(18,3)": odd}
	for typ, b := range types {
		texts[typ] = append(texts[typ], odd...)
		texts[typ] = append(texts[typ], strconv.FormatInt(b[0], 10), strconv.FormatInt(b[1], 10))
		for range 200 {
			n := int64(rng.Uint64()) // BIGINT's whole range
			if span := uint64(b[1]) - uint64(b[0]); span != math.MaxUint64 {
				n = b[0] + int64(rng.Uint64N(span+1))
			}
			texts[typ] = append(texts[typ], strconv.FormatInt(n, 10))
		}
	}
	texts["UBIGINT"] = append(texts["UBIGINT"], "18446744073709551615", strconv.FormatUint(rng.Uint64(), 10))
	for range 2000 {
		f := math.Float64frombits(rng.Uint64())
		if rng.IntN(4) == 0 {
			f = rng.NormFloat64() * math.Pow(10, float64(rng.IntN(40)-20))
		}
		if math.IsNaN(f) {
			continue
		}
		var s string
		if err := db.QueryRowContext(ctx, "SELECT CAST(CAST(? AS DOUBLE) AS VARCHAR)", f).Scan(&s); err != nil {
			t.Fatal(err)
		}
		texts["DOUBLE"] = append(texts["DOUBLE"], s)
	}
	for typ, ts := range texts {
		answered := 0
		for _, text := range ts {
			got, ok := typedLiteral(typ, text)
			if !ok {
				continue
			}
			answered++
			var want any
			if err := db.QueryRowContext(ctx, fmt.Sprintf("SELECT CAST(%s AS %s)", quoteLiteral(text), typ)).Scan(&want); err != nil {
				t.Errorf("CAST(%q AS %s): Go gives %s, DuckDB %v", text, typ, typed(got), err)
				continue
			}
			if typed(got) != typed(want) {
				t.Errorf("CAST(%q AS %s): Go gives %s, DuckDB %s", text, typ, typed(got), typed(want))
			}
		}
		if wantSome := typ != "HUGEINT" && typ != "DECIMAL(18,3)"; wantSome != (answered > 0) {
			t.Errorf("%s: %d of %d texts typed in Go", typ, answered, len(ts))
		}
	}
}

// typed is v as Go spells it, with its type (%#v alone writes int32(5)
// and int64(5) alike).
func typed(v any) string { return fmt.Sprintf("%T %#v", v, v) }
