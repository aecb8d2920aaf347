package audit

import (
	"cmp"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strings"
)

// A Parquet leaf may name its type twice: a logical type and a converted
// type, and a DECIMAL's scale in the element and in its logical type.
// Readers part there: DuckDB 1.5 reads the converted type and the
// element's scale, but for a UUID, TIMESTAMP, TIME or FLOAT16 logical
// type, which it reads first; pyarrow (parquet-cpp) and Spark
// (parquet-mr) read the logical type and ignore the converted one. So a
// BIGINT under INTEGER(64) and TIME_MICROS read 00:00:01 to DuckDB and
// 1000000 to pandas, and a DECIMAL of scale 2 whose element says 3 read
// 0.150 to DuckDB and 1.50 to pandas (its precision likewise)
// (TestReview33LogicalAndConvertedTypesThatDisagreeAreRefused). Writers
// write the converted type the logical one implies (parquet.thrift's
// compatibility rules), so the footer reader refuses the others.

// logicalConverted are the converted types a logical type implies, by
// its union member (INTEGER's by integerConverted); a member not here
// implies none.
var logicalConverted = map[int16][]int32{
	1:  {0},    // STRING: UTF8
	2:  {1, 2}, // MAP: MAP, MAP_KEY_VALUE
	3:  {3},    // LIST
	4:  {4},    // ENUM
	5:  {5},    // DECIMAL
	6:  {6},    // DATE
	12: {19},   // JSON
	13: {20},   // BSON
}

// integerConverted is the converted type of IntType bits, signed or not.
func integerConverted(bits int8, unsigned bool) int32 {
	base := map[int8]int32{8: 0, 16: 1, 32: 2, 64: 3}
	b, ok := base[bits]
	switch {
	case !ok:
		return -1
	case unsigned:
		return 11 + b // UINT_8..UINT_64
	}
	return 15 + b // INT_8..INT_64
}

// logicalNames name the logical types' members, for a message.
var logicalNames = map[int16]string{1: "STRING", 2: "MAP", 3: "LIST", 4: "ENUM", 5: "DECIMAL", 6: "DATE", 7: "TIME", 8: "TIMESTAMP",
	10: "INTEGER", 11: "UNKNOWN", 12: "JSON", 13: "BSON", 14: "UUID", 15: "FLOAT16", 16: "VARIANT", 17: "GEOMETRY", 18: "GEOGRAPHY"}

// typesDisagree says how a leaf's logical and converted types (nt) are
// read otherwise by DuckDB than by pyarrow and Spark, or "". A logical
// type of more than one member is read by DuckDB by one, by parquet-cpp
// by another (DECIMAL and FLOAT16: -640 to DuckDB, 2.25 to pandas).
// Without a converted type DuckDB reads the physical
// type's values whatever the logical type: a UINT32 4294967295 read -1,
// a DECIMAL(5,2) 1.50 read 150, a DATE an INTEGER, a STRING a BLOB
// (TestReview33LogicalTypesDuckDBDoesNotReadAreRefused).
func typesDisagree(nt nodeTypes) string {
	name := cmp.Or(logicalNames[nt.logical], fmt.Sprintf("member %d", nt.logical))
	switch {
	case nt.converted == 5 && nt.precision > decimalMostDigits(nt.physical, nt.typeLength):
		// parquet-cpp reads the physical type instead: DECIMAL(12,2)
		// 1000.00 over INT32 read 100000 to pandas, 1000.00 to DuckDB;
		// Spark fails on the footer
		// (TestReview36DecimalWiderThanItsTypeIsRefused).
		return fmt.Sprintf("its DECIMAL's precision %d is more than its physical type holds (%d digits): DuckDB reads a DECIMAL, pyarrow the physical type's values, and Spark fails", nt.precision, decimalMostDigits(nt.physical, nt.typeLength))
	case nt.logical == 0:
		return ""
	case nt.logicalMembers > 1:
		return fmt.Sprintf("its logical type has more than one member, of which DuckDB reads one and pyarrow and Spark another")
	case nt.logical == 7, nt.logical == 8, nt.logical == 14, nt.logical == 15: // TIME, TIMESTAMP, UUID, FLOAT16: DuckDB reads the logical type too
		return ""
	case nt.logical == 5 && nt.converted == 5 && nt.scale != nt.logicalScale:
		return fmt.Sprintf("its DECIMAL's scale is %d and its logical type's %d: DuckDB reads the element's, pyarrow and Spark the logical type's", nt.scale, nt.logicalScale)
	case nt.logical == 5 && nt.converted == 5 && nt.precision != nt.logicalPrecision:
		// DuckDB reads the values into an integer of the element's
		// precision's width: DECIMAL(9,2) 1000.00 over INT32 whose element
		// said precision 4 read -310.72 (100000 in 16 bits), 1000.00 to
		// pandas (TestReview36DecimalPrecisionsThatDisagreeAreRefused).
		return fmt.Sprintf("its DECIMAL's precision is %d and its logical type's %d: DuckDB reads the element's, pyarrow and Spark the logical type's", nt.precision, nt.logicalPrecision)
	}
	want := logicalConverted[nt.logical]
	if nt.logical == 10 {
		want = []int32{integerConverted(nt.intBits, nt.unsigned)}
	}
	if nt.converted == -1 {
		// An INTEGER the physical type is read as anyway: INT(32) over
		// INT32, INT(64) over INT64.
		plain := nt.logical == 10 && !nt.unsigned && (nt.intBits == 32 && nt.physical == 1 || nt.intBits == 64 && nt.physical == 2)
		if len(want) == 0 || plain {
			return ""
		}
		return fmt.Sprintf("its logical type %s has no converted type: DuckDB reads its physical type's values, pyarrow and Spark the logical type's", name)
	}
	if slices.Contains(want, nt.converted) {
		return ""
	}
	return fmt.Sprintf("its logical type %s and its converted type %d disagree: DuckDB reads the converted type, pyarrow and Spark the logical one", name, nt.converted)
}

