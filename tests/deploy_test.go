package tests

import (
	"encoding/base64"
	"fmt"
	"net"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/lakewap/lakewap/internal/config"
)

// composeFile is the part of docker-compose.yml the checks read.
type composeFile struct {
	Services map[string]composeService `yaml:"services"`
	Volumes  map[string]any            `yaml:"volumes"`
	Networks map[string]struct {
		Internal bool `yaml:"internal"`
	} `yaml:"networks"`
}

// networks are the networks the service joins ("default" when it names none).
func (s composeService) networks() []string {
	switch n := s.Networks.(type) {
	case []any:
		var out []string
		for _, v := range n {
			out = append(out, fmt.Sprint(v))
		}
		return out
	case map[string]any:
		var out []string
		for k := range n {
			out = append(out, k)
		}
		return out
	}
	return []string{"default"}
}

type composeService struct {
	Image       string            `yaml:"image"`
	Build       any               `yaml:"build"`
	Command     []string          `yaml:"command"`
	Entrypoint  []string          `yaml:"entrypoint"`
	Environment map[string]string `yaml:"environment"`
	Volumes     []string          `yaml:"volumes"`
	Ports       []string          `yaml:"ports"`
	Networks    any               `yaml:"networks"` // a list of names or a map by name
	DependsOn   map[string]struct {
		Condition string `yaml:"condition"`
	} `yaml:"depends_on"`
}

// composeSecrets are the variables docker-compose.yml requires (no
// default), with the values a .env file would give them.
var composeSecrets = map[string]string{"LAKEFS_ACCESS_KEY_ID": "AKIAEXAMPLE", "LAKEFS_SECRET_ACCESS_KEY": "lakefs-secret",
	"LAKEFS_AUTH_ENCRYPT_SECRET_KEY": "encrypt-secret", "LAKEFS_DB_PASSWORD": "db-secret", "MINIO_ROOT_USER": "minio-user",
	"MINIO_ROOT_PASSWORD": "minio-secret", "LAKEWAP_WEBHOOK_TOKEN": "hook-secret",
	"LAKEWAP_LAKEFS_ACCESS_KEY_ID": "AKIALAKEWAP", "LAKEWAP_LAKEFS_SECRET_ACCESS_KEY": "lakewap-secret",
	"LAKEWAP_STATE_KEY": "state-key-of-at-least-32-characters"}

// loadCompose reads docker-compose.yml as `docker compose` does with a .env
// file that sets the required secrets: the other ${VAR:-default}s resolve
// to their defaults.
func loadCompose(t *testing.T) composeFile {
	t.Helper()
	src, err := os.ReadFile("../docker-compose.yml")
	must(t, err)
	src, err = composeExpand(src, composeSecrets)
	if err != nil {
		t.Fatalf("docker-compose.yml: every variable needs a default: %v", err)
	}
	var c composeFile
	must(t, yaml.Unmarshal(src, &c))
	return c
}

