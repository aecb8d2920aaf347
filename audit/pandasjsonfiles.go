package audit

import (
	"context"
	"fmt"
	"strings"
)

// pandasJSONFiles is the refusal of check c over column col of a JSON
// lines table of several files when pandas reads a file of it otherwise
// than the table's figures tell. pandas.read_json takes one file: a pandas
// reader of such a table reads each file alone and concatenates them, so
// read_json's conversions are decided per file, where pandasJSONDates and
// pandasJSONNumbers judge the whole view: a column named like a date whose
// numbers are all beyond a year in seconds in one file reads as datetimes
// there, beside another file's smaller numbers; a file whose strings are all
// numbers' texts reads them as numbers, beside another file's text; and a
// file of JSON numbers stays numbers beside another's strings, where
// DuckDB's view reads the column as text (TestJSONFilesPandasReadsOneAtATime,
// pandas 3.1.1). Each file is typed alone, as pandas types it; a view of one
// file is judged by those two. Or nil.
func (r *run) pandasJSONFiles(ctx context.Context, c Check, col string) error {
	k, name, types, err := r.viewTypes(ctx, c)
	if types == nil {
		return err
	}
	v := r.views[k]
	if len(v.files) < 2 || len(v.files) != len(v.objects) {
		return nil
	}
	viewText := types[strings.ToLower(col)] == "VARCHAR"
	dates := pandasDateName(col) && (c.Kind == KindRegex || c.Kind == KindAcceptedValues || c.Kind == KindRange || c.Kind == KindStat)
	numbers := c.Kind == KindRegex || c.Kind == KindAcceptedValues || c.Kind == KindUnique || c.Kind == KindNotNull
	if !dates && !numbers {
		return nil
	}
	q := quoteIdent(col)
	var converted []string // files whose column pandas reads as numbers
	for i, f := range v.files {
		from := readSQL(FormatJSONL, []string{f})
		typ, err := r.jsonFileType(ctx, f, col)
		if err != nil || typ == "" {
			continue // a file without the column; one DuckDB cannot read errs the view
		}
		path := v.objects[i].Path
		numeric := integerType(typ) || typ == "DOUBLE"
		if dates && numeric {
			s := fmt.Sprintf("SELECT count(%s), count(*) FILTER (WHERE %s > %d) FROM %s", q, q, pandasJSONMinStamp, from)
			vals, err := r.queryRow(ctx, s, 2)
			if err != nil {
				return err
			}
			if n := asInt(vals[0]); n > 0 && asInt(vals[1]) == n {
				return fmt.Errorf("pandas.read_json reads column %q of file %s of JSON lines table %s (%s) as datetimes by its name (convert_dates), as pandas reads each file alone: its numbers are every one beyond %d (1704067200 reads 2024-01-01), which the check judges as other text and values than DuckDB's numbers: readers disagree on it (name the column otherwise, or write it as a date)",
					col, path, name, typ, pandasJSONMinStamp)
			}
		}
		if !numbers || !viewText {
			continue
		}
		if numeric {
			converted = append(converted, from)
			switch {
			case c.Kind == KindAcceptedValues:
				return pandasJSONFileNumbers(col, path, name, "its values are JSON numbers, which pandas reads as numbers beside the other files' text, and isin finds no listed text among them")
			case c.Kind == KindRegex && typ == "DOUBLE":
				s := fmt.Sprintf("SELECT count(*), count(%s), count(*) FILTER (WHERE %s = floor(%s) AND abs(%s) < 9.2e18) FROM %s", q, q, q, q, from)
				vals, err := r.queryRow(ctx, s, 3)
				if err != nil {
					return err
				}
				if rows := asInt(vals[0]); rows > 0 && asInt(vals[1]) == rows && asInt(vals[2]) == rows {
					return pandasJSONFileNumbers(col, path, name, "its values are whole JSON doubles without a NULL, which pandas reads as int64 (1 where DuckDB's text is 1.0), kept so beside the other files' text")
				}
			}
			continue
		}
		if typ != "VARCHAR" {
			continue
		}
		s := fmt.Sprintf(`WITH x AS (SELECT %s AS t, TRY_CAST(%s AS DOUBLE) AS d FROM %s WHERE %s IS NOT NULL)
SELECT count(*), count(d), count(*) FILTER (WHERE isnan(d)),
coalesce(bool_and(d = floor(d) AND abs(d) < 9.2e18), false),
count(*) FILTER (WHERE NOT isnan(d) AND t <> CAST(TRY_CAST(d AS BIGINT) AS VARCHAR)), count(*) FILTER (WHERE NOT isnan(d) AND t <> CAST(d AS VARCHAR)) FROM x`,
			q, pythonFloatText(q), from, q)
		vals, err := r.queryRow(ctx, s, 6)
		if err != nil {
			return err
		}
		nonNull, nums, nans := asInt(vals[0]), asInt(vals[1]), asInt(vals[2])
		if nonNull == 0 || nums < nonNull {
			continue // pandas keeps this file's text
		}
		converted = append(converted, from)
		rendered := asInt(vals[5])
		if whole, _ := vals[3].(bool); whole {
			rendered = asInt(vals[4])
		}
		switch {
		case c.Kind == KindRegex && rendered > 0:
			return pandasJSONFileNumbers(col, path, name, fmt.Sprintf("its every value is a number's text, which pandas reads as numbers: %d of them render as other text than they are (\"007\" as 7, \"1.50\" as 1.5), which the pattern is matched against", rendered))
		case c.Kind == KindAcceptedValues:
			return pandasJSONFileNumbers(col, path, name, "its every value is a number's text, which pandas reads as numbers, and isin finds no listed text among them")
		case c.Kind == KindNotNull && nans > 0:
			return pandasJSONFileNumbers(col, path, name, fmt.Sprintf("its every value is a number's text, which pandas reads as numbers: %d of them are a NaN's text, which reads as missing", nans))
		}
	}
	if c.Kind != KindUnique || len(converted) == 0 {
		return nil
	}
	// Numbers of every converted file are compared with one another:
	// "01" in one file and "1" in another are one value to pandas.
	var arms []string
	for _, from := range converted {
		arms = append(arms, fmt.Sprintf("SELECT CAST(%s AS VARCHAR) AS t FROM %s WHERE %s IS NOT NULL", q, from, q))
	}
	s := fmt.Sprintf("SELECT count(DISTINCT t), count(DISTINCT TRY_CAST(%s AS DOUBLE)) FROM (%s)", pythonFloatText("t"), strings.Join(arms, " UNION ALL "))
	vals, err := r.queryRow(ctx, s, 2)
	if err != nil {
		return err
	}
	if texts, nums := asInt(vals[0]), asInt(vals[1]); texts != nums {
		return fmt.Errorf("pandas.read_json reads column %q of JSON lines table %s as numbers in %d of its files, as pandas reads each file alone (every value of each is a number's text, or a JSON number, where DuckDB reads the table's column as text): %d texts read as %d numbers (\"01\" and \"1\" as 1), which can be duplicates: readers disagree on it (write the values as JSON numbers in every file, or as text that is not a number)",
			col, name, len(converted), texts, nums)
	}
	return nil
}

