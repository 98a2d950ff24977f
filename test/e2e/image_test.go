package e2e

import (
	"bytes"
	"context"
	"crypto/x509"
	"debug/elf"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubegray/kubectl-gray/internal/testutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
	"github.com/kubegray/kubectl-gray/test/cluster"
	"github.com/kubegray/kubectl-gray/test/image"
)

// entrypoint is where ko puts the binary of ./cmd/gray-controller.
const entrypoint = "/ko-app/gray-controller"

// servedImage pushes the OCI layout `make image` wrote ($KUBEGRAY_IMAGE)
// into a fresh in-process registry on 127.0.0.1 and pulls its index back from
// there by tag, as a node would; it returns the repository and the index.
func servedImage(t *testing.T) (name.Repository, v1.ImageIndex) {
	t.Helper()
	dir := os.Getenv("KUBEGRAY_IMAGE")
	if dir == "" {
		t.Skip("KUBEGRAY_IMAGE is not set: run `make image-check` (it builds the image first)")
	}
	reg, err := image.StartRegistry()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = reg.Close() })
	repo, err := name.NewRepository(reg.Repo("kubegray/gray-controller"))
	if err != nil {
		t.Fatal(err)
	}
	tag, err := image.PushLayout(dir, repo)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := remote.Index(tag)
	if err != nil {
		t.Fatalf("pull %s: %v", tag, err)
	}
	return repo, idx
}

// TestImage checks the image `make image` built with ko, then runs the
// controller from the image's own filesystem against a real control plane.
func TestImage(t *testing.T) {
	repo, idx := servedImage(t)
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if m.MediaType != types.OCIImageIndex {
		t.Errorf("index media type %s, want %s", m.MediaType, types.OCIImageIndex)
	}
	var platforms []string
	for _, d := range m.Manifests {
		if d.Platform != nil {
			platforms = append(platforms, d.Platform.String())
		}
	}
	sort.Strings(platforms)
	if want := []string{"linux/amd64", "linux/arm64"}; strings.Join(platforms, " ") != strings.Join(want, " ") {
		t.Fatalf("index platforms %v, want %v", platforms, want)
	}

	var amd64 v1.Image
	for _, p := range image.Platforms {
		img, err := image.PlatformImage(idx, p)
		if err != nil {
			t.Fatal(err)
		}
		if p.Architecture == "amd64" {
			amd64 = img
		}
		checkPlatformImage(t, repo, p, img)
	}
	checkImageVersion(t, amd64)

	c := cluster.StartForTest(t, cluster.Options{Controllers: cluster.WithoutDeploymentController})
	applyManifests(t, c, overlayManifests(t, "base"))
	// Only the host's platform can run here.
	ctrl := runFromImage(t, c, amd64, "gray-system", "gray-controller", "--mode=instead")

	e := newGrayEnv(t, c, "image")
	e.startStable(testutil.GrayDeployment("web", 10, "20"))
	e.do(setImage("web", "nginx:1.26"))
	e.expect("web", grayState{phase: grayapi.PhaseHeld, newSpec: 2, oldTotal: 8, paused: true})
	ctrl.terminate(t)
}

