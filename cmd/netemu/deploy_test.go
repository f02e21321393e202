package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/netemu/netemu/cli"
	"go.yaml.in/yaml/v3"
)

// The fields of deploy/kubernetes's manifests that its README and
// netemu rely on.
type k8sObject struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name string `yaml:"name"`
	} `yaml:"metadata"`
	Data map[string]string `yaml:"data"` // ConfigMap
	Spec struct {
		// Job
		CompletionMode string `yaml:"completionMode"`
		Completions    *int   `yaml:"completions"`
		Parallelism    *int   `yaml:"parallelism"`
		Template       struct {
			Spec k8sPodSpec `yaml:"spec"`
		} `yaml:"template"`
		k8sPodSpec `yaml:",inline"` // Pod
	} `yaml:"spec"`
}

type k8sPodSpec struct {
	RestartPolicy   string `yaml:"restartPolicy"`
	SecurityContext struct {
		RunAsNonRoot *bool `yaml:"runAsNonRoot"`
		RunAsUser    *int  `yaml:"runAsUser"`
	} `yaml:"securityContext"`
	Containers []struct {
		Name  string   `yaml:"name"`
		Image string   `yaml:"image"`
		Args  []string `yaml:"args"`
		Env   []struct {
			Name      string `yaml:"name"`
			Value     string `yaml:"value"`
			ValueFrom struct {
				FieldRef struct {
					FieldPath string `yaml:"fieldPath"`
				} `yaml:"fieldRef"`
			} `yaml:"valueFrom"`
		} `yaml:"env"`
		VolumeMounts []struct {
			Name      string `yaml:"name"`
			MountPath string `yaml:"mountPath"`
		} `yaml:"volumeMounts"`
	} `yaml:"containers"`
	Volumes []struct {
		Name      string `yaml:"name"`
		ConfigMap *struct {
			Name string `yaml:"name"`
		} `yaml:"configMap"`
		PersistentVolumeClaim *struct {
			ClaimName string `yaml:"claimName"`
		} `yaml:"persistentVolumeClaim"`
	} `yaml:"volumes"`
}

func readManifests(t *testing.T, name string) map[string]k8sObject {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "deploy", "kubernetes", name))
	if err != nil {
		t.Fatal(err)
	}
	objs := map[string]k8sObject{}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	for {
		var o k8sObject
		if err := dec.Decode(&o); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		objs[o.Kind] = o
	}
	return objs
}

// mountOf returns where the pod mounts the volume of a claim or config
// map.
func mountOf(t *testing.T, p k8sPodSpec, match func(configMap, claim string) bool) string {
	t.Helper()
	for _, v := range p.Volumes {
		cm, claim := "", ""
		if v.ConfigMap != nil {
			cm = v.ConfigMap.Name
		}
		if v.PersistentVolumeClaim != nil {
			claim = v.PersistentVolumeClaim.ClaimName
		}
		if !match(cm, claim) {
			continue
		}
		for _, m := range p.Containers[0].VolumeMounts {
			if m.Name == v.Name {
				return m.MountPath
			}
		}
	}
	t.Fatalf("no mount of the volume")
	return ""
}

