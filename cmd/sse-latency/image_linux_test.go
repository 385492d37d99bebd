//go:build linux

package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sse-latency/sse-latency/internal/rundoc"
)

// imageConfig is what TestImage checks of the built image's configuration.
type imageConfig struct {
	Entrypoint []string
	User       string
	Labels     map[string]string
	Size       int64 // bytes
	Layers     int
}

// maxImageBytes bounds the image: the static binary (about 12 MB) and
// nothing else.
const maxImageBytes = 20 << 20

// TestImage builds the image with image/build.sh (podman, else buildah)
// from the binary these tests run — built as the image ships it, static,
// the commit stamped — without a registry (FROM scratch), and inspects its
// configuration: the binary as entrypoint, a user that is not root, one
// layer, the commit as its revision label, at most maxImageBytes. Then it
// runs the image (podman, without network): --version shows the commit,
// and a loopback measurement inside the container (-t the server's own -L)
// measures every token. Where no container runtime starts a container on
// this machine, it says why, runtime by runtime, and stops after the
// inspection. Without podman or buildah it skips, or fails under CI=true.
func TestImage(t *testing.T) {
	builder := ""
	for _, b := range []string{"podman", "buildah"} {
		if _, err := exec.LookPath(b); err == nil {
			builder = b
			break
		}
	}
	if builder == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("no podman or buildah (apt-get install podman buildah): CI=true requires one")
		}
		t.Skip("no podman or buildah: apt-get install podman to run this test")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tag := "localhost/sse-latency-test:" + strings.ToLower(rand.Text()[:10])
	build := exec.CommandContext(ctx, "sh", filepath.Join("..", "..", "image", "build.sh"), "image", tag, binary)
	build.Env = append(os.Environ(), "BUILDER="+builder)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("image/build.sh image %s (%s): %v\n%s", tag, builder, err, out)
	}
	t.Cleanup(func() { exec.Command(builder, "rmi", "-f", tag).Run() })

	cfg := inspectImage(t, ctx, builder, tag)
	commit := gitCommit()
	switch {
	case len(cfg.Entrypoint) != 1 || cfg.Entrypoint[0] != "/sse-latency":
		t.Errorf("entrypoint %q, want [/sse-latency]", cfg.Entrypoint)
	case cfg.User == "" || cfg.User == "0" || strings.HasPrefix(cfg.User, "0:") || cfg.User == "root":
		t.Errorf("user %q: want a user that is not root", cfg.User)
	case cfg.Layers != 1:
		t.Errorf("%d layers, want 1 (the binary)", cfg.Layers)
	case cfg.Size <= 0 || cfg.Size > maxImageBytes:
		t.Errorf("image of %d bytes, want at most %d", cfg.Size, maxImageBytes)
	case commit != "" && !strings.HasPrefix(cfg.Labels["org.opencontainers.image.revision"], commit):
		t.Errorf("revision label %q, want commit %s", cfg.Labels["org.opencontainers.image.revision"], commit)
	}
	t.Logf("image %s: %.1f MB, entrypoint %q, user %s, revision %s", tag, float64(cfg.Size)/(1<<20), cfg.Entrypoint, cfg.User,
		cfg.Labels["org.opencontainers.image.revision"])

	if builder != "podman" {
		t.Logf("not run: no podman (%s built the image)", builder)
		return
	}
	run, why := containerRunner(t, ctx, tag)
	if run == nil {
		t.Logf("the image is built and inspected, not run: no container runtime starts a container on this machine:\n%s", why)
		return
	}
	out, errOut, err := run("--version")
	if want := regexp.MustCompile(`^sse-latency \S+ [0-9a-f]{12}(-dirty)?\n$`); err != nil || commit != "" && (!want.MatchString(out) || !strings.Contains(out, commit[:12])) {
		t.Errorf("--version in the image: %q, %v\n%s; want the commit %.12s", out, err, errOut, commit)
	}
	out, errOut, err = run("-L", "127.0.0.1:8090", "-t", "127.0.0.1:8090", "-r", "4", "-c", "2", "-n", "50", "-d", "1", "-q", "--json", "-")
	if err != nil {
		t.Fatalf("a measurement in the image: %v\nstderr:\n%s", err, errOut)
	}
	d, err := rundoc.ReadJSON(strings.NewReader(out))
	if err != nil {
		t.Fatalf("the measurement's document: %v\nstderr:\n%s", err, errOut)
	}
	if g := d.Gateway(); g == nil || g.OK != 4 || g.Tokens != 200 || g.Stream.Unmeasured != 0 || g.Metrics.EmitRecv.N != 4*49 {
		t.Errorf("in the image: gateway batch %+v, want 4 ok requests of 50 tokens, all measured", g)
	}
	t.Logf("in the image: %s", strings.TrimSpace(strings.SplitN(errOut, "\n", 2)[0]))
}