// checkPlatformImage checks one platform's image: config, labels, files,
// the binary's architecture and the SBOM ko attached.
func checkPlatformImage(t *testing.T, repo name.Repository, p v1.Platform, img v1.Image) {
	t.Helper()
	s, err := image.Summarize(img)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %s, %.1f MiB compressed (%d bytes)", p, s.Digest, float64(s.Compressed)/(1<<20), s.Compressed)
	if s.Platform.String() != p.String() {
		t.Errorf("%s: config says platform %s", p, s.Platform)
	}
	if s.Config.User != strconv.Itoa(image.NonRootUID) {
		t.Errorf("%s: user %q, want %d", p, s.Config.User, image.NonRootUID)
	}
	if len(s.Config.Entrypoint) != 1 || s.Config.Entrypoint[0] != entrypoint || len(s.Config.Cmd) != 0 {
		t.Errorf("%s: entrypoint %q cmd %q, want [%s] and no cmd", p, s.Config.Entrypoint, s.Config.Cmd, entrypoint)
	}
	wantLabels := map[string]*regexp.Regexp{
		"org.opencontainers.image.source":   regexp.MustCompile(`^https://github\.com/kubegray/kubectl-gray$`),
		"org.opencontainers.image.version":  regexp.MustCompile(`^\S+$`),
		"org.opencontainers.image.revision": regexp.MustCompile(`^([0-9a-f]{40}|unknown)$`),
		"org.opencontainers.image.licenses": regexp.MustCompile(`^Apache-2\.0$`),
	}
	for k, re := range wantLabels {
		if v := s.Config.Labels[k]; !re.MatchString(v) {
			t.Errorf("%s: label %s = %q, want %s", p, k, v, re)
		}
	}
	// No shell and nothing else to run: the binary is the only executable.
	if want := strings.TrimPrefix(entrypoint, "/"); len(s.Executables) != 1 || s.Executables[0] != want {
		t.Errorf("%s: executables %v, want only %s", p, s.Executables, want)
	}
	for _, sh := range []string{"bin/sh", "bin/bash", "bin/busybox", "usr/bin/sh"} {
		if _, ok := s.Files[sh]; ok {
			t.Errorf("%s: the image has a shell, /%s", p, sh)
		}
	}
	bin := readImageFile(t, img, entrypoint)
	f, err := elf.NewFile(bytes.NewReader(bin))
	if err != nil {
		t.Fatalf("%s: %s is no ELF binary: %v", p, entrypoint, err)
	}
	wantMachine := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[p.Architecture]
	if f.Machine != wantMachine {
		t.Errorf("%s: binary is for %v, want %v", p, f.Machine, wantMachine)
	}
	// CGO off: a static binary asks for no program interpreter (libc loader).
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			t.Errorf("%s: binary is dynamically linked (PT_INTERP)", p)
		}
	}
	if !strings.Contains(string(readImageFile(t, img, image.PasswdPath)), "nonroot:x:65532:65532:") {
		t.Errorf("%s: /etc/passwd has no nonroot user 65532", p)
	}
	if n := countCerts(readImageFile(t, img, image.CABundlePath)); n < 100 {
		t.Errorf("%s: CA bundle has %d certificates, want the NSS set (over 100)", p, n)
	}
	if zone := readImageFile(t, img, image.ZoneinfoDir+"/Europe/Berlin"); !bytes.HasPrefix(zone, []byte("TZif")) {
		t.Errorf("%s: no time-zone database", p)
	}
	sbom, err := remote.Image(image.SBOMTag(repo, s.Digest))
	if err != nil {
		t.Fatalf("%s: no SBOM next to the image: %v", p, err)
	}
	layers, err := sbom.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("%s: SBOM has %d layers (%v), want 1", p, len(layers), err)
	}
	if mt, _ := layers[0].MediaType(); mt != "text/spdx+json" {
		t.Errorf("%s: SBOM media type %s, want text/spdx+json", p, mt)
	}
}

// checkImageVersion runs the image's binary's `version` and wants the
// version its label states: ko injected the Makefile's -X symbols.
func checkImageVersion(t *testing.T, img v1.Image) {
	t.Helper()
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "gray-controller")
	if err := os.WriteFile(bin, readImageFile(t, img, entrypoint), 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("%s version: %v\n%s", entrypoint, err, out)
	}
	want := cfg.Config.Labels["org.opencontainers.image.version"]
	if !strings.HasPrefix(string(out), "gray-controller "+want+" ") {
		t.Errorf("%s version = %q, want version %s injected", entrypoint, out, want)
	}
	t.Logf("image binary: %s", strings.TrimSpace(string(out)))
}

func readImageFile(t *testing.T, img v1.Image, path string) []byte {
	t.Helper()
	data, err := image.ReadFile(img, path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func countCerts(data []byte) int {
	n := 0
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			return n
		}
		if _, err := x509.ParseCertificate(b.Bytes); err == nil {
			n++
		}
	}
}

