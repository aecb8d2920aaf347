package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Spark declares a CHAR(n) or VARCHAR(n) column (or one holding them:
// struct<x:char(4)>, array<char(2)>, map<string,char(3)>) in the metadata
// of the top-level field of the Spark schema it writes
// (org.apache.spark.sql.parquet.row.metadata), under
// __CHAR_VARCHAR_TYPE_STRING, over `string` fields, and reads a CHAR(n)
// value padded with spaces to n characters (spark.sql.readSideCharPadding,
// on by default), at any depth: PySpark 4.3.0 read a stored `ab` and `ab `
// of a field declared char(5) (or " CHAR ( 5 ) ", or whose Spark type is
// itself char(5)) as `ab   ` twice, with either Parquet reader, and so a
// struct's field and an array's element under a top-level declaration
// (a nested field's own declaration it ignores), where DuckDB reads `ab`
// and `ab `: an accepted_values of ['ab', 'ab '], a regex `^[a-z]+ ?$` and
// a unique passed where Spark finds them failing
// (TestCharPad59SparkPadsCharColumns, TestCharPad59SparkReadings). Spark
// reads a table's files by its first file's Spark schema, so a file
// declaring nothing is padded by another's declaration. Spark pads a CHAR
// table's values when it writes them (nested too), but writes a
// DataFrame's field of the metadata as it is (`ab`, read `ab   `). Values
// longer than n Spark reads as stored, as it does VARCHAR(n) values of any
// length.
//
// So a Parquet table one of whose files' Spark schemas declares a
// top-level column (or a leaf of it) a CHAR(n) has each of its files
// scanned once (memoized) for a value of that column, by each declaration
// the table's files give it, shorter than n characters (DuckDB's length,
// in code points as Spark's), and the file holding one is refused, naming
// it, the column, the declaration and the file declaring it; a type text
// naming a CHAR that lakewap does not read as Spark's parser does (a
// comment, a struct field without its colon) refuses the file. Tables
// without such a declaration scan nothing.

const sparkCharKey = "__CHAR_VARCHAR_TYPE_STRING"

// maxSparkCharCond bounds the SQL condition of a column's CHAR leaves
// (markSparkChar), maxSparkCharDecls the declarations of one column that
// the files of a table give, and maxSparkCharScan the conditions of one
// file's scan (sparkChars): past any, the file or table is refused.
const (
	maxSparkCharCond  = 64 << 10
	maxSparkCharDecls = 16
	maxSparkCharScan  = 1 << 20 // the conditions of one file's scan
)

// sparkType is a type as Spark's SQL parser reads the text of a
// __CHAR_VARCHAR_TYPE_STRING (sparkTypeParser): a CHAR(n) (n > 0), a
// struct's fields, an array's element, a map's key and value, or another
// type (no CHAR).
type sparkType struct {
	kind   string // "char", "struct", "array", "map", "other"
	n      int
	names  []string
	fields []*sparkType // a struct's fields; an array's element; a map's key and value
}

// sparkTypeParser reads the type texts Spark writes (DataType.catalogString:
// struct<x:char(5)>, array<char(5)>, map<string,char(3)>), case and
// spaces aside; text it does not read is an error.
type sparkTypeParser struct {
	s string
	i int
}

func (p *sparkTypeParser) space() {
	for p.i < len(p.s) && strings.IndexByte(" \t\n\r", p.s[p.i]) >= 0 {
		p.i++
	}
}

// word is the next identifier ([A-Za-z0-9_]+, or `quoted`, “ for `), or "".
func (p *sparkTypeParser) word() string {
	p.space()
	if p.i < len(p.s) && p.s[p.i] == '`' {
		var b strings.Builder
		for j := p.i + 1; j < len(p.s); j++ {
			if p.s[j] == '`' {
				if j+1 < len(p.s) && p.s[j+1] == '`' {
					b.WriteByte('`')
					j++
					continue
				}
				p.i = j + 1
				return b.String()
			}
			b.WriteByte(p.s[j])
		}
		return ""
	}
	j := p.i
	for j < len(p.s) && (p.s[j] == '_' || p.s[j] >= '0' && p.s[j] <= '9' || p.s[j]|0x20 >= 'a' && p.s[j]|0x20 <= 'z') {
		j++
	}
	w := p.s[p.i:j]
	p.i = j
	return w
}

func (p *sparkTypeParser) eat(c byte) bool {
	p.space()
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

var errSparkType = fmt.Errorf("a type lakewap does not read")

func (p *sparkTypeParser) typ(depth int) (*sparkType, error) {
	if depth > 64 {
		return nil, errSparkType
	}
	name := strings.ToLower(p.word())
	switch name {
	case "":
		return nil, errSparkType
	case "char", "character":
		if !p.eat('(') {
			return nil, errSparkType
		}
		n, err := strconv.Atoi(p.word())
		if err != nil || n <= 0 || !p.eat(')') {
			return nil, errSparkType
		}
		return &sparkType{kind: "char", n: n}, nil
	case "struct":
		t := &sparkType{kind: "struct"}
		if !p.eat('<') {
			return nil, errSparkType
		}
		if p.eat('>') {
			return t, nil
		}
		for {
			f := p.word()
			if f == "" || !p.eat(':') {
				return nil, errSparkType
			}
			ft, err := p.typ(depth + 1)
			if err != nil {
				return nil, err
			}
			t.names, t.fields = append(t.names, f), append(t.fields, ft)
			if p.eat('>') {
				return t, nil
			}
			if !p.eat(',') {
				return nil, errSparkType
			}
		}
	case "array", "map":
		t := &sparkType{kind: name}
		if !p.eat('<') {
			return nil, errSparkType
		}
		types := 1 // an array's element; a map's key and value
		if name == "map" {
			types = 2
		}
		for k := 0; k < types; k++ {
			if k > 0 && !p.eat(',') {
				return nil, errSparkType
			}
			et, err := p.typ(depth + 1)
			if err != nil {
				return nil, err
			}
			t.fields = append(t.fields, et)
		}
		if !p.eat('>') {
			return nil, errSparkType
		}
		return t, nil
	}
	// Another primitive, of arguments or not (varchar(3), decimal(10,2)).
	if strings.Contains(name, "char") && name != "varchar" {
		return nil, errSparkType
	}
	if p.eat('(') {
		for {
			if _, err := strconv.Atoi(p.word()); err != nil {
				return nil, errSparkType
			}
			if p.eat(')') {
				break
			}
			if !p.eat(',') {
				return nil, errSparkType
			}
		}
	}
	return &sparkType{kind: "other"}, nil
}

// parseSparkType reads s as a Spark type (sparkTypeParser).
func parseSparkType(s string) (*sparkType, error) {
	p := &sparkTypeParser{s: s}
	t, err := p.typ(0)
	if p.space(); err == nil && p.i != len(p.s) {
		err = errSparkType
	}
	return t, err
}

// sparkCharCond is the DuckDB condition that e, of Spark type t, holds a
// CHAR(n) value (at any depth) shorter than n characters, which Spark pads
// when it reads it; "" for a type of no CHAR.
func sparkCharCond(e string, t *sparkType, depth int) string {
	switch t.kind {
	case "char":
		return fmt.Sprintf("length(%s) < %d", e, t.n)
	case "struct":
		var or []string
		for k, f := range t.fields {
			if c := sparkCharCond(fmt.Sprintf("struct_extract(%s, %s)", e, quoteLiteral(t.names[k])), f, depth+1); c != "" {
				or = append(or, "coalesce("+c+", false)")
			}
		}
		if len(or) == 0 {
			return ""
		}
		return "(" + strings.Join(or, " OR ") + ")"
	case "array", "map":
		var or []string
		for k, f := range t.fields {
			v := fmt.Sprintf("v%d", depth)
			c := sparkCharCond(v, f, depth+1)
			if c == "" {
				continue
			}
			list := e
			if t.kind == "map" {
				list = [...]string{"map_keys", "map_values"}[k] + "(" + e + ")"
			}
			or = append(or, fmt.Sprintf("coalesce(len(list_filter(%s, %s -> coalesce(%s, false))) > 0, false)", list, v, c))
		}
		if len(or) == 0 {
			return ""
		}
		return "(" + strings.Join(or, " OR ") + ")"
	}
	return ""
}

// sparkCharDecl is a CHAR declaration of a column: its type as Spark's
// parser reads it, its text, clipped, and whole (what a file's statistics
// record keeps: sparkFacts).
type sparkCharDecl struct {
	typ  *sparkType
	text string
	full string
}

// sparkCharDecls are the types that field f (a top-level field of a Spark
// schema, or of a Delta log's schema) declares in its metadata
// (__CHAR_VARCHAR_TYPE_STRING), or as its type (char(n)), naming a CHAR
// (those of no CHAR, a VARCHAR, are left out). why, when not "", is why
// its table is refused: a declaration naming a char lakewap does not
// read. whose names the schema in it ("its Spark schema").
func sparkCharDecls(f sparkField, whose string) (decls []sparkCharDecl, why string) {
	var declared []string
	var t string
	if json.Unmarshal(f.raw, &t) == nil && strings.Contains(strings.ToLower(t), "char") {
		declared = append(declared, t)
	}
	if len(f.meta) > 0 {
		var meta map[string]json.RawMessage
		if json.Unmarshal(f.meta, &meta) != nil {
			return nil, whose + "'s metadata of the column cannot be read"
		}
		if v, ok := meta[sparkCharKey]; ok {
			var s string
			if json.Unmarshal(v, &s) != nil {
				return nil, fmt.Sprintf("%s's %s of the column is not text", whose, sparkCharKey)
			}
			declared = append(declared, s)
		}
	}
	for _, d := range declared {
		if !strings.Contains(strings.ToLower(d), "char") {
			continue
		}
		typ, err := parseSparkType(d)
		if err != nil {
			return nil, fmt.Sprintf("%s declares it %q, naming a CHAR, whose values Spark pads with spaces when it reads them, in a type text lakewap does not read", whose, clip(d, 128))
		}
		decls = append(decls, sparkCharDecl{typ, clip(d, 128), d})
	}
	return decls, ""
}

// markSparkChar notes on col, a file's top-level column, the condition of
// a value Spark pads (sparkCharCond) by the type its Spark schema's field f
// declares in its metadata (__CHAR_VARCHAR_TYPE_STRING), or as its type
// (char(n)), and the declaration. It returns why the file is refused for
// it, or "": a declaration naming a char lakewap does not read.
func markSparkChar(col *fileColumn, f sparkField) string {
	decls, why := sparkCharDecls(f, "its Spark schema")
	if why != "" {
		return why
	}
	cond, declared, used, why := sparkCharCondOfDecls(col.name, decls, "its Spark schema")
	if why == "" && cond != "" {
		col.sparkChar, col.sparkCharType, col.sparkCharTexts = cond, declared, used
	}
	return why
}

// sparkCharCondOf is the DuckDB condition of a value of column name that
// Spark pads by the declarations of field f (sparkCharDecls), "" for
// none, and the last declaration giving one; or why the table is refused.
func sparkCharCondOf(name string, f sparkField, whose string) (cond, declared, why string) {
	decls, why := sparkCharDecls(f, whose)
	if why != "" {
		return "", "", why
	}
	cond, declared, _, why = sparkCharCondOfDecls(name, decls, whose)
	return cond, declared, why
}

// sparkCharCondOfDecls is sparkCharCondOf of decls, a column's, with the
// whole texts of those giving the condition, in order: the condition of
// sparkCharCondOfTexts(name, used).
func sparkCharCondOfDecls(name string, decls []sparkCharDecl, whose string) (cond, declared string, used []string, why string) {
	for _, d := range decls {
		c := sparkCharCond(quoteIdent(name), d.typ, 0)
		if c == "" {
			continue
		}
		if cond != "" {
			c = cond + " OR " + c
		}
		if len(c) > maxSparkCharCond {
			return "", "", nil, fmt.Sprintf("%s declares it %q, of more CHAR leaves than lakewap compares", whose, d.text)
		}
		cond, declared = c, d.text
		used = append(used, d.full)
	}
	return cond, declared, used, ""
}

// sparkCharCondOfTexts is the condition and declaration of column name
// that a file's statistics record of its declarations (sparkCharFact)
// gives, as markSparkChar gave them when it read the file's footer; ok
// is false for texts that give none (a record not of this build's).
func sparkCharCondOfTexts(name string, texts []string) (cond, declared string, ok bool) {
	decls := make([]sparkCharDecl, 0, len(texts))
	for _, text := range texts {
		typ, err := parseSparkType(text)
		if err != nil {
			return "", "", false
		}
		decls = append(decls, sparkCharDecl{typ, clip(text, 128), text})
	}
	cond, declared, used, why := sparkCharCondOfDecls(name, decls, "its Spark schema")
	return cond, declared, why == "" && cond != "" && len(used) == len(texts)
}

// sparkCharWant is a column's CHAR declaration a table's files are
// scanned by: its condition (sparkCharCond), its text, and where it is
// declared, in words.
type sparkCharWant struct{ cond, declared, where string }

// sparkChars names the first file of files (a Parquet table's) holding a
// value of a column that some file's Spark schema declares a CHAR(n), or
// of a type holding one (markSparkChar), shorter than n characters, which
// Spark pads and DuckDB reads as stored; or one whose scan for such values
// failed. Every file of the table is scanned by every file's declaration,
// as Spark reads the table's files by one file's Spark schema. A file that
// passed is kept in the memo by its identity and the conditions.
func (r *run) sparkChars(ctx context.Context, cols map[string][]fileColumn, files []string, objPath, ids map[string]string) error {
	want := map[string][]sparkCharWant{}
	for _, f := range files {
		for _, c := range cols[f] {
			if c.sparkChar == "" {
				continue
			}
			w := sparkCharWant{c.sparkChar, c.sparkCharType, fmt.Sprintf("the Spark schema of file %s (%s)", objPath[f], sparkCharKey)}
			if err := addSparkCharWant(want, c.name, w); err != nil {
				return err
			}
		}
	}
	return r.scanSparkChars(ctx, want, cols, files, objPath, ids)
}

// addSparkCharWant adds w to the declarations of column name in want,
// once by its condition, refusing past maxSparkCharDecls of them.
func addSparkCharWant(want map[string][]sparkCharWant, name string, w sparkCharWant) error {
	k := strings.ToLower(name)
	if slices.ContainsFunc(want[k], func(d sparkCharWant) bool { return d.cond == w.cond }) {
		return nil
	}
	if len(want[k]) == maxSparkCharDecls {
		return fmt.Errorf("column %q is declared a CHAR in more than %d ways (in %s: %q), and Spark reads its values padded with spaces by one of them: lakewap does not compare that many (declare it alike everywhere)",
			clip(name, 128), maxSparkCharDecls, w.where, w.declared)
	}
	want[k] = append(want[k], w)
	return nil
}

// scanSparkChars scans each file of files holding a column of want (by
// lower-case name) for values of its declarations' conditions, and names
// the first file holding one, or whose scan failed.
func (r *run) scanSparkChars(ctx context.Context, want map[string][]sparkCharWant, cols map[string][]fileColumn, files []string, objPath, ids map[string]string) error {
	if len(want) == 0 {
		return nil
	}
	for _, f := range files {
		var names, conds []string
		var ds []sparkCharWant
		tag := "spark-char"
		for _, c := range cols[f] {
			for _, d := range want[strings.ToLower(c.name)] {
				names, ds = append(names, c.name), append(ds, d)
				conds = append(conds, "count(*) FILTER (WHERE coalesce("+d.cond+", false))")
				tag += "\x00" + d.cond
			}
		}
		if len(tag) > maxSparkCharScan {
			return fmt.Errorf("file %s: its columns declared CHAR (column %q: %q, in %s), whose values Spark pads with spaces when it reads them, are more than lakewap compares (%d bytes of conditions): readers may disagree on them",
				objPath[f], names[0], ds[0].declared, ds[0].where, maxSparkCharScan)
		}
		if len(conds) == 0 {
			continue
		}
		err := r.guardScan(ctx, tag, f, ids, conds, func(err error) error {
			return fmt.Errorf("file %s: column %q is declared %q in %s, whose CHAR values Spark pads with spaces to their length when it reads them, and lakewap could not look for shorter values (%v): readers may disagree on them",
				objPath[f], names[0], ds[0].declared, ds[0].where, clip(err.Error(), 256))
		}, func(i int, n int64) error {
			return fmt.Errorf("file %s: column %q holds values shorter than their CHAR's length in %d rows, and is declared %q in %s: Spark pads them with spaces to that length when it reads them (`ab` of a char(5) as `ab   `), DuckDB reads them as stored: readers disagree on them (write them padded, as Spark writes a CHAR, or declare the column a string)",
				objPath[f], names[i], n, ds[i].declared, ds[i].where)
		})
		if err != nil {
			return err
		}
	}
	return nil
}