// inspectImage reads the configuration of image tag, with podman's or
// buildah's inspect.
func inspectImage(t *testing.T, ctx context.Context, builder, tag string) imageConfig {
	t.Helper()
	args := []string{"image", "inspect", tag}
	if builder == "buildah" {
		args = []string{"inspect", "--type", "image", tag}
	}
	out, err := exec.CommandContext(ctx, builder, args...).Output()
	if err != nil {
		t.Fatalf("%s %s: %v", builder, strings.Join(args, " "), err)
	}
	var cfg imageConfig
	if builder == "podman" {
		var v []struct {
			Config struct {
				Entrypoint []string
				User       string
				Labels     map[string]string
			}
			Size   int64
			RootFS struct{ Layers []string }
		}
		if err := json.Unmarshal(out, &v); err != nil || len(v) != 1 {
			t.Fatalf("podman image inspect: %v (%d images)\n%s", err, len(v), out)
		}
		c := v[0]
		return imageConfig{Entrypoint: c.Config.Entrypoint, User: c.Config.User, Labels: c.Config.Labels, Size: c.Size, Layers: len(c.RootFS.Layers)}
	}
	var v struct {
		OCIv1 struct {
			Config struct {
				Entrypoint []string
				User       string
				Labels     map[string]string
			} `json:"config"`
			RootFS struct {
				DiffIDs []string `json:"diff_ids"`
			} `json:"rootfs"`
		}
		OCIv1Manifest struct {
			Layers []struct{ Size int64 } `json:"layers"`
		} `json:"Manifest"`
	}
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("buildah inspect: %v\n%s", err, out)
	}
	c := v.OCIv1.Config
	cfg = imageConfig{Entrypoint: c.Entrypoint, User: c.User, Labels: c.Labels, Layers: len(v.OCIv1.RootFS.DiffIDs)}
	if fi, err := os.Stat(binary); err == nil {
		cfg.Size = fi.Size() // buildah reports no image size: the layer is the binary
	}
	return cfg
}

// containerRunner returns what runs image tag with arguments (podman run,
// no network, the container removed after) in the first container runtime
// that starts it here — podman's default, else runc — or nil and why none
// does. The limits of open files and processes are set at or below this
// process's: podman otherwise asks the runtime to raise them, which a
// process without CAP_SYS_RESOURCE (a container's, as the development
// machines are) cannot.
func containerRunner(t *testing.T, ctx context.Context, tag string) (func(args ...string) (stdout, stderr string, err error), string) {
	t.Helper()
	ulimits := []string{}
	for _, l := range []struct {
		name     string
		resource int
		most     uint64
	}{{"nofile", unix.RLIMIT_NOFILE, 4096}, {"nproc", unix.RLIMIT_NPROC, 1024}} {
		var rl unix.Rlimit
		n := l.most
		if unix.Getrlimit(l.resource, &rl) == nil {
			n = min(n, rl.Cur)
		}
		ulimits = append(ulimits, "--ulimit", fmt.Sprintf("%s=%d:%d", l.name, n, n))
	}
	runtimes := []string{""}
	if _, err := exec.LookPath("runc"); err == nil {
		runtimes = append(runtimes, "runc")
	}
	var why []string
	for _, rt := range runtimes {
		run := func(args ...string) (string, string, error) {
			var full []string
			if rt != "" {
				full = append(full, "--runtime", rt)
			}
			full = append(full, "run", "--rm", "--network=none")
			full = append(append(append(full, ulimits...), tag), args...)
			cmd := exec.CommandContext(ctx, "podman", full...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			return stdout.String(), stderr.String(), err
		}
		_, errOut, err := run("--help")
		if err == nil {
			return run, ""
		}
		name := rt
		if name == "" {
			name = "podman's default runtime"
		}
		why = append(why, fmt.Sprintf("  %s: %v: %s", name, err, strings.TrimSpace(errOut)))
	}
	if len(runtimes) == 1 {
		why = append(why, "  (runc, which starts containers where crun cannot, is not installed: apt-get install runc)")
	}
	return nil, strings.Join(why, "\n")
}

// gitCommit is the commit of the work tree, "" without git.
func gitCommit() string {
	out, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}