// deploy/kubernetes/job.yaml is a batch/v1 Indexed Job whose pods run
// netemu sweep on the study of its ConfigMap, one shard each, writing
// their parts where merge.yaml reads them; JOB_COMPLETIONS is the Job's
// completions.
func TestKubernetesManifests(t *testing.T) {
	objs := readManifests(t, "job.yaml")
	job, cm := objs["Job"], objs["ConfigMap"]
	if job.APIVersion != "batch/v1" || job.Spec.CompletionMode != "Indexed" || job.Spec.Completions == nil || job.Spec.Parallelism == nil {
		t.Fatalf("job.yaml: want a batch/v1 Job with completionMode Indexed, completions and parallelism; got %+v", job)
	}
	pod := job.Spec.Template.Spec
	n := *job.Spec.Completions
	if pod.RestartPolicy != "Never" || len(pod.Containers) != 1 || pod.SecurityContext.RunAsNonRoot == nil || !*pod.SecurityContext.RunAsNonRoot ||
		pod.SecurityContext.RunAsUser == nil || *pod.SecurityContext.RunAsUser == 0 {
		t.Fatalf("job.yaml: want one container, restartPolicy Never, runAsNonRoot and a non-zero runAsUser: %+v", pod)
	}
	c := pod.Containers[0]
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value + e.ValueFrom.FieldRef.FieldPath
	}
	if env["JOB_COMPLETIONS"] != strconv.Itoa(n) {
		t.Errorf("job.yaml: JOB_COMPLETIONS is %q; the Job's completions %d", env["JOB_COMPLETIONS"], n)
	}
	if env["NETEMU_PART"] != "metadata.annotations['batch.kubernetes.io/job-completion-index']" {
		t.Errorf("job.yaml: NETEMU_PART is %q; want the completion index's annotation", env["NETEMU_PART"])
	}
	studyDir := mountOf(t, pod, func(c, _ string) bool { return c == cm.Metadata.Name })
	results := mountOf(t, pod, func(_, claim string) bool { return claim != "" })
	want := []string{"sweep", "--spec=" + studyDir + "/study.yaml", "--out=" + results + "/part-$(NETEMU_PART).jsonl", "--continue"}
	if !slices.Equal(c.Args, want) {
		t.Errorf("job.yaml: args %q; want %q", c.Args, want)
	}

	// The study is one netemu plans, and each pod's shard comes from its
	// environment.
	study := filepath.Join(t.TempDir(), "study.yaml")
	os.WriteFile(study, []byte(cm.Data["study.yaml"]), 0o644)
	if _, err := cli.PlanSweep(context.Background(), &sweepCmd.Command, []string{"--spec", study}); err != nil {
		t.Errorf("job.yaml's study: %v", err)
	}
	t.Setenv("JOB_COMPLETIONS", env["JOB_COMPLETIONS"])
	t.Setenv("JOB_COMPLETION_INDEX", strconv.Itoa(n-1))
	if i, got, ok, err := cli.ShardFromEnv(); !ok || err != nil || i != n-1 || got != n {
		t.Errorf("the last pod's shard: %d/%d, %v, %v; want %d/%d", i, got, ok, err, n-1, n)
	}

	// merge.yaml merges every part, from the same claim.
	mp := readManifests(t, "merge.yaml")["Pod"].Spec.k8sPodSpec
	mresults := mountOf(t, mp, func(_, claim string) bool { return claim != "" })
	wantMerge := []string{"merge"}
	for i := range n {
		wantMerge = append(wantMerge, fmt.Sprintf("%s/part-%d.jsonl", mresults, i))
	}
	if len(mp.Containers) != 1 || !slices.Equal(mp.Containers[0].Args, wantMerge) || mp.Volumes[0].PersistentVolumeClaim.ClaimName != pod.Volumes[1].PersistentVolumeClaim.ClaimName {
		t.Errorf("merge.yaml: want one container with args %q on the Job's claim; got %+v", wantMerge, mp)
	}
}

// The images are a static binary on a minimal base, run as a non-root
// user; toxiproxy's stand-in serves the API on toxiproxy's port, on the
// container's interfaces.
func TestContainerImage(t *testing.T) {
	for _, dir := range []string{"kubernetes", "toxiproxy"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "deploy", dir, "Dockerfile"))
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		froms := regexp.MustCompile(`(?m)^FROM (\S+)`).FindAllStringSubmatch(s, -1)
		user := regexp.MustCompile(`(?m)^USER (\S+)`).FindAllStringSubmatch(s, -1)
		if !strings.Contains(s, "CGO_ENABLED=0 go build") || len(froms) < 2 ||
			!(strings.HasPrefix(froms[len(froms)-1][1], "gcr.io/distroless/static") || froms[len(froms)-1][1] == "scratch") ||
			len(user) == 0 || strings.HasPrefix(user[len(user)-1][1], "0") || strings.HasPrefix(user[len(user)-1][1], "root") {
			t.Errorf("deploy/%s/Dockerfile: want a CGO_ENABLED=0 build, a last stage FROM distroless/static or scratch and a non-root USER", dir)
		}
		if dir == "toxiproxy" && (froms[len(froms)-1][1] != "scratch" || !strings.Contains(s, `ENTRYPOINT ["/netemu", "toxiproxy", "--listen", "0.0.0.0:8474"]`) || !strings.Contains(s, "EXPOSE 8474")) {
			t.Errorf("deploy/toxiproxy/Dockerfile: want FROM scratch, port 8474 exposed and netemu toxiproxy listening on it")
		}
	}
}