// TestComposeStackIsWiredTogether checks docker-compose.yml without a
// Docker engine: the services a production-shaped stack needs, and that
// each one points at the others with matching names, ports and secrets.
func TestComposeStackIsWiredTogether(t *testing.T) {
	c := loadCompose(t)
	for _, s := range []string{"kafka", "postgres", "minio", "minio-setup", "lakefs-acl", "lakefs", "lakefs-setup", "lakewap"} {
		if _, ok := c.Services[s]; !ok {
			t.Errorf("no %s service", s)
		}
	}
	for name := range c.Services {
		if strings.Contains(name, "zookeeper") {
			t.Errorf("service %s: Kafka runs in KRaft mode, without ZooKeeper", name)
		}
	}

	kafka := c.Services["kafka"]
	if !strings.HasPrefix(kafka.Image, "apache/kafka:4.") {
		t.Errorf("kafka image %q, want apache/kafka 4.x", kafka.Image)
	}
	if roles := kafka.Environment["KAFKA_PROCESS_ROLES"]; !strings.Contains(roles, "broker") || !strings.Contains(roles, "controller") {
		t.Errorf("KAFKA_PROCESS_ROLES %q: a KRaft node must be broker and controller", roles)
	}
	if id, err := base64.RawURLEncoding.DecodeString(kafka.Environment["CLUSTER_ID"]); err != nil || len(id) != 16 {
		t.Errorf("CLUSTER_ID %q is not a base64url UUID (%v)", kafka.Environment["CLUSTER_ID"], err)
	}
	advertised := map[string]bool{}
	for _, l := range strings.Split(kafka.Environment["KAFKA_ADVERTISED_LISTENERS"], ",") {
		if u, err := url.Parse(l); err == nil {
			advertised[u.Host] = true
		}
	}

	pg, minio, lakefs := c.Services["postgres"], c.Services["minio"], c.Services["lakefs"]
	if !strings.HasPrefix(lakefs.Image, "treeverse/lakefs:1.84.") {
		t.Errorf("lakefs image %q, want the version lakewap is built against (1.84)", lakefs.Image)
	}
	le := lakefs.Environment
	if le["LAKEFS_DATABASE_TYPE"] != "postgres" {
		t.Errorf("lakeFS KV store %q, want postgres", le["LAKEFS_DATABASE_TYPE"])
	}
	dsn, err := url.Parse(le["LAKEFS_DATABASE_POSTGRES_CONNECTION_STRING"])
	must(t, err)
	if pw, _ := dsn.User.Password(); dsn.Host != "postgres:5432" || dsn.User.Username() != pg.Environment["POSTGRES_USER"] ||
		pw != pg.Environment["POSTGRES_PASSWORD"] || strings.TrimPrefix(dsn.Path, "/") != pg.Environment["POSTGRES_DB"] {
		t.Errorf("lakeFS connection string %s does not match the postgres service %v", dsn.Redacted(), pg.Environment)
	}
	if le["LAKEFS_BLOCKSTORE_TYPE"] != "s3" || le["LAKEFS_BLOCKSTORE_S3_ENDPOINT"] != "http://minio:9000" ||
		le["LAKEFS_BLOCKSTORE_S3_CREDENTIALS_ACCESS_KEY_ID"] != minio.Environment["MINIO_ROOT_USER"] ||
		le["LAKEFS_BLOCKSTORE_S3_CREDENTIALS_SECRET_ACCESS_KEY"] != minio.Environment["MINIO_ROOT_PASSWORD"] {
		t.Errorf("lakeFS blockstore does not point at the minio service with its credentials")
	}
	if le["LAKEFS_AUTH_ENCRYPT_SECRET_KEY"] == "" {
		t.Errorf("lakeFS needs auth.encrypt.secret_key")
	}
	// lakeFS applies LAKEFS_INSTALLATION_* with a local KV store only; with
	// PostgreSQL the admin must be made through the setup API.
	if le["LAKEFS_DATABASE_TYPE"] != "local" && le["LAKEFS_INSTALLATION_ACCESS_KEY_ID"] != "" {
		t.Errorf("LAKEFS_INSTALLATION_* are ignored with a %s KV store: lakefs-setup must call the setup API", le["LAKEFS_DATABASE_TYPE"])
	}
	bucket := regexp.MustCompile(`mc mb --ignore-existing local/([\w.-]+)`).FindStringSubmatch(strings.Join(c.Services["minio-setup"].Command, " "))
	if bucket == nil {
		t.Fatalf("minio-setup creates no bucket: %v", c.Services["minio-setup"].Command)
	}
	setup := strings.Join(c.Services["lakefs-setup"].Command, " ")
	se := c.Services["lakefs-setup"].Environment
	if !strings.Contains(setup, "/api/v1/setup_lakefs") || !strings.Contains(setup, "$$LAKEFS_ACCESS_KEY_ID") ||
		!strings.Contains(setup, "$$LAKEFS_SECRET_ACCESS_KEY") || se["LAKEFS_ACCESS_KEY_ID"] == "" || se["LAKEFS_SECRET_ACCESS_KEY"] == "" {
		t.Errorf("lakefs-setup must create lakeFS's admin with its LAKEFS_ACCESS_KEY_ID/LAKEFS_SECRET_ACCESS_KEY through /api/v1/setup_lakefs: %s", setup)
	}
	repo := regexp.MustCompile(`"name":"([\w-]+)","storage_namespace":"s3://([\w.-]+)/`).FindStringSubmatch(setup)
	if repo == nil || repo[2] != bucket[1] {
		t.Fatalf("lakefs-setup must create a repository in bucket %s: %s", bucket[1], setup)
	}

	lw := c.Services["lakewap"]
	if lw.Build == nil {
		t.Errorf("lakewap service is not built from the Dockerfile")
	}
	i := slices.Index(lw.Command, "-config")
	if i < 0 || i+1 >= len(lw.Command) {
		t.Fatalf("lakewap command %v has no -config", lw.Command)
	}
	mount := "./deploy/lakewap.yaml:" + lw.Command[i+1] + ":ro"
	if !slices.Contains(lw.Volumes, mount) {
		t.Errorf("lakewap volumes %v lack %s", lw.Volumes, mount)
	}
	if lw.DependsOn["kafka"].Condition != "service_healthy" || lw.DependsOn["lakefs-setup"].Condition != "service_completed_successfully" {
		t.Errorf("lakewap must wait for a healthy Kafka and for the repository: %+v", lw.DependsOn)
	}
	if lw.Environment["LAKEFS_ACCESS_KEY_ID"] != se["LAKEWAP_LAKEFS_ACCESS_KEY_ID"] ||
		lw.Environment["LAKEFS_SECRET_ACCESS_KEY"] != se["LAKEWAP_LAKEFS_SECRET_ACCESS_KEY"] {
		t.Errorf("lakewap's lakeFS key pair is not the one lakefs-setup creates for user lakewap")
	}

	// The mounted config loads with the lakewap service's environment and
	// points at the services above.
	src, err := os.ReadFile("../deploy/lakewap.yaml")
	must(t, err)
	cfg, err := config.ParseIn(src, func(k string) (string, bool) { v, ok := lw.Environment[k]; return v, ok }, "")
	if err != nil {
		t.Fatalf("deploy/lakewap.yaml with the lakewap service's environment: %v", err)
	}
	for _, b := range cfg.Kafka.Brokers {
		if !advertised[b] {
			t.Errorf("config broker %s is not an advertised Kafka listener %v", b, advertised)
		}
	}
	_, lport, _ := net.SplitHostPort(le["LAKEFS_LISTEN_ADDRESS"])
	if cfg.LakeFS.Endpoint != "http://lakefs:"+lport {
		t.Errorf("config lakefs.endpoint %s, the lakefs service listens on %s", cfg.LakeFS.Endpoint, le["LAKEFS_LISTEN_ADDRESS"])
	}
	for name, ds := range cfg.Datasets {
		if ds.Repository != repo[1] {
			t.Errorf("dataset %s uses repository %s; the stack creates %s", name, ds.Repository, repo[1])
		}
	}
	_, hport, _ := net.SplitHostPort(cfg.HTTP.Listen)
	if !slices.Contains(lw.Ports, "127.0.0.1:"+hport+":"+hport) {
		t.Errorf("lakewap publishes %v, its metrics listen on %s", lw.Ports, cfg.HTTP.Listen)
	}
	for _, d := range []string{cfg.Audit.WorkDir, cfg.Audit.CacheDir} {
		if !strings.HasPrefix(d, "/var/lib/lakewap/") {
			t.Errorf("audit dir %s is outside the lakewap-data volume", d)
		}
	}
	if !slices.Contains(lw.Volumes, "lakewap-data:/var/lib/lakewap") {
		t.Errorf("lakewap volumes %v lack the data volume", lw.Volumes)
	}
}

