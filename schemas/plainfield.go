package schemas

import (
	"reflect"

	"github.com/hamba/avro/v2"
)

// A writer may have a plain field where the reader has ["null", X]: Avro's
// resolution rules read the writer's X into the union's X branch, and Apache
// Avro (Java) does. hamba resolves the schemas but then cannot decode a
// plain X into the Go pointer that holds the reader's union, so such plans
// decode into a struct type that has X where the Go type has *X, and copy.

// plainFields lists the fields of record writer w that are plain where
// reader r has ["null", X], by Avro field name.
func plainFields(reader, writer avro.Schema) map[string]bool {
	rr, ok1 := reader.(*avro.RecordSchema)
	wr, ok2 := writer.(*avro.RecordSchema)
	if !ok1 || !ok2 {
		return nil
	}
	wf := map[string]avro.Schema{}
	for _, f := range wr.Fields() {
		wf[f.Name()] = f.Type()
	}
	var out map[string]bool
	for _, f := range rr.Fields() {
		u, ok := f.Type().(*avro.UnionSchema)
		if !ok || !u.Nullable() {
			continue
		}
		if w, ok := wf[f.Name()]; ok && w.Type() != avro.Union {
			if out == nil {
				out = map[string]bool{}
			}
			out[f.Name()] = true
		}
	}
	return out
}

// plainDecoder returns a decode function for Go type t whose fields named
// (by avro tag) in plain are decoded as their pointers' element type.
func plainDecoder(t reflect.Type, plain map[string]bool) func(r *avro.Reader, s avro.Schema) Event {
	fields := make([]reflect.StructField, t.NumField())
	for i := range fields {
		f := t.Field(i)
		if plain[f.Tag.Get("avro")] && f.Type.Kind() == reflect.Pointer {
			f.Type = f.Type.Elem()
		}
		fields[i] = reflect.StructField{Name: f.Name, Type: f.Type, Tag: f.Tag}
	}
	shadow := reflect.StructOf(fields)
	return func(r *avro.Reader, s avro.Schema) Event {
		v := reflect.New(shadow)
		r.ReadVal(s, v.Interface())
		out := reflect.New(t).Elem()
		for i := range fields {
			src, dst := v.Elem().Field(i), out.Field(i)
			if src.Type() == dst.Type() {
				dst.Set(src)
				continue
			}
			p := reflect.New(src.Type())
			p.Elem().Set(src)
			dst.Set(p)
		}
		ev, _ := out.Interface().(Event)
		return ev
	}
}
