// Package helmtest renders lakewap's Helm chart (deploy/helm/lakewap) with
// Helm's own Go packages and decodes every manifest strictly into the
// Kubernetes API types. It is a module of its own so that Helm and the
// Kubernetes API stay out of the product's go.mod; ./test.sh runs it.
package helmtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

const chartDir = "../../deploy/helm/lakewap"

// manifests are the rendered objects of one release, by kind and name.
type manifests struct {
	deployments map[string]*appsv1.Deployment
	services    map[string]*corev1.Service
	configMaps  map[string]*corev1.ConfigMap
	secrets     map[string]*corev1.Secret
	claims      map[string]*corev1.PersistentVolumeClaim
}

// render renders the chart with values over its defaults and decodes each
// manifest strictly: a field the API type does not have fails.
func render(t *testing.T, values map[string]any) manifests {
	t.Helper()
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatalf("load chart: %v", err)
	}
	vals, err := chartutil.ToRenderValues(ch, values, chartutil.ReleaseOptions{Name: "wap", Namespace: "data", IsInstall: true}, chartutil.DefaultCapabilities)
	if err != nil {
		t.Fatalf("values: %v", err)
	}
	out, err := engine.Render(ch, vals)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	m := manifests{map[string]*appsv1.Deployment{}, map[string]*corev1.Service{}, map[string]*corev1.ConfigMap{},
		map[string]*corev1.Secret{}, map[string]*corev1.PersistentVolumeClaim{}}
	for file, text := range out {
		if strings.HasSuffix(file, ".tpl") || strings.HasSuffix(file, "NOTES.txt") {
			continue
		}
		for i, doc := range strings.Split(text, "\n---") {
			if strings.TrimSpace(doc) == "" {
				continue
			}
			js, err := yaml.YAMLToJSON([]byte(doc))
			if err != nil {
				t.Fatalf("%s #%d is not YAML: %v\n%s", file, i, err, doc)
			}
			var head struct{ APIVersion, Kind string }
			if err := json.Unmarshal(js, &head); err != nil {
				t.Fatal(err)
			}
			var obj interface{ GetName() string }
			switch head.APIVersion + "/" + head.Kind {
			case "apps/v1/Deployment":
				obj = &appsv1.Deployment{}
			case "v1/Service":
				obj = &corev1.Service{}
			case "v1/ConfigMap":
				obj = &corev1.ConfigMap{}
			case "v1/Secret":
				obj = &corev1.Secret{}
			case "v1/PersistentVolumeClaim":
				obj = &corev1.PersistentVolumeClaim{}
			default:
				t.Fatalf("%s: kind %s/%s is not one the test knows", file, head.APIVersion, head.Kind)
			}
			dec := json.NewDecoder(bytes.NewReader(js))
			dec.DisallowUnknownFields()
			if err := dec.Decode(obj); err != nil {
				t.Fatalf("%s does not decode strictly into %T: %v\n%s", file, obj, err, doc)
			}
			switch o := obj.(type) {
			case *appsv1.Deployment:
				m.deployments[o.Name] = o
			case *corev1.Service:
				m.services[o.Name] = o
			case *corev1.ConfigMap:
				m.configMaps[o.Name] = o
			case *corev1.Secret:
				m.secrets[o.Name] = o
			case *corev1.PersistentVolumeClaim:
				m.claims[o.Name] = o
			}
		}
	}
	return m
}