// decimalMostDigits is the precision a DECIMAL of physical type physical
// (and length, a fixed-length byte array's) holds, as parquet.thrift
// bounds it: INT32 9 digits, INT64 18, n bytes the digits of 2^(8n-1)-1;
// a byte array's is not bounded.
func decimalMostDigits(physical, length int32) int32 {
	switch physical {
	case ptInt32:
		return 9
	case ptInt64:
		return 18
	case ptFixed:
		if length < 1 {
			return 0
		}
		if length > 128 {
			return math.MaxInt32 // past any precision DuckDB reads as a DECIMAL
		}
		most := new(big.Int).Lsh(big.NewInt(1), uint(8*length-1))
		return int32(len(most.Sub(most, big.NewInt(1)).String()) - 1)
	}
	return math.MaxInt32
}

// markHalf notes on cols (a file's, schemaColumns of nodes) its top-level
// leaves of the FLOAT16 logical type.
func markHalf(cols []fileColumn, nodes []schemaNode, types []nodeTypes) {
	top := topLevel(nodes, types)
	if len(top) != len(cols) {
		return
	}
	for k, i := range top {
		cols[k].half = nodes[i].children == 0 && types[i].logical == 15
	}
}

// halfFloats names the first Parquet file of files with a FLOAT16 column
// (markHalf) that a regex or accepted_values check of table reads. pandas
// 3.1.1 writes a float16 column so (to_parquet), DuckDB 1.5.6 reads it as
// a FLOAT and renders 0.1 as 0.099975586, pandas as float16 and renders
// 0.1, and PySpark 4.3.0 does not read it: an accepted_values of DuckDB's
// text passed where pandas finds the rows failing
// (TestReview52HalfFloatsUnderTextChecksAreRefused). Its values read
// alike (a range, a not_null, a unique pass); by the footer alone.
func halfFloats(cols map[string][]fileColumn, files []string, objPath map[string]string, checks []Check, table string) error {
	text := textCheckedColumns(checks, table)
	if len(text) == 0 {
		return nil
	}
	for _, f := range files {
		for _, c := range cols[f] {
			if c.half && text[strings.ToLower(c.name)] {
				return fmt.Errorf("file %s: column %q is of the FLOAT16 type, which DuckDB reads as FLOAT and renders as its text (0.099975586), pandas as float16 and renders as the shortest text of a half (0.1), and Spark does not read: readers disagree on its text, which a regex or accepted_values check compares (write it as FLOAT, or check its values otherwise)",
					objPath[f], c.name)
			}
		}
	}
	return nil
}
