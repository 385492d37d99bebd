package cli

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// manifests are the objects of examples/kubernetes/*.yaml, decoded.
type manifests struct {
	secrets  map[string]*corev1.Secret
	pvcs     map[string]*corev1.PersistentVolumeClaim
	deploys  map[string]*appsv1.Deployment
	jobs     map[string]*batchv1.Job
	services map[string]*corev1.Service
	policies map[string]*networkingv1.NetworkPolicy
}

// decodeManifests decodes every document of every manifest strictly
// (decodeStrict) into the type of its apiVersion and kind, as a cluster's
// API server does with fieldValidation=Strict.
func decodeManifests(t *testing.T) *manifests {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "..", "examples", "kubernetes", "*.yaml"))
	if err != nil || len(files) < 3 {
		t.Fatalf("manifests: %v, %v", files, err)
	}
	m := &manifests{secrets: map[string]*corev1.Secret{}, pvcs: map[string]*corev1.PersistentVolumeClaim{}, deploys: map[string]*appsv1.Deployment{},
		jobs: map[string]*batchv1.Job{}, services: map[string]*corev1.Service{}, policies: map[string]*networkingv1.NetworkPolicy{}}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(data), -1) {
			what := fmt.Sprintf("%s, document %d", filepath.Base(f), i+1)
			var head struct {
				APIVersion string `json:"apiVersion"`
				Kind       string `json:"kind"`
				Metadata   struct {
					Name string `json:"name"`
				} `json:"metadata"`
			}
			if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			var obj any
			switch gvk := head.APIVersion + " " + head.Kind; gvk {
			case "v1 Secret":
				obj = decodeInto(t, what, doc, m.secrets, head.Metadata.Name)
			case "v1 PersistentVolumeClaim":
				obj = decodeInto(t, what, doc, m.pvcs, head.Metadata.Name)
			case "v1 Service":
				obj = decodeInto(t, what, doc, m.services, head.Metadata.Name)
			case "apps/v1 Deployment":
				obj = decodeInto(t, what, doc, m.deploys, head.Metadata.Name)
			case "batch/v1 Job":
				obj = decodeInto(t, what, doc, m.jobs, head.Metadata.Name)
			case "networking.k8s.io/v1 NetworkPolicy":
				obj = decodeInto(t, what, doc, m.policies, head.Metadata.Name)
			default:
				t.Fatalf("%s: %q: not a kind this test knows", what, gvk)
			}
			if head.Metadata.Name == "" || obj == nil {
				t.Fatalf("%s: no name", what)
			}
		}
	}
	return m
}

// decodeStrict decodes the YAML doc into v as the API server does with
// fieldValidation=Strict: YAML to JSON refusing duplicate keys, then JSON
// into the type case-sensitively (sigs.k8s.io/json, the API machinery's
// decoder: encoding/json would take "clusterIp" for clusterIP), refusing a
// field the type lacks.
func decodeStrict(doc string, v any) error {
	js, err := yaml.YAMLToJSONStrict([]byte(doc))
	if err != nil {
		return err
	}
	strict, err := sigsjson.UnmarshalStrict(js, v)
	if err != nil {
		return err
	}
	if len(strict) > 0 {
		return errors.Join(strict...)
	}
	return nil
}

// decodeInto decodes doc strictly into a new T and files it under name.
func decodeInto[T any](t *testing.T, what, doc string, into map[string]*T, name string) *T {
	t.Helper()
	v := new(T)
	if err := decodeStrict(doc, v); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if _, dup := into[name]; dup {
		t.Fatalf("%s: a second %T named %s", what, v, name)
	}
	into[name] = v
	return v
}

