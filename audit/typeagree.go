package audit

import "fmt"

// A Parquet leaf may name its type twice: a logical type and a converted
// type, and a DECIMAL's scale in the element and in its logical type.
// Readers part there: DuckDB 1.5 reads the converted type and the
// element's scale, but for a UUID, TIMESTAMP, TIME or FLOAT16 logical
// type, which it reads first; pyarrow (parquet-cpp) and Spark
// (parquet-mr) read the logical type and ignore the converted one. So a
// BIGINT under INTEGER(64) and TIME_MICROS read 00:00:01 to DuckDB and
// 1000000 to pandas, and a DECIMAL of scale 2 whose element says 3 read
// 0.150 to DuckDB and 1.50 to pandas
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

// typesDisagree says how a leaf's logical and converted types (nt) are
// read otherwise by DuckDB than by pyarrow and Spark, or "".
func typesDisagree(nt nodeTypes) string {
	if nt.logical == 0 || nt.converted == -1 {
		return ""
	}
	switch nt.logical {
	case 7, 8, 14, 15: // TIME, TIMESTAMP, UUID, FLOAT16: DuckDB reads the logical type too
		return ""
	case 5:
		if nt.converted == 5 && nt.scale != nt.logicalScale {
			return fmt.Sprintf("its DECIMAL's scale is %d and its logical type's %d: DuckDB reads the element's, pyarrow and Spark the logical type's", nt.scale, nt.logicalScale)
		}
	}
	want := logicalConverted[nt.logical]
	if nt.logical == 10 {
		want = []int32{integerConverted(nt.intBits, nt.unsigned)}
	}
	for _, c := range want {
		if c == nt.converted {
			return ""
		}
	}
	return fmt.Sprintf("its logical type (member %d) and its converted type %d disagree: DuckDB reads the converted type, pyarrow and Spark the logical one", nt.logical, nt.converted)
}