// pandasJSONFileNumbers is the refusal of a check over column col of
// table when pandas reads the file at path as numbers (why).
func pandasJSONFileNumbers(col, path, table, why string) error {
	return fmt.Errorf("pandas.read_json reads column %q of file %s of JSON lines table %s otherwise than DuckDB, which reads the table's column as text, as pandas reads each file alone: %s: readers disagree on it (write the values as JSON numbers in every file, or as text that is not a number)",
		col, path, table, why)
}

// jsonFileType is DuckDB's type (upper case) of column col in JSON lines
// file f (a local copy) read alone, or "" when it has no such column. A
// file's types are probed once a run.
func (r *run) jsonFileType(ctx context.Context, f, col string) (string, error) {
	if types, ok := r.jsonTypes[f]; ok {
		return types[strings.ToLower(col)], nil
	}
	rows, err := r.conn.QueryContext(ctx, "SELECT * FROM "+readSQL(FormatJSONL, []string{f})+" LIMIT 0")
	if err != nil {
		return "", err
	}
	defer rows.Close()
	cts, err := rows.ColumnTypes()
	if err != nil {
		return "", err
	}
	types := make(map[string]string, len(cts))
	for _, ct := range cts {
		types[strings.ToLower(ct.Name())] = strings.ToUpper(ct.DatabaseTypeName())
	}
	if r.jsonTypes == nil {
		r.jsonTypes = map[string]map[string]string{}
	}
	r.jsonTypes[f] = types
	return types[strings.ToLower(col)], nil
}