// TestKubernetesDecodeStrictly: the strict decoding the manifests pass
// refuses a field the API does not have, one of another case, and one
// given twice.
func TestKubernetesDecodeStrictly(t *testing.T) {
	for _, tt := range []struct{ doc, want string }{
		{"apiVersion: batch/v1\nkind: Job\nspec:\n  completionsMode: Indexed\n", `unknown field "spec.completionsMode"`},
		{"apiVersion: batch/v1\nkind: Job\nspec:\n  template:\n    spec:\n      restartpolicy: Never\n", `unknown field "spec.template.spec.restartpolicy"`},
		{"apiVersion: batch/v1\nkind: Job\nspec:\n  parallelism: 2\n  parallelism: 3\n", `"parallelism" already set in map`},
	} {
		var v batchv1.Job
		if err := decodeStrict(tt.doc, &v); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("decodeStrict(%q) = %v, want %s", tt.doc, err, tt.want)
		}
	}
}

// podEnv is what the manifests' $(VAR)s stand for in this test: the
// values Kubernetes would give them in a pod.
var podEnv = map[string]string{"POD_IP": "10.1.2.3", "POD_NAME": "sse-latency-server-7c9d-x2x4k", "CONTROL_TOKEN": "k8s-token", "JOB_INDEX": "3"}

// expandArgs substitutes the $(VAR)s of c's arguments as the kubelet does
// — each must be a variable of the container's env, else Kubernetes would
// pass it as it is — and checks each env source: a field of the pod, or a
// key of a Secret of the manifests.
func expandArgs(t *testing.T, what string, c *corev1.Container, m *manifests) []string {
	t.Helper()
	env := map[string]bool{}
	for _, e := range c.Env {
		env[e.Name] = true
		switch vf := e.ValueFrom; {
		case vf == nil:
		case vf.FieldRef != nil:
			want := map[string]string{"POD_IP": "status.podIP", "POD_NAME": "metadata.name",
				"JOB_INDEX": "metadata.annotations['batch.kubernetes.io/job-completion-index']"}[e.Name]
			if vf.FieldRef.FieldPath != want {
				t.Errorf("%s: env %s from %s, want %q", what, e.Name, vf.FieldRef.FieldPath, want)
			}
		case vf.SecretKeyRef != nil:
			if s := m.secrets[vf.SecretKeyRef.Name]; s == nil || s.StringData[vf.SecretKeyRef.Key] == "" {
				t.Errorf("%s: env %s from secret %s key %s, which the manifests do not hold", what, e.Name, vf.SecretKeyRef.Name, vf.SecretKeyRef.Key)
			}
		}
	}
	if len(c.Command) > 0 {
		t.Errorf("%s: command %q: the image has no shell, its entrypoint is sse-latency", what, c.Command)
	}
	ref := regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)
	out := make([]string, len(c.Args))
	for i, a := range c.Args {
		out[i] = ref.ReplaceAllStringFunc(a, func(s string) string {
			name := s[2 : len(s)-1]
			if !env[name] {
				t.Errorf("%s: argument %q refers to $(%s), which the container's env lacks", what, a, name)
			}
			return podEnv[name]
		})
		if strings.Contains(a, "${") || strings.Contains(out[i], "$") {
			t.Errorf("%s: argument %q: only $(VAR) is substituted (there is no shell)", what, a)
		}
	}
	return out
}

// portOf returns the port of a listen address or URL host.
func portOf(t *testing.T, what, hostPort string) int32 {
	t.Helper()
	_, p, err := net.SplitHostPort(hostPort)
	n, err2 := strconv.Atoi(p)
	if err != nil || err2 != nil {
		t.Fatalf("%s: %q: no port", what, hostPort)
	}
	return int32(n)
}

// containerPort returns the container port named name, 0 if none.
func containerPort(c *corev1.Container, name string) int32 {
	for _, p := range c.Ports {
		if p.Name == name {
			return p.ContainerPort
		}
	}
	return 0
}

