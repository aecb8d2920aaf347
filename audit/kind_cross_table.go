package audit

// KindCrossTable: a sql check that belongs to no one table, e.g. a join
// of the batch's tables.
const KindCrossTable = "cross_table"

func init() {
	registerKind(&checkKind{
		name:     KindCrossTable,
		fields:   []string{"sql"},
		custom:   true,
		noTable:  true,
		validate: needSQL,
		run:      (*run).custom,
	})
}