// TestDockerfileBuildsWithCgoAndRunsAsNonRoot reads the Dockerfile: DuckDB
// needs cgo at build time and glibc/libstdc++ at run time, and the daemon
// has no reason to run as root.
func TestDockerfileBuildsWithCgoAndRunsAsNonRoot(t *testing.T) {
	b, err := os.ReadFile("../Dockerfile")
	must(t, err)
	df := string(b)
	// FROM ${ARG} is the ARG's default (the official image; a build arg
	// overrides it where no registry answers).
	args := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^ARG\s+(\w+)=(\S+)`).FindAllStringSubmatch(df, -1) {
		args[m[1]] = os.Expand(m[2], func(k string) string { return args[k] })
	}
	froms := regexp.MustCompile(`(?m)^FROM\s+(\S+)`).FindAllStringSubmatch(df, -1)
	for _, f := range froms {
		f[1] = os.Expand(f[1], func(k string) string { return args[k] })
	}
	if len(froms) < 2 {
		t.Fatalf("want a multi-stage build, got FROM lines %v", froms)
	}
	if !strings.HasPrefix(froms[0][1], "golang:") {
		t.Errorf("build stage %s, want a golang image (gcc included)", froms[0][1])
	}
	if last := froms[len(froms)-1][1]; !strings.HasPrefix(last, "debian:") || !strings.HasSuffix(last, "-slim") {
		t.Errorf("runtime stage %s, want debian slim", last)
	}
	if !strings.Contains(df, "CGO_ENABLED=1") || !strings.Contains(df, "./cmd/lakewap") {
		t.Errorf("Dockerfile must build ./cmd/lakewap with CGO_ENABLED=1")
	}
	if !strings.Contains(df, "libstdc++6") {
		t.Errorf("runtime stage must install libstdc++6 (DuckDB is C++)")
	}
	users := regexp.MustCompile(`(?m)^USER\s+(\S+)`).FindAllStringSubmatch(df, -1)
	if len(users) == 0 || strings.HasPrefix(users[len(users)-1][1], "0") || strings.HasPrefix(users[len(users)-1][1], "root") {
		t.Errorf("the image must run as a non-root user, USER lines: %v", users)
	}
	if hc := regexp.MustCompile(`(?m)^HEALTHCHECK .*\n?.*CMD \["/usr/local/bin/lakewap", "ready"`).FindString(df); hc == "" {
		t.Errorf("the image needs a HEALTHCHECK running lakewap ready (/readyz)")
	}
	goVer := regexp.MustCompile(`(?m)^ARG GO_VERSION=(\S+)`).FindStringSubmatch(df)
	mod, err := os.ReadFile("../go.mod")
	must(t, err)
	want := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(mod)
	if goVer == nil || want == nil || goVer[1] != string(want[1]) {
		t.Errorf("Dockerfile GO_VERSION %v, go.mod says go %s", goVer, want[1])
	}
}

// docker-compose.yml is closed by default: every secret must come from the
// user (no default compose would fall back to), and every published port
// listens on 127.0.0.1 unless HOST_BIND_ADDRESS says otherwise.
func TestComposeIsClosedByDefault(t *testing.T) {
	src, err := os.ReadFile("../docker-compose.yml")
	must(t, err)
	secret := regexp.MustCompile(`(KEY|SECRET|PASSWORD|TOKEN|USER)`)
	for _, ref := range regexp.MustCompile(`\$\{([A-Z0-9_]+)([^}]*)\}`).FindAllStringSubmatch(string(src), -1) {
		if secret.MatchString(ref[1]) && !strings.HasPrefix(ref[2], ":?") {
			t.Errorf("%s: a secret with a default (want ${%s:?...})", ref[0], ref[1])
		}
	}
	c := loadCompose(t)
	for name, svc := range c.Services {
		for _, p := range svc.Ports {
			if !strings.HasPrefix(p, "127.0.0.1:") {
				t.Errorf("service %s publishes %s on every interface", name, p)
			}
		}
	}
	// lakewap seals its run records: runner.state_key_file is written by the
	// entry point from a required variable, before lakewap starts.
	cfgSrc, err := os.ReadFile("../deploy/lakewap.yaml")
	must(t, err)
	lw := c.Services["lakewap"]
	cfg, err := config.ParseIn(cfgSrc, func(k string) (string, bool) { v, ok := lw.Environment[k]; return v, ok }, "")
	must(t, err)
	ep := strings.Join(lw.Entrypoint, " ")
	if cfg.Runner.StateKeyFile == "" || lw.Environment["LAKEWAP_STATE_KEY"] == "" ||
		!strings.Contains(ep, `printf '%s' "$$LAKEWAP_STATE_KEY" >`+cfg.Runner.StateKeyFile) || !strings.Contains(ep, "exec /usr/local/bin/lakewap") {
		t.Errorf("lakewap runs without a state key (runner.state_key_file %q, entry point %q)", cfg.Runner.StateKeyFile, ep)
	}
	// Without the secrets, compose stops.
	if _, err := composeExpand(src, nil); err == nil {
		t.Errorf("docker-compose.yml expands without any secret set")
	}
}

var composeRef = regexp.MustCompile(`\$\{([A-Z0-9_]+)(?:(:-|:\?)([^}]*))?\}`)

// composeExpand resolves ${VAR}, ${VAR:-default} and ${VAR:?error} as
// docker compose does, with env as the .env file.
func composeExpand(src []byte, env map[string]string) ([]byte, error) {
	var missing []string
	out := composeRef.ReplaceAllStringFunc(string(src), func(m string) string {
		g := composeRef.FindStringSubmatch(m)
		if v, ok := env[g[1]]; ok && v != "" {
			return v
		}
		if g[2] == ":-" {
			return g[3]
		}
		missing = append(missing, g[1])
		return m
	})
	if len(missing) > 0 {
		return nil, fmt.Errorf("not set: %s", strings.Join(missing, ", "))
	}
	return []byte(out), nil
}

// docker-compose.yml has no default webhook token: compose stops when it
// is unset or empty (${VAR:?...}) instead of serving a token printed in
// the repository.
func TestComposeHasNoDefaultWebhookToken(t *testing.T) {
	src, err := os.ReadFile("../docker-compose.yml")
	must(t, err)
	refs := regexp.MustCompile(`\$\{LAKEWAP_WEBHOOK_TOKEN[^}]*\}`).FindAllString(string(src), -1)
	if len(refs) < 2 {
		t.Fatalf("docker-compose.yml refers to LAKEWAP_WEBHOOK_TOKEN %d times, want lakeFS's and lakewap's", len(refs))
	}
	for _, r := range refs {
		if !strings.HasPrefix(r, "${LAKEWAP_WEBHOOK_TOKEN:?") {
			t.Errorf("%s: want ${LAKEWAP_WEBHOOK_TOKEN:?...} (no default, fail when unset)", r)
		}
	}
}

// TestComposeLakewapIsNotTheLakeFSAdmin: lakeFS asks its ACL server (built
// from the lakeFS module the tools module pins), lakefs-setup makes user
// lakewap in group Writers with lakewap's own key, lakewap runs with that
// key and never sees the admin's, and the ACL server (no authentication of
// its own) is on a network lakewap is not on, with no published port.
// scripts/compose-smoke.sh checks the same on a running stack.
func TestComposeLakewapIsNotTheLakeFSAdmin(t *testing.T) {
	c := loadCompose(t)
	acl, lakefs, setup, lw := c.Services["lakefs-acl"], c.Services["lakefs"], c.Services["lakefs-setup"], c.Services["lakewap"]
	if acl.Build == nil || !strings.HasPrefix(acl.Image, "lakewap-lakefs-acl:") {
		t.Errorf("lakefs-acl must be built (lakeFS publishes no ACL server image), image %q", acl.Image)
	}
	mod, err := os.ReadFile("../tools/lakefs/go.mod")
	must(t, err)
	pinned := regexp.MustCompile(`(?m)^require github.com/treeverse/lakefs (v\S+)$`).FindSubmatch(mod)
	if pinned == nil || "v"+strings.TrimPrefix(acl.Image, "lakewap-lakefs-acl:") != string(pinned[1]) ||
		"v"+strings.TrimPrefix(lakefs.Image, "treeverse/lakefs:") != string(pinned[1]) {
		t.Errorf("images %s and %s, tools/lakefs pins lakeFS %s", acl.Image, lakefs.Image, pinned)
	}
	df, err := os.ReadFile("../deploy/lakefs-acl/Dockerfile")
	must(t, err)
	if !strings.Contains(string(df), "COPY tools/lakefs/go.mod tools/lakefs/go.sum") ||
		!strings.Contains(string(df), "go build -ldflags=\"-s -w\" -o /out/acl github.com/treeverse/lakefs/contrib/auth/acl/cmd/acl") {
		t.Errorf("deploy/lakefs-acl/Dockerfile must build contrib/auth/acl from the module tools/lakefs pins")
	}
	if acl.Environment["ACLSERVER_ENCRYPT_SECRET_KEY"] == "" {
		t.Errorf("the ACL server needs encrypt.secret_key")
	}
	_, aport, _ := net.SplitHostPort(acl.Environment["ACLSERVER_LISTEN_ADDRESS"])
	if lakefs.Environment["LAKEFS_AUTH_API_ENDPOINT"] != "http://lakefs-acl:"+aport+"/api/v1" || lakefs.Environment["LAKEFS_AUTH_UI_CONFIG_RBAC"] != "simplified" {
		t.Errorf("lakeFS must ask the lakefs-acl service (auth.api.endpoint, simplified RBAC): %v", lakefs.Environment)
	}
	if lakefs.DependsOn["lakefs-acl"].Condition != "service_healthy" {
		t.Errorf("lakeFS must wait for a healthy ACL server: %+v", lakefs.DependsOn)
	}
	if len(acl.Ports) > 0 {
		t.Errorf("lakefs-acl publishes %v: it has no authentication", acl.Ports)
	}
	if n := acl.networks(); len(n) != 1 || !c.Networks[n[0]].Internal {
		t.Errorf("lakefs-acl joins %v, want one internal network", n)
	} else {
		for name, svc := range c.Services {
			on := slices.Contains(svc.networks(), n[0])
			if want := name == "lakefs-acl" || name == "lakefs" || name == "lakefs-setup"; on != want {
				t.Errorf("service %s on the ACL server's network %s: %v, want %v", name, n[0], on, want)
			}
		}
	}

	cmd := strings.Join(setup.Command, " ")
	for _, want := range []string{`-d '{"id":"lakewap"}' http://lakefs:8000/api/v1/auth/users`,
		"-X PUT http://lakefs:8000/api/v1/auth/groups/Writers/members/lakewap",
		`--data-urlencode "access_key=$$LAKEWAP_LAKEFS_ACCESS_KEY_ID"`, `--data-urlencode "secret_key=$$LAKEWAP_LAKEFS_SECRET_ACCESS_KEY"`,
		"http://lakefs-acl:" + aport + "/api/v1/auth/users/lakewap/credentials"} {
		if !strings.Contains(cmd, want) {
			t.Errorf("lakefs-setup does not %s: %s", want, cmd)
		}
	}
	// The datasets' target is branch-protected: lakeFS then refuses uploads
	// and commits to it for every key (Writers may write any branch), while
	// merges and reverts go through.
	cfgSrc, err := os.ReadFile("../deploy/lakewap.yaml")
	must(t, err)
	cfg, err := config.ParseIn(cfgSrc, func(k string) (string, bool) { v, ok := lw.Environment[k]; return v, ok }, "")
	must(t, err)
	for name, ds := range cfg.Datasets {
		rule := fmt.Sprintf(`-d '[{"pattern":"%s"}]' http://lakefs:8000/api/v1/repositories/%s/settings/branch_protection`, ds.Target, ds.Repository)
		if !strings.Contains(cmd, rule) {
			t.Errorf("lakefs-setup does not branch-protect dataset %s's target %s/%s: %s", name, ds.Repository, ds.Target, cmd)
		}
	}
	if strings.Contains(cmd, "Admins") || strings.Contains(cmd, "Supers") {
		t.Errorf("lakefs-setup puts lakewap in a group above Writers: %s", cmd)
	}
	if lw.Environment["LAKEFS_ACCESS_KEY_ID"] == setup.Environment["LAKEFS_ACCESS_KEY_ID"] ||
		lw.Environment["LAKEFS_SECRET_ACCESS_KEY"] == setup.Environment["LAKEFS_SECRET_ACCESS_KEY"] {
		t.Errorf("lakewap runs with the lakeFS admin's key")
	}
	for k, v := range lw.Environment {
		if v == setup.Environment["LAKEFS_SECRET_ACCESS_KEY"] {
			t.Errorf("lakewap's %s is the lakeFS admin's secret", k)
		}
	}
}