// selects reports whether selector (matchLabels) selects labels.
func selects(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// TestKubernetesManifests decodes examples/kubernetes strictly into the
// types of the Kubernetes API (k8s.io/api, a current release) and checks
// what the docs promise of them: the Indexed Job of N clients running all
// at once, its index and token substituted into the arguments of an image
// without a shell; the Deployment of M server replicas, each naming itself
// (--instance-id) and listening where its ports say; the headless control
// Service that resolves to every replica; selectors that match the pods'
// labels, Services whose target ports are the containers', a NetworkPolicy
// that lets the gateway reach the model API and the clients the control
// endpoints; every container's arguments accepted by sse-latency's own
// flag parsing, their ports those of the containers and the Services.
func TestKubernetesManifests(t *testing.T) {
	m := decodeManifests(t)
	srv, probeDep, job := m.deploys["sse-latency-server"], m.deploys["sse-latency-probe"], m.jobs["sse-latency-clients"]
	model, ctl, policy := m.services["sse-latency-server"], m.services["sse-latency-control"], m.policies["sse-latency-server"]
	if srv == nil || probeDep == nil || job == nil || model == nil || ctl == nil || policy == nil || m.pvcs["sse-latency-results"] == nil {
		t.Fatalf("manifests lack an object: server %v, probe %v, job %v, services %v %v, policy %v, pvc %v",
			srv != nil, probeDep != nil, job != nil, model != nil, ctl != nil, policy != nil, m.pvcs["sse-latency-results"] != nil)
	}
	image := ""
	for _, pt := range []struct {
		name string
		spec *corev1.PodTemplateSpec
	}{{"server", &srv.Spec.Template}, {"probe", &probeDep.Spec.Template}, {"job", &job.Spec.Template}} {
		if len(pt.spec.Spec.Containers) != 1 {
			t.Fatalf("%s: %d containers, want 1", pt.name, len(pt.spec.Spec.Containers))
		}
		c := &pt.spec.Spec.Containers[0]
		if image == "" {
			image = c.Image
		}
		if c.Image != image {
			t.Errorf("%s: image %s, the others %s", pt.name, c.Image, image)
		}
		if sc := pt.spec.Spec.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
			t.Errorf("%s: not runAsNonRoot (the image's user is 65532)", pt.name)
		}
	}

	// The servers: M replicas, their ports those of their flags.
	if srv.Spec.Replicas == nil || *srv.Spec.Replicas < 2 {
		t.Errorf("server replicas %v: want a Deployment of several (docs/scale-out.md)", srv.Spec.Replicas)
	}
	srvLabels := srv.Spec.Template.Labels
	if !selects(srv.Spec.Selector.MatchLabels, srvLabels) {
		t.Errorf("server: selector %v does not match its pods' labels %v", srv.Spec.Selector.MatchLabels, srvLabels)
	}
	sc := &srv.Spec.Template.Spec.Containers[0]
	cl, err := parseArgs(expandArgs(t, "server", sc, m))
	if err != nil {
		t.Fatalf("server: sse-latency %q: %v", sc.Args, err)
	}
	if cl.cfg.Instance != podEnv["POD_NAME"] || cl.cfg.Control == "" || cl.cfg.Target != "" {
		t.Errorf("server: instance %q, control %q, target %q: want the pod's name as instance, control endpoints, no -t", cl.cfg.Instance, cl.cfg.Control, cl.cfg.Target)
	}
	if h, _, _ := net.SplitHostPort(cl.cfg.Control); h != podEnv["POD_IP"] {
		t.Errorf("server: --control %s: want the pod's own address only", cl.cfg.Control)
	}
	if p := containerPort(sc, "model"); p == 0 || p != portOf(t, "server -L", cl.cfg.Listen) {
		t.Errorf("server: port model %d, -L %s", p, cl.cfg.Listen)
	}
	if p := containerPort(sc, "control"); p == 0 || p != portOf(t, "server --control", cl.cfg.Control) {
		t.Errorf("server: port control %d, --control %s", p, cl.cfg.Control)
	}
	if rp := sc.ReadinessProbe; rp == nil || rp.HTTPGet == nil || containerPort(sc, rp.HTTPGet.Port.String()) == 0 || rp.HTTPGet.Path != "/v1/models" {
		t.Errorf("server: readiness probe %+v: want GET /v1/models on a port of the container", rp)
	}

	// The Services: selecting the servers, targeting their ports; the
	// control one headless.
	for _, svc := range []*corev1.Service{model, ctl} {
		if !selects(svc.Spec.Selector, srvLabels) {
			t.Errorf("service %s: selector %v does not match the servers' labels %v", svc.Name, svc.Spec.Selector, srvLabels)
		}
		if len(svc.Spec.Ports) != 1 || containerPort(sc, svc.Spec.Ports[0].TargetPort.String()) == 0 {
			t.Errorf("service %s: ports %+v: want one, targeting a port of the server container", svc.Name, svc.Spec.Ports)
		}
	}
	if ctl.Spec.ClusterIP != corev1.ClusterIPNone {
		t.Errorf("service %s: clusterIP %q: want None (headless: its name resolves to every replica; a cluster IP would balance the control requests)", ctl.Name, ctl.Spec.ClusterIP)
	}
	if ctl.Spec.Ports[0].TargetPort.String() != "control" || model.Spec.Ports[0].TargetPort.String() != "model" {
		t.Errorf("services target %s and %s, want model and control", model.Spec.Ports[0].TargetPort.String(), ctl.Spec.Ports[0].TargetPort.String())
	}
	ctlHost := ctl.Name + "." + "default.svc"

	// The clients: an Indexed Job of N at once.
	js := &job.Spec
	if js.CompletionMode == nil || *js.CompletionMode != batchv1.IndexedCompletion || js.Completions == nil || js.Parallelism == nil ||
		*js.Completions < 2 || *js.Parallelism != *js.Completions {
		t.Errorf("job: completion mode %v, completions %v, parallelism %v: want Indexed, N > 1 all at once", js.CompletionMode, js.Completions, js.Parallelism)
	}
	if js.Template.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("job: restart policy %q, want Never (a run that failed is a result)", js.Template.Spec.RestartPolicy)
	}
	jc := &js.Template.Spec.Containers[0]
	jcl, err := parseArgs(expandArgs(t, "job", jc, m))
	if err != nil {
		t.Fatalf("job: sse-latency %q: %v", jc.Args, err)
	}
	if jcl.cfg.JSONPath != "/results/run-"+podEnv["JOB_INDEX"]+".json" || !slices.ContainsFunc(jc.VolumeMounts, func(v corev1.VolumeMount) bool { return v.MountPath == "/results" }) {
		t.Errorf("job: --json %s, mounts %+v: want /results/run-<index>.json on the results volume", jcl.cfg.JSONPath, jc.VolumeMounts)
	}
	if v := js.Template.Spec.Volumes; len(v) != 1 || v[0].PersistentVolumeClaim == nil || m.pvcs[v[0].PersistentVolumeClaim.ClaimName] == nil {
		t.Errorf("job: volumes %+v: want the results claim of the manifests", v)
	}
	if fs := js.Template.Spec.SecurityContext.FSGroup; fs == nil || *fs != 65532 {
		t.Errorf("job: fsGroup %v: want 65532, the image's user, to write the results volume", fs)
	}
	checkClientFlags(t, "job", jcl.cfg, ctlHost, ctl.Spec.Ports[0].Port, cl.cfg.ControlToken)

	// The probe.
	if !selects(probeDep.Spec.Selector.MatchLabels, probeDep.Spec.Template.Labels) {
		t.Errorf("probe: selector %v does not match its pods' labels %v", probeDep.Spec.Selector.MatchLabels, probeDep.Spec.Template.Labels)
	}
	pc := &probeDep.Spec.Template.Spec.Containers[0]
	args := expandArgs(t, "probe", pc, m)
	if len(args) == 0 || args[0] != "probe" {
		t.Fatalf("probe: arguments %q: want the probe subcommand", args)
	}
	pcl, every, metrics, err := parseProbe(args[1:])
	if err != nil {
		t.Fatalf("probe: sse-latency %q: %v", pc.Args, err)
	}
	if every <= 0 || containerPort(pc, "metrics") != portOf(t, "probe --metrics", metrics) ||
		probeDep.Spec.Template.Annotations["prometheus.io/port"] != strconv.Itoa(int(containerPort(pc, "metrics"))) {
		t.Errorf("probe: --metrics %s, port metrics %d, scrape annotation %q", metrics, containerPort(pc, "metrics"), probeDep.Spec.Template.Annotations["prometheus.io/port"])
	}
	if lp := pc.LivenessProbe; lp == nil || lp.HTTPGet == nil || lp.HTTPGet.Path != "/healthz" || containerPort(pc, lp.HTTPGet.Port.String()) == 0 {
		t.Errorf("probe: liveness probe %+v: want GET /healthz on the metrics port", lp)
	}
	checkClientFlags(t, "probe", pcl.cfg, ctlHost, ctl.Spec.Ports[0].Port, cl.cfg.ControlToken)

	// The NetworkPolicy: the servers' model port to the gateway, their
	// control port to the clients (the probe's and the Job's pods).
	if !selects(policy.Spec.PodSelector.MatchLabels, srvLabels) {
		t.Errorf("policy: selector %v does not match the servers' labels", policy.Spec.PodSelector.MatchLabels)
	}
	modelPort, ctlPort := containerPort(sc, "model"), containerPort(sc, "control")
	allowed := map[int32][]map[string]string{}
	for _, r := range policy.Spec.Ingress {
		for _, p := range r.Ports {
			for _, f := range r.From {
				if f.PodSelector != nil {
					allowed[p.Port.IntVal] = append(allowed[p.Port.IntVal], f.PodSelector.MatchLabels)
				}
			}
		}
	}
	for _, pod := range []struct {
		name   string
		labels map[string]string
	}{{"job", js.Template.Labels}, {"probe", probeDep.Spec.Template.Labels}} {
		if !slices.ContainsFunc(allowed[ctlPort], func(s map[string]string) bool { return selects(s, pod.labels) }) {
			t.Errorf("policy: the %s's pods (labels %v) may not reach the control port %d", pod.name, pod.labels, ctlPort)
		}
		if slices.ContainsFunc(allowed[modelPort], func(s map[string]string) bool { return selects(s, pod.labels) }) {
			t.Errorf("policy: the %s's pods may reach the model port %d straight, not through the gateway", pod.name, modelPort)
		}
	}
	if len(allowed[modelPort]) != 1 || allowed[modelPort][0]["app"] != "ai-gateway" {
		t.Errorf("policy: the model port %d is open to %v, want the gateway's pods only", modelPort, allowed[modelPort])
	}
	if len(allowed) != 2 {
		t.Errorf("policy: ports %v open, want the model and control ports only", slices.Sorted(func(yield func(int32) bool) {
			for p := range allowed {
				if !yield(p) {
					return
				}
			}
		}))
	}
}

// checkClientFlags checks the flags of a client (the Job's, the probe's):
// through the gateway, reading the control Service by its name (which
// resolves to every replica) on its port, with the servers' token.
func checkClientFlags(t *testing.T, what string, cfg Config, ctlHost string, ctlPort int32, token string) {
	t.Helper()
	if len(cfg.Servers) != 1 {
		t.Fatalf("%s: --server %q: want the control Service's name, once", what, cfg.Servers)
	}
	u, err := url.Parse(cfg.Servers[0])
	if err != nil || u.Hostname() != ctlHost || portOf(t, what+" --server", u.Host) != ctlPort {
		t.Errorf("%s: --server %s: want http://%s:%d, the headless control Service", what, cfg.Servers[0], ctlHost, ctlPort)
	}
	if cfg.Target == "" || cfg.ControlToken != token || !cfg.NoLoopback {
		t.Errorf("%s: -t %q, token %q (the servers' %q), no loopback %v", what, cfg.Target, cfg.ControlToken, token, cfg.NoLoopback)
	}
}
