// Package registrytest is an in-memory Confluent-compatible schema registry
// for tests. It implements the REST subset lakewap uses:
// POST /subjects/{subject}/versions and GET /schemas/ids/{id}, with the
// registry's JSON bodies and error codes (40403 schema not found). It may
// import the standard library only.
package registrytest

import (
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

const contentType = "application/vnd.schemaregistry.v1+json"

// Server is a running fake registry. Close it when done (New registers
// Close with t.Cleanup).
type Server struct {
	*httptest.Server

	mu       sync.Mutex
	ids      map[string]int    // schema text -> id
	schemas  map[int]string    // id -> schema text
	subjects map[string][]int  // subject -> ids, in registration order
	failWith int               // answer this status to every request; 0 = work
	requests map[string]int    // "METHOD path-kind" -> count
	compat   map[string]string // subject -> compatibility level (PUT /config/{subject})
	user     string            // with RequireBasicAuth: the credentials every request needs
	password string
}

// RequireBasicAuth makes every request need these HTTP basic credentials
// (401 otherwise), as a registry behind authentication does.
func (s *Server) RequireBasicAuth(user, password string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.user, s.password = user, password
}

// Compatibility is the level set for subject with PUT /config/{subject}.
func (s *Server) Compatibility(subject string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.compat[subject]
}

// New starts a registry on a free 127.0.0.1 port.
func New(t testing.TB) *Server {
	t.Helper()
	s := &Server{ids: map[string]int{}, schemas: map[int]string{}, subjects: map[string][]int{}, requests: map[string]int{}, compat: map[string]string{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// FailWith makes the registry answer every request with an error of this
// HTTP status (e.g. 503 for an outage, 409 for an incompatible schema); 0
// makes it work again.
func (s *Server) FailWith(status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failWith = status
}

// Requests returns how many requests of a kind were served:
// "register" (POST versions) or "get" (GET schema by id).
func (s *Server) Requests(kind string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[kind]
}

// Subjects returns the registered subjects and their schema ids.
func (s *Server) Subjects() map[string][]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := maps.Clone(s.subjects)
	for k, v := range out {
		out[k] = slices.Clone(v)
	}
	return out
}

// Register stores schema under subject as a producer would and returns its id.
func (s *Server) Register(subject, schema string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.register(subject, schema)
}

func (s *Server) register(subject, schema string) int {
	id, ok := s.ids[schema]
	if !ok {
		// Ids start high so that tests notice a confusion with versions.
		id = 100 + len(s.ids)
		s.ids[schema] = id
		s.schemas[id] = schema
	}
	if !slices.Contains(s.subjects[subject], id) {
		s.subjects[subject] = append(s.subjects[subject], id)
	}
	return id
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w.Header().Set("Content-Type", contentType)
	if s.failWith != 0 {
		writeError(w, s.failWith, s.failWith*100, "registrytest: failing with "+http.StatusText(s.failWith))
		return
	}
	if u, p, _ := r.BasicAuth(); s.user != "" && (u != s.user || p != s.password) {
		writeError(w, http.StatusUnauthorized, 40101, "Unauthorized")
		return
	}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch {
	case r.Method == http.MethodPut && len(parts) == 2 && parts[0] == "config":
		var req struct {
			Compatibility string `json:"compatibility"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Compatibility == "" {
			writeError(w, http.StatusUnprocessableEntity, 42203, "invalid compatibility level")
			return
		}
		s.compat[parts[1]] = req.Compatibility
		_ = json.NewEncoder(w).Encode(req)
	case r.Method == http.MethodPost && len(parts) == 3 && parts[0] == "subjects" && parts[2] == "versions":
		s.requests["register"]++
		var req struct {
			Schema     string `json:"schema"`
			SchemaType string `json:"schemaType"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Schema == "" {
			writeError(w, http.StatusUnprocessableEntity, 42201, "invalid schema")
			return
		}
		if req.SchemaType != "" && req.SchemaType != "AVRO" {
			writeError(w, http.StatusUnprocessableEntity, 42201, "unsupported schema type")
			return
		}
		id := s.register(parts[1], req.Schema)
		_ = json.NewEncoder(w).Encode(map[string]int{"id": id})
	case r.Method == http.MethodGet && len(parts) == 3 && parts[0] == "schemas" && parts[1] == "ids":
		s.requests["get"]++
		id, err := strconv.Atoi(parts[2])
		schema, ok := s.schemas[id]
		if err != nil || !ok {
			writeError(w, http.StatusNotFound, 40403, "Schema not found")
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]string{"schema": schema})
	default:
		writeError(w, http.StatusNotFound, 404, "not implemented by registrytest: "+r.Method+" "+r.URL.Path)
	}
}

func writeError(w http.ResponseWriter, status, code int, msg string) {
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error_code": code, "message": msg})
}