// saTokenDir is where a pod finds its ServiceAccount credentials, and so
// where client-go's in-cluster configuration reads them.
const saTokenDir = "var/run/secrets/kubernetes.io/serviceaccount"

// imageController is gray-controller running from an exported image
// filesystem, as a container runtime would run it.
type imageController struct {
	cmd    *exec.Cmd
	exited chan struct{}
	log    string
}

// runFromImage exports img's flattened filesystem and runs its entrypoint
// the way a kubelet runs the container, short of namespaces and cgroups:
// chrooted into a read-only bind mount of that filesystem, as uid/gid 65532 with no supplementary groups, with
// the image config's environment, and with a token of ServiceAccount ns/sa
// mounted read-only where pods have it, so the controller uses client-go's
// in-cluster configuration and exactly that ServiceAccount's RBAC (no
// impersonation). It waits for /readyz and stops the process at the end of
// the test (by pid).
func runFromImage(t *testing.T, c *cluster.Cluster, img v1.Image, ns, sa string, args ...string) *imageController {
	t.Helper()
	ctx := context.Background()
	configFile, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cfg := configFile.Config
	if len(cfg.Entrypoint) != 1 {
		t.Fatalf("image entrypoint %q, want one path", cfg.Entrypoint)
	}
	rootfs := filepath.Join(t.TempDir(), "rootfs")
	if err := image.Export(img, rootfs); err != nil {
		t.Fatalf("export the image filesystem: %v", err)
	}
	tok, err := c.Client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token for serviceaccount %s/%s: %v", ns, sa, err)
	}
	secrets := t.TempDir()
	for file, data := range map[string][]byte{
		"token": []byte(tok.Status.Token), "ca.crt": c.Config.CAData, "namespace": []byte(ns),
	} {
		if err := os.WriteFile(filepath.Join(secrets, file), data, 0o444); err != nil {
			t.Fatal(err)
		}
	}
	// A runtime creates the mount point in the container's filesystem; the
	// rest of the image stays as it was unpacked.
	mountPoint := filepath.Join(rootfs, saTokenDir)
	for d := mountPoint; d != rootfs; d = filepath.Dir(d) {
		if fi, err := os.Lstat(d); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			t.Fatalf("%s is a symlink in the image; refusing to follow it out of the chroot", d)
		}
	}
	if err := os.MkdirAll(mountPoint, 0o755); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(t.TempDir(), "root")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	bindReadOnly(t, rootfs, root)
	bindReadOnly(t, secrets, filepath.Join(root, saTokenDir))
	// Even root cannot write there now; the controller, as 65532, less so.
	if err := os.WriteFile(filepath.Join(root, "tmp", "probe"), nil, 0o600); !errors.Is(err, syscall.EROFS) {
		t.Fatalf("writing into the container root: %v, want EROFS", err)
	}

	ports, err := cluster.FreePorts(2)
	if err != nil {
		t.Fatal(err)
	}
	healthPort, metricsPort := ports[0], ports[1]
	apiHost, apiPort, err := hostPort(c.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	all := append([]string{
		"--leader-elect=true",
		"--metrics-bind-address=127.0.0.1:" + strconv.Itoa(metricsPort),
		"--health-probe-bind-address=127.0.0.1:" + strconv.Itoa(healthPort),
		"-v=2",
	}, args...)
	logPath := filepath.Join(c.Dir, "gray-controller-image.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	cmd := &exec.Cmd{
		// Resolved inside the chroot: the path is the image's entrypoint.
		Path: cfg.Entrypoint[0],
		Args: append([]string{cfg.Entrypoint[0]}, all...),
		Env: append(append([]string{}, cfg.Env...),
			"HOME=/home/nonroot", // runtimes set it from /etc/passwd
			"KUBERNETES_SERVICE_HOST="+apiHost, "KUBERNETES_SERVICE_PORT="+apiPort,
			"POD_NAMESPACE="+ns),
		Dir:    "/",
		Stdout: logFile,
		Stderr: logFile,
		SysProcAttr: &syscall.SysProcAttr{
			Chroot:     root,
			Credential: &syscall.Credential{Uid: image.NonRootUID, Gid: image.NonRootUID, Groups: []uint32{}},
			Setsid:     true,
		},
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s in %s: %v", cfg.Entrypoint[0], root, err)
	}
	ic := &imageController{cmd: cmd, exited: make(chan struct{}), log: logPath}
	go func() {
		_ = cmd.Wait()
		close(ic.exited)
	}()
	t.Cleanup(func() {
		if !ic.done() {
			_ = syscall.Kill(cmd.Process.Pid, syscall.SIGKILL)
			<-ic.exited
		}
		if t.Failed() {
			t.Logf("gray-controller (from the image) log:\n%s", tail(logPath, 40))
		}
	})
	ic.checkIdentity(t, root)
	readyz := "http://127.0.0.1:" + strconv.Itoa(healthPort) + "/readyz"
	err = cluster.Poll(context.Background(), time.Minute, 100*time.Millisecond, func(ctx context.Context) (bool, string, error) {
		if ic.done() {
			return false, "", errors.New("exited before ready")
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, readyz, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, err.Error(), nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, readyz + ": " + resp.Status, nil
	})
	if err != nil {
		t.Fatalf("gray-controller from the image: %v\n%s", err, tail(logPath, 40))
	}
	t.Logf("gray-controller from the image ready: pid %d, chroot %s (read-only), uid %d", cmd.Process.Pid, root, image.NonRootUID)
	return ic
}

func (ic *imageController) done() bool {
	select {
	case <-ic.exited:
		return true
	default:
		return false
	}
}

// checkIdentity confirms through /proc that the process runs as 65532 with
// root as its root directory.
func (ic *imageController) checkIdentity(t *testing.T, root string) {
	t.Helper()
	pid := ic.cmd.Process.Pid
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^Uid:\s+65532\s+65532\s+65532\s+65532$`).Match(status) {
		t.Errorf("process %d does not run as uid 65532:\n%s", pid, status)
	}
	if got, err := os.Readlink(fmt.Sprintf("/proc/%d/root", pid)); err != nil || got != root {
		t.Errorf("process %d has root %q (%v), want %s", pid, got, err, root)
	}
}

// terminate sends SIGTERM, as a kubelet does, and wants exit code 0 within
// the manifests' terminationGracePeriodSeconds (30s).
func (ic *imageController) terminate(t *testing.T) {
	t.Helper()
	if err := syscall.Kill(ic.cmd.Process.Pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ic.exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("gray-controller from the image still running 30s after SIGTERM:\n%s", tail(ic.log, 40))
	}
	if code := ic.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("gray-controller from the image exited %d on SIGTERM, want 0:\n%s", code, tail(ic.log, 40))
	}
}

// bindReadOnly bind-mounts src on target read-only (a bind mount is made
// writable first and needs a remount to become read-only) and unmounts it
// when the test ends, before its temporary folders are removed.
func bindReadOnly(t *testing.T, src, target string) {
	t.Helper()
	if err := syscall.Mount(src, target, "", syscall.MS_BIND, ""); err != nil {
		t.Fatalf("bind mount %s on %s (the test needs root with CAP_SYS_ADMIN): %v", src, target, err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(target, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", target, err)
		}
	})
	if err := syscall.Mount("", target, "", syscall.MS_REMOUNT|syscall.MS_BIND|syscall.MS_RDONLY|syscall.MS_NOSUID|syscall.MS_NODEV, ""); err != nil {
		t.Fatalf("remount %s read-only: %v", target, err)
	}
}

func hostPort(url string) (string, string, error) {
	hp := strings.TrimPrefix(url, "https://")
	i := strings.LastIndexByte(hp, ':')
	if i < 0 {
		return "", "", fmt.Errorf("no port in %q", url)
	}
	return hp[:i], hp[i+1:], nil
}

func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