func TestChartRendersAndDecodesStrictly(t *testing.T) {
	m := render(t, map[string]any{"secrets": map[string]any{
		"LAKEFS_ACCESS_KEY_ID": "AKIAEXAMPLE", "LAKEFS_SECRET_ACCESS_KEY": "example-secret", "LAKEWAP_WEBHOOK_TOKEN": "example-token"}})
	d := m.deployments["wap-lakewap"]
	if d == nil || len(m.deployments) != 1 {
		t.Fatalf("deployments %v", m.deployments)
	}
	pod := d.Spec.Template.Spec
	c := pod.Containers[0]

	// Probes on /healthz and /readyz, on the port the config listens on.
	if c.LivenessProbe == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" || c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
		t.Errorf("probes: liveness %+v, readiness %+v", c.LivenessProbe, c.ReadinessProbe)
	}
	cm := m.configMaps["wap-lakewap"]
	if cm == nil {
		t.Fatalf("no config map: %v", m.configMaps)
	}
	var cfg struct {
		Runner struct {
			ShutdownGrace string `json:"shutdown_grace"`
		} `json:"runner"`
		HTTP struct {
			Listen string `json:"listen"`
		} `json:"http"`
		Audit struct {
			CacheDir string `json:"cache_dir"`
			WorkDir  string `json:"work_dir"`
		} `json:"audit"`
	}
	if err := yaml.Unmarshal([]byte(cm.Data["lakewap.yaml"]), &cfg); err != nil {
		t.Fatalf("lakewap.yaml in the config map: %v", err)
	}
	if port := c.Ports[0].ContainerPort; cfg.HTTP.Listen != fmt.Sprintf(":%d", port) {
		t.Errorf("http.listen %q, container port %d", cfg.HTTP.Listen, port)
	}

	// The pod's grace period is above runner.shutdown_grace.
	grace, err := time.ParseDuration(cfg.Runner.ShutdownGrace)
	if err != nil {
		t.Fatalf("runner.shutdown_grace %q: %v", cfg.Runner.ShutdownGrace, err)
	}
	if pod.TerminationGracePeriodSeconds == nil || time.Duration(*pod.TerminationGracePeriodSeconds)*time.Second <= grace {
		t.Errorf("terminationGracePeriodSeconds %v, not above runner.shutdown_grace %s", pod.TerminationGracePeriodSeconds, grace)
	}

	// The config and the audit cache are volumes, mounted where the config
	// says; the root filesystem is read-only, so nothing else is written.
	mounts := map[string]string{}
	for _, vm := range c.VolumeMounts {
		mounts[vm.MountPath] = vm.Name
	}
	if mounts["/etc/lakewap"] != "config" || mounts["/var/lib/lakewap"] == "" {
		t.Errorf("mounts %v", mounts)
	}
	for _, dir := range []string{cfg.Audit.CacheDir, cfg.Audit.WorkDir} {
		if !strings.HasPrefix(dir, "/var/lib/lakewap/") {
			t.Errorf("audit directory %q is not on the audit volume", dir)
		}
	}
	if c.SecurityContext == nil || c.SecurityContext.ReadOnlyRootFilesystem == nil || !*c.SecurityContext.ReadOnlyRootFilesystem {
		t.Errorf("root filesystem not read-only: %+v", c.SecurityContext)
	}

	// Secrets are in the Secret, not the config map: every ${NAME} of the
	// config is a key of the Secret the pod takes its environment from.
	sec := m.secrets[c.EnvFrom[0].SecretRef.Name]
	if sec == nil {
		t.Fatalf("the pod's secret %q is not rendered", c.EnvFrom[0].SecretRef.Name)
	}
	for _, name := range []string{"LAKEFS_ACCESS_KEY_ID", "LAKEFS_SECRET_ACCESS_KEY", "LAKEWAP_WEBHOOK_TOKEN"} {
		if !strings.Contains(cm.Data["lakewap.yaml"], "${"+name+"}") || sec.StringData[name] == "" {
			t.Errorf("%s: in the config %v, in the secret %q", name, strings.Contains(cm.Data["lakewap.yaml"], "${"+name+"}"), sec.StringData[name])
		}
		if strings.Contains(cm.Data["lakewap.yaml"], sec.StringData[name]) {
			t.Errorf("the value of %s is in the config map", name)
		}
	}
	if len(m.configMaps) != 1 || len(m.claims) != 0 {
		t.Errorf("optional resources rendered by default: config maps %d, claims %d", len(m.configMaps), len(m.claims))
	}

	// The rendered config is one lakewap accepts, with the Secret's values.
	validate(t, cm.Data["lakewap.yaml"], sec.StringData)
}

// validate runs lakewap validate on config with env, from the main module.
func validate(t *testing.T, config string, env map[string]string) {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command to build lakewap validate")
	}
	path := filepath.Join(t.TempDir(), "lakewap.yaml")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "run", "./cmd/lakewap", "validate", path)
	cmd.Dir = "../.."
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("lakewap validate of the rendered config: %v\n%s\n%s", err, out, config)
	}
}

// The optional resources: the audit cache on a PersistentVolumeClaim, the
// alert rules and the dashboard as config maps holding deploy/'s files.
func TestChartOptionalResources(t *testing.T) {
	m := render(t, map[string]any{
		"auditCache":     map[string]any{"persistence": map[string]any{"enabled": true, "size": "50Gi"}},
		"alertRules":     map[string]any{"enabled": true, "labels": map[string]any{"prometheus": "main"}},
		"dashboard":      map[string]any{"enabled": true},
		"existingSecret": "lakewap-prod",
	})
	claim := m.claims["wap-lakewap-audit"]
	if claim == nil || claim.Spec.Resources.Requests.Storage().String() != "50Gi" {
		t.Fatalf("claims %v", m.claims)
	}
	pod := m.deployments["wap-lakewap"].Spec.Template.Spec
	i := slices.IndexFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == "audit" })
	if i < 0 || pod.Volumes[i].PersistentVolumeClaim == nil || pod.Volumes[i].PersistentVolumeClaim.ClaimName != claim.Name {
		t.Errorf("the audit volume is not the claim: %+v", pod.Volumes)
	}
	if len(m.secrets) != 0 || pod.Containers[0].EnvFrom[0].SecretRef.Name != "lakewap-prod" {
		t.Errorf("with existingSecret: secrets %v, envFrom %+v", m.secrets, pod.Containers[0].EnvFrom)
	}
	for name, file := range map[string]string{
		"wap-lakewap-alert-rules": "../../deploy/prometheus/lakewap-alerts.yml",
		"wap-lakewap-dashboard":   "../../deploy/grafana/lakewap-dashboard.json",
	} {
		cm := m.configMaps[name]
		if cm == nil {
			t.Errorf("%s not rendered", name)
			continue
		}
		want, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		key := filepath.Base(file)
		if strings.TrimSpace(cm.Data[key]) != strings.TrimSpace(string(want)) {
			t.Errorf("%s's %s differs from %s: copy it into deploy/helm/lakewap/files/", name, key, file)
		}
	}
	if m.configMaps["wap-lakewap-alert-rules"].Labels["prometheus"] != "main" || m.configMaps["wap-lakewap-dashboard"].Labels["grafana_dashboard"] != "1" {
		t.Errorf("labels of the optional config maps: %v, %v", m.configMaps["wap-lakewap-alert-rules"].Labels, m.configMaps["wap-lakewap-dashboard"].Labels)
	}
}
