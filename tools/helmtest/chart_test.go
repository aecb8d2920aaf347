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
	networkingv1 "k8s.io/api/networking/v1"
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
	policies    map[string]*networkingv1.NetworkPolicy
}

// render renders the chart with values over its defaults and decodes each
// manifest strictly: a field the API type does not have fails.
func render(t *testing.T, values map[string]any) manifests {
	t.Helper()
	out, err := renderText(values)
	if err != nil {
		t.Fatal(err)
	}
	m := manifests{map[string]*appsv1.Deployment{}, map[string]*corev1.Service{}, map[string]*corev1.ConfigMap{},
		map[string]*corev1.Secret{}, map[string]*corev1.PersistentVolumeClaim{}, map[string]*networkingv1.NetworkPolicy{}}
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
			case "networking.k8s.io/v1/NetworkPolicy":
				obj = &networkingv1.NetworkPolicy{}
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
			case *networkingv1.NetworkPolicy:
				m.policies[o.Name] = o
			}
		}
	}
	return m
}

// renderText renders the chart with values over its defaults: the text of
// each template, or the error Helm gives (a template's fail included).
func renderText(values map[string]any) (map[string]string, error) {
	ch, err := loader.Load(chartDir)
	if err != nil {
		return nil, fmt.Errorf("load chart: %w", err)
	}
	vals, err := chartutil.ToRenderValues(ch, values, chartutil.ReleaseOptions{Name: "wap", Namespace: "data", IsInstall: true}, chartutil.DefaultCapabilities)
	if err != nil {
		return nil, fmt.Errorf("values: %w", err)
	}
	out, err := engine.Render(ch, vals)
	if err != nil {
		return nil, fmt.Errorf("render: %w", err)
	}
	return out, nil
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
	// lakewap never calls the Kubernetes API: the pod holds no service
	// account token (a process made to run a writer's bytes, through a
	// reader's bug, would find none), and runs under the runtime's default
	// seccomp profile.
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Errorf("automountServiceAccountToken %v, want false", pod.AutomountServiceAccountToken)
	}
	if sc := pod.SecurityContext; sc == nil || sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod security context %+v, want seccomp RuntimeDefault", sc)
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
	if len(m.configMaps) != 1 || len(m.claims) != 0 || len(m.policies) != 0 {
		t.Errorf("optional resources rendered by default: config maps %d, claims %d, network policies %d",
			len(m.configMaps), len(m.claims), len(m.policies))
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

// TestChartNetworkPolicy: with networkPolicy.enabled, the pods' port is
// reachable only from the peers named (lakeFS for the pre-merge hook,
// monitoring for /metrics): whoever reaches the port may call the hook and
// read /metrics (docs/trust-model.md). Egress is limited, to DNS and the
// rules given, only when rules are given. Enabled with no peer named is an
// error naming the value, not a policy that shuts lakeFS's hook calls out.
func TestChartNetworkPolicy(t *testing.T) {
	lakeFS := map[string]any{
		"namespaceSelector": map[string]any{"matchLabels": map[string]any{"kubernetes.io/metadata.name": "lakefs"}},
		"podSelector":       map[string]any{"matchLabels": map[string]any{"app.kubernetes.io/name": "lakefs"}},
	}
	monitoring := map[string]any{
		"namespaceSelector": map[string]any{"matchLabels": map[string]any{"kubernetes.io/metadata.name": "monitoring"}},
	}
	kafka := map[string]any{
		"to":    []any{map[string]any{"namespaceSelector": map[string]any{"matchLabels": map[string]any{"kubernetes.io/metadata.name": "kafka"}}}},
		"ports": []any{map[string]any{"port": 9092, "protocol": "TCP"}},
	}
	for _, tc := range []struct {
		name   string
		egress []any
	}{{"ingress only", nil}, {"with egress", []any{kafka}}} {
		t.Run(tc.name, func(t *testing.T) {
			np := map[string]any{"enabled": true, "ingressFrom": []any{lakeFS, monitoring}}
			if tc.egress != nil {
				np["egress"] = tc.egress
			}
			m := render(t, map[string]any{"networkPolicy": np})
			p := m.policies["wap-lakewap"]
			if p == nil || len(m.policies) != 1 {
				t.Fatalf("network policies %v, want wap-lakewap", m.policies)
			}
			d := m.deployments["wap-lakewap"]
			sel := p.Spec.PodSelector.MatchLabels
			if len(sel) == 0 || len(p.Spec.PodSelector.MatchExpressions) != 0 {
				t.Fatalf("the policy selects %+v", p.Spec.PodSelector)
			}
			for k, v := range sel {
				if d.Spec.Template.Labels[k] != v {
					t.Errorf("the policy selects %s=%s, the pods are labelled %v", k, v, d.Spec.Template.Labels)
				}
			}
			wantTypes := []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}
			if tc.egress != nil {
				wantTypes = append(wantTypes, networkingv1.PolicyTypeEgress)
			}
			if !slices.Equal(p.Spec.PolicyTypes, wantTypes) {
				t.Errorf("policy types %v, want %v", p.Spec.PolicyTypes, wantTypes)
			}
			// One rule: the peers named, to the container's port only.
			if len(p.Spec.Ingress) != 1 {
				t.Fatalf("ingress rules %+v, want one", p.Spec.Ingress)
			}
			in := p.Spec.Ingress[0]
			port := d.Spec.Template.Spec.Containers[0].Ports[0]
			if len(in.Ports) != 1 || in.Ports[0].Port == nil || in.Ports[0].Port.IntValue() != int(port.ContainerPort) ||
				in.Ports[0].Protocol == nil || *in.Ports[0].Protocol != corev1.ProtocolTCP {
				t.Errorf("ingress ports %+v, want TCP %d only", in.Ports, port.ContainerPort)
			}
			if len(in.From) != 2 || in.From[0].PodSelector == nil || in.From[0].PodSelector.MatchLabels["app.kubernetes.io/name"] != "lakefs" ||
				in.From[0].NamespaceSelector == nil || in.From[1].NamespaceSelector == nil || in.From[1].PodSelector != nil ||
				in.From[1].NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"] != "monitoring" {
				t.Errorf("ingress from %+v, want the lakeFS pods and the monitoring namespace", in.From)
			}
			if tc.egress == nil {
				if len(p.Spec.Egress) != 0 {
					t.Errorf("egress rules %+v without networkPolicy.egress", p.Spec.Egress)
				}
				return
			}
			// DNS, then the rules given.
			if len(p.Spec.Egress) != 2 {
				t.Fatalf("egress rules %+v, want DNS and kafka", p.Spec.Egress)
			}
			dns := p.Spec.Egress[0]
			var dnsPorts []string
			for _, pp := range dns.Ports {
				dnsPorts = append(dnsPorts, fmt.Sprintf("%s/%s", *pp.Protocol, pp.Port.String()))
			}
			if len(dns.To) != 0 || !slices.Equal(dnsPorts, []string{"UDP/53", "TCP/53"}) {
				t.Errorf("first egress rule %+v, want DNS (53 UDP and TCP)", dns)
			}
			k := p.Spec.Egress[1]
			if len(k.To) != 1 || k.To[0].NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"] != "kafka" ||
				len(k.Ports) != 1 || k.Ports[0].Port.IntValue() != 9092 {
				t.Errorf("second egress rule %+v, want kafka's", k)
			}
		})
	}
	// Enabled, no peer named: an error naming the value.
	_, err := renderText(map[string]any{"networkPolicy": map[string]any{"enabled": true}})
	if err == nil || !strings.Contains(err.Error(), "networkPolicy.ingressFrom") {
		t.Errorf("networkPolicy enabled without ingressFrom: %v, want an error naming networkPolicy.ingressFrom", err)
	}
}
