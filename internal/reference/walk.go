package reference

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"strings"
	"time"

	"github.com/lakewap/lakewap/internal/config"
)

// Key is one config key: its dotted path (datasets.<name>.target,
// notify.routes[].sink), its YAML type and the Go field it fills.
type Key struct {
	Path string
	Type string
	// Go is the struct and field name, e.g. Kafka.GroupID, for the field's
	// doc comment.
	Go string
	// Value is the field's value in a config with every default applied.
	Value reflect.Value
}

var durationType = reflect.TypeOf(config.Duration(0))

// ConfigKeys are every key of the config file, in the order of the Go
// structs. Kind-specific check fields (datasets.<name>.checks[]) are the
// check reference's, and are listed by CheckFields.
func ConfigKeys() []Key {
	var c config.Config
	c.Datasets = map[string]config.Dataset{"<name>": {}}
	c.Defaults()
	var keys []Key
	walk(reflect.ValueOf(c), "", &keys)
	return keys
}

func walk(v reflect.Value, prefix string, keys *[]Key) {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		tag := strings.Split(f.Tag.Get("yaml"), ",")
		if tag[0] == "-" || !f.IsExported() {
			continue
		}
		fv := v.Field(i)
		if len(tag) > 1 && tag[1] == "inline" {
			walk(fv, prefix, keys)
			continue
		}
		path := prefix + tag[0]
		k := Key{Path: path, Go: t.Name() + "." + f.Name, Value: fv, Type: typeName(f.Type)}
		*keys = append(*keys, k)
		switch ft := deref(f.Type); {
		case path == prefix+"checks" && ft.Kind() == reflect.Slice:
			// the check reference lists a check's fields
		case ft.Kind() == reflect.Struct && ft != durationType:
			if fv.Kind() == reflect.Pointer {
				fv = reflect.New(ft).Elem()
			}
			walk(fv, path+".", keys)
		case ft.Kind() == reflect.Slice && deref(ft.Elem()).Kind() == reflect.Struct:
			walk(reflect.New(deref(ft.Elem())).Elem(), path+"[].", keys)
		case ft.Kind() == reflect.Map && ft.Elem().Kind() == reflect.Struct:
			walk(fv.MapIndex(reflect.ValueOf("<name>")), path+".<name>.", keys)
		}
	}
}

func deref(t reflect.Type) reflect.Type {
	if t.Kind() == reflect.Pointer {
		return t.Elem()
	}
	return t
}

// typeName is a Go type as a config file writes it.
func typeName(t reflect.Type) string {
	t = deref(t)
	switch {
	case t == durationType:
		return "duration"
	case t == reflect.TypeOf(time.Duration(0)):
		return "duration"
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "bool"
	case reflect.Int, reflect.Int64, reflect.Int32:
		return "int"
	case reflect.Float64:
		return "number"
	case reflect.Slice:
		if e := deref(t.Elem()); e.Kind() == reflect.Struct {
			return "list of objects"
		}
		return "list of " + typeName(t.Elem())
	case reflect.Map:
		if t.Elem().Kind() == reflect.Struct {
			return "map of objects"
		}
		return "map of " + typeName(t.Elem())
	case reflect.Struct:
		return "object"
	}
	return t.Kind().String()
}

// docComments reads the doc (or line) comment of every struct field in the
// Go files of dir, keyed by Struct.Field.
func docComments(dir string) (map[string]string, error) {
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok {
				return true
			}
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				return true
			}
			for _, fl := range st.Fields.List {
				text := commentText(fl.Doc)
				if text == "" {
					text = commentText(fl.Comment)
				}
				for _, id := range fl.Names {
					if text != "" {
						out[ts.Name.Name+"."+id.Name] = text
					}
				}
			}
			return false
		})
	}
	return out, nil
}

func commentText(g *ast.CommentGroup) string {
	if g == nil {
		return ""
	}
	return strings.Join(strings.Fields(g.Text()), " ")
}

// constComments reads the doc comment of every string constant in the Go
// files of dir, keyed by the constant's value (KindFreshness's comment
// under "freshness"). The comment's first word, the constant's name, is
// dropped.
func constComments(dir string) (map[string]string, error) {
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, s := range gd.Specs {
				vs := s.(*ast.ValueSpec)
				doc := vs.Doc
				if doc == nil && len(gd.Specs) == 1 {
					doc = gd.Doc
				}
				if len(vs.Values) != 1 || doc == nil {
					continue
				}
				lit, ok := vs.Values[0].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					continue
				}
				text := commentText(doc)
				if _, rest, ok := strings.Cut(text, " "); ok && strings.HasPrefix(text, vs.Names[0].Name) {
					text = rest
				}
				out[strings.Trim(lit.Value, "`\"")] = upperFirst(text)
			}
		}
	}
	return out, nil
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
